/**
 * Request bodies over a real Node HTTP server (@hono/node-server), where the adapter reads
 * the check-in's body from Node's IncomingMessage and the body limit trusts Content-Length
 * (api/http/body.ts). In-process requests take the web path; these take the Node one, with
 * and without a Content-Length.
 */
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_BODY_BYTES } from '../../api/app.ts';
import { enrollAgent, lastCheckinOf } from '../support/agent.ts';
import { ADMIN_TOKEN, useTestApp } from '../support/app.ts';
import { countRows } from '../support/db.ts';

const ctx = useTestApp();
let server: ReturnType<typeof serve>;
let port = 0;

beforeAll(async () => {
  server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const s = serve({ fetch: ctx.app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
  });
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  await new Promise((done) => server?.close(done));
});

/**
 * A raw HTTP/1.1 POST: `chunked` sends the body without a Content-Length; `contentType`
 * null sends none (default application/json).
 */
function post(
  path: string,
  token: string,
  body: string,
  options: { chunked?: boolean; contentType?: string | null } = {},
) {
  return new Promise<{ status: number; body: any }>((resolve, reject) => {
    const headers: Record<string, string> = { authorization: `Bearer ${token}` };
    const contentType = options.contentType === undefined ? 'application/json' : options.contentType;
    if (contentType !== null) headers['content-type'] = contentType;
    if (!options.chunked) headers['content-length'] = String(Buffer.byteLength(body));
    const req = httpRequest({ host: '127.0.0.1', port, method: 'POST', path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : null });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    if (options.chunked) {
      // Two writes, so the body really arrives in chunks.
      req.write(body.slice(0, Math.floor(body.length / 2)));
      req.end(body.slice(Math.floor(body.length / 2)));
    } else {
      req.end(body);
    }
  });
}

async function storedHardware(deviceId: string): Promise<unknown> {
  const [row] = await ctx.sql<
    { hardware: unknown }[]
  >`select hardware from device_hardware where device_id = ${deviceId}`;
  return row?.hardware;
}

describe('the check-in body over Node', () => {
  it.each([
    ['with a Content-Length', false],
    ['chunked, without a Content-Length', true],
  ])('reads a JSON body %s and stores its hardware', async (_case, chunked) => {
    const agent = await enrollAgent(ctx);
    const hardware = { cpu: 'Intel Core i5-8365U', memory_mb: 16384, note: 'Grüße ✓' };
    const res = await post(
      '/api/v1/agent/checkin',
      agent.secret,
      JSON.stringify({ agent_version: '1.4.2', hardware }),
      { chunked },
    );
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.device_id).toBe(agent.device_id);
    expect(await storedHardware(agent.device_id)).toEqual(hardware);
  });

  it.each([
    ['with a Content-Length', false],
    ['chunked, without a Content-Length', true],
  ])('takes an empty body %s as {}', async (_case, chunked) => {
    const agent = await enrollAgent(ctx);
    const res = await post('/api/v1/agent/checkin', agent.secret, '', { chunked });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.device_id).toBe(agent.device_id);
  });

  it.each([
    ['with a Content-Length', false],
    ['chunked, without a Content-Length', true],
  ])('answers 400 invalid_request to malformed JSON %s and writes nothing', async (_case, chunked) => {
    const agent = await enrollAgent(ctx);
    const before = await lastCheckinOf(ctx, agent.device_id);
    const res = await post('/api/v1/agent/checkin', agent.secret, '{"hardware": {', { chunked });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request');
    expect(await lastCheckinOf(ctx, agent.device_id)).toEqual(before);
  });
});

describe('the check-in body without a JSON Content-Type over Node', () => {
  it.each([
    ['no Content-Type', null, 'a request body must come with Content-Type: application/json'],
    ['an empty Content-Type', '', 'the request body must be application/json'],
    ['text/plain', 'text/plain', 'the request body must be application/json'],
  ])('answers a JSON body with %s with 400 invalid_request and writes nothing', async (_case, contentType, message) => {
    const agent = await enrollAgent(ctx);
    const res = await post('/api/v1/agent/checkin', agent.secret, '{"agent_version":"1"}', { contentType });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'invalid_request', message });
    expect(await lastCheckinOf(ctx, agent.device_id)).toBeNull();
  });

  it.each([
    ['no body', ''],
    ['whitespace', ' \n'],
  ])('takes %s without a Content-Type as {}', async (_case, body) => {
    const agent = await enrollAgent(ctx);
    const res = await post('/api/v1/agent/checkin', agent.secret, body, { contentType: null });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.device_id).toBe(agent.device_id);
  });
});

describe('the body limit over Node', () => {
  const oversized = JSON.stringify({ name: 'x', notizen: 'n'.repeat(MAX_BODY_BYTES) });

  it.each([
    ['with a Content-Length', false],
    ['chunked, without a Content-Length', true],
  ])('answers 413 payload_too_large to a body over 1 MiB %s and creates nothing', async (_case, chunked) => {
    const before = await countRows(ctx.sql, 'organizations');
    const res = await post('/api/v1/organizations', ADMIN_TOKEN, oversized, { chunked });
    expect(res.status).toBe(413);
    expect(res.body.error).toBe('payload_too_large');
    expect(await countRows(ctx.sql, 'organizations')).toBe(before);
  });

  it('answers 413 to an oversized check-in body and stores no hardware', async () => {
    const agent = await enrollAgent(ctx);
    const body = JSON.stringify({ hardware: { blob: 'h'.repeat(MAX_BODY_BYTES) } });
    const res = await post('/api/v1/agent/checkin', agent.secret, body);
    expect(res.status).toBe(413);
    expect(res.body.error).toBe('payload_too_large');
    expect(await storedHardware(agent.device_id)).toBeUndefined();
  });

  it('accepts an admin body just under the limit with a Content-Length', async () => {
    const res = await post('/api/v1/organizations', ADMIN_TOKEN, JSON.stringify({ name: 'Unter der Grenze' }));
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  });
});
