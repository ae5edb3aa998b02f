/**
 * What Node's HTTP parser refuses before the app sees it, against the real service
 * process: a request line or headers over 16 KiB get 431 with the error shape
 * (`headers_too_large`), bytes that are not HTTP 400 `invalid_request`; never an empty body.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomToken } from '../../api/http/crypto.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { type ServiceProcess, startService } from '../support/service_process.ts';

let db: TestDatabase;
let service: ServiceProcess;
let dataDir: string;

beforeAll(async () => {
  db = await createTestDatabase();
  dataDir = await mkdtemp(join(tmpdir(), 'fleet-client-error-'));
  service = await startService({ DATABASE_URL: db.url, ADMIN_TOKEN: randomToken(), DATA_DIR: dataDir });
}, 120_000);

afterAll(async () => {
  expect(await service?.stop('SIGTERM')).toBe(0);
  await db?.drop();
  await rm(dataDir, { recursive: true, force: true });
});

/** Sends raw bytes and reads the whole answer until the server closes the connection. */
function raw(request: string): Promise<{ status: number; headers: string; body: string }> {
  const { hostname, port } = new URL(service.base);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) }, () => socket.write(request));
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const [head = '', body = ''] = text.split('\r\n\r\n');
      resolve({ status: Number(head.split(' ')[1]), headers: head.toLowerCase(), body });
    });
  });
}

describe('requests the HTTP parser refuses', () => {
  it('a header over 16 KiB: 431 with the error shape', async () => {
    const res = await raw(`GET /api/v1/health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    expect(res.status).toBe(431);
    expect(res.headers).toContain('content-type: application/json');
    expect(JSON.parse(res.body)).toEqual({ error: 'headers_too_large', message: expect.stringContaining('16 KiB') });
  });

  it('a request line over 16 KiB: 431 with the error shape', async () => {
    const res = await raw(`GET /api/v1/organizations?x=${'b'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`);
    expect(res.status).toBe(431);
    expect(JSON.parse(res.body).error).toBe('headers_too_large');
  });

  it('bytes that are not HTTP: 400 invalid_request', async () => {
    const res = await raw('NOT HTTP AT ALL\r\n\r\n');
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body).error).toBe('invalid_request');
  });

  it('a request just under the limit is answered by the app', async () => {
    const res = await raw(
      `GET /api/v1/health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Big: ${'a'.repeat(15_000)}\r\n\r\n`,
    );
    expect(res.status).toBe(200);
  });
});
