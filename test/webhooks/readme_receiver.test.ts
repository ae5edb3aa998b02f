/**
 * The receiver of api/webhooks/README.md ("A receiver"), run as written: it accepts what the
 * service signs and refuses a wrong signature, another secret and a stale timestamp.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fleetSignature } from '../../jobs/webhooks/signature.ts';

const SECRET = 'whsec_readme-test-secret-0123456789abcdefghijkl';
let receiver: ChildProcess;
let url: string;

function readmeReceiver(): string {
  const readme = readFileSync(new URL('../../api/webhooks/README.md', import.meta.url), 'utf8');
  const section = readme.slice(readme.indexOf('## A receiver'));
  const code = section.match(/```ts\n([\s\S]*?)```/)?.[1];
  if (!code) throw new Error('api/webhooks/README.md has no TypeScript receiver under "## A receiver"');
  return code;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as { port: number };
  await new Promise((done) => server.close(done));
  return port;
}

beforeAll(async () => {
  const file = join(mkdtempSync(join(tmpdir(), 'fleet-receiver-')), 'receiver.ts');
  writeFileSync(file, readmeReceiver());
  const port = await freePort();
  url = `http://127.0.0.1:${port}/`;
  receiver = spawn(process.execPath, ['--import', 'tsx', file], {
    cwd: process.cwd(),
    env: { ...process.env, PORT: String(port), FLEET_WEBHOOK_SECRET: SECRET },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  for (let i = 0; i < 100; i++) {
    const up = await fetch(url, { method: 'POST' }).then(
      () => true,
      () => false,
    );
    if (up) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the README receiver did not start');
}, 20_000);

afterAll(() => {
  receiver?.kill();
});

function post(body: string, signature: string) {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'fleet-signature': signature },
    body,
  });
}

describe("the README's receiver", () => {
  const body = JSON.stringify({
    id: crypto.randomUUID(),
    type: 'device.activated',
    organization_id: crypto.randomUUID(),
    created_at: new Date().toISOString(),
    data: { device_id: crypto.randomUUID(), serial: 'SN-1', hostname: 'pc-01' },
  });
  const now = () => Math.floor(Date.now() / 1000);

  it("accepts the service's signature", async () => {
    expect((await post(body, fleetSignature(SECRET, now(), body))).status).toBe(204);
  });

  it('refuses another secret, a changed body, a stale time and no signature', async () => {
    expect((await post(body, fleetSignature(`${SECRET}x`, now(), body))).status).toBe(401);
    expect((await post(`${body} `, fleetSignature(SECRET, now(), body))).status).toBe(401);
    expect((await post(body, fleetSignature(SECRET, now() - 3600, body))).status).toBe(401);
    expect((await post(body, '')).status).toBe(401);
  });
});
