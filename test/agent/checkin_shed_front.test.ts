/**
 * A refused check-in is answered by the HTTP front before the app runs (CONTRACT §14): the
 * same gate, the contract's 503 with a jittered Retry-After, counted in the metrics, logged
 * once a second with its count, and the connection stays usable although the body was
 * never read. Real service process; a check-in held in flight by a table lock fills the
 * in-flight bound of 1, so every further check-in is refused, deterministically.
 */
import { Buffer } from 'node:buffer';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrollAgent, waitForLockWaiter } from '../support/agent.ts';
import { useTestApp } from '../support/app.ts';
import { startService, type ServiceProcess } from '../support/service_process.ts';

const ctx = useTestApp();
const ADMIN_TOKEN = 'f'.repeat(40);

let service: ServiceProcess;
let dataDir: string;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'fleet-shed-front-'));
  service = await startService(
    {
      DATABASE_URL: ctx.db.url,
      ADMIN_TOKEN,
      ISO_ENCRYPTION_KEY: Buffer.alloc(32, 1).toString('base64'),
      DATA_DIR: dataDir,
      CHECKIN_MAX_IN_FLIGHT: '1',
    },
    ['--api-only'],
  );
}, 120_000);

afterAll(async () => {
  await service?.stop('SIGKILL');
  await rm(dataDir, { recursive: true, force: true });
});

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  reusedSocket: boolean;
}

/** One request on the given keep-alive agent (Node's client, to see whether a socket was reused). */
function send(agent: http.Agent, method: string, path: string, headers: Record<string, string>, body?: string) {
  return new Promise<Answer>((resolve, reject) => {
    const req = http.request(`${service.base}${path}`, { method, headers, agent }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () =>
        resolve({ status: res.statusCode!, headers: res.headers, body: text, reusedSocket: req.reusedSocket }),
      );
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function metric(line: string): Promise<number> {
  const res = await fetch(`${service.base}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  const text = await res.text();
  const found = text.split('\n').find((l) => l.startsWith(`${line} `));
  return found ? Number(found.slice(line.length + 1)) : 0;
}

describe('check-ins refused at the front', () => {
  it('answer 503 before the app while the bound is full, keep the connection, and are counted and logged once a second', async () => {
    const agent = await enrollAgent(ctx);
    const body = JSON.stringify({ agent_version: '1.4.2' });
    const headers = { authorization: `Bearer ${agent.secret}`, 'content-type': 'application/json' };
    const series = [
      'fleet_agent_checkins_total{result="shed"}',
      'fleet_http_requests_total{method="POST",route="/api/v1/agent/checkin",status="503"}',
      'fleet_http_request_duration_seconds_count{method="POST",route="/api/v1/agent/checkin"}',
    ];
    const before = await Promise.all(series.map(metric));

    // Hold one check-in in flight: its read waits for the lock.
    const lock = await ctx.sql.reserve();
    await lock`begin`;
    await lock`lock table devices in access exclusive mode`;
    const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const other = new http.Agent({ keepAlive: true, maxSockets: 1 });
    let held: Promise<Answer>;
    try {
      held = send(other, 'POST', '/api/v1/agent/checkin', headers, body);
      // Admitted and waiting for the lock: the bound of 1 is full, every other check-in is refused.
      await waitForLockWaiter(ctx.sql, 'agent_secret_hash');
      const refusals: Answer[] = [];
      for (let i = 0; i < 5; i++) refusals.push(await send(keepAlive, 'POST', '/api/v1/agent/checkin', headers, body));
      expect(refusals.map((r) => r.status)).toEqual([503, 503, 503, 503, 503]);
      for (const refused of refusals) {
        const retryAfter = Number(refused.headers['retry-after']);
        expect(retryAfter).toBeGreaterThanOrEqual(30);
        expect(retryAfter).toBeLessThanOrEqual(60);
        expect(refused.headers['content-type']).toBe('application/json');
        expect(Number(refused.headers['content-length'])).toBe(Buffer.byteLength(refused.body));
        expect(JSON.parse(refused.body)).toEqual({
          error: 'service_unavailable',
          message: `the service is busy; retry in ${retryAfter} seconds`,
        });
      }
      // The refused requests' bodies were never read, yet the connection carries the next request.
      const live = await send(keepAlive, 'GET', '/api/v1/health/live', {});
      expect(live.status).toBe(200);
      expect(live.reusedSocket).toBe(true);
    } finally {
      await lock`rollback`;
      lock.release();
    }
    expect((await held).status).toBe(200);
    keepAlive.destroy();
    other.destroy();

    // Counted in each series a scrape shows, as a refusal inside the app would be.
    const after = await Promise.all(series.map(metric));
    for (const [i, name] of series.entries()) expect(after[i]! - before[i]!, name).toBeGreaterThanOrEqual(5);
    // One line per second with the count, not one per refusal.
    const deadline = Date.now() + 5_000;
    const refusedLines = () =>
      service
        .output()
        .split('\n')
        .filter((l) => l.includes('"check-ins refused"'));
    while (refusedLines().length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    const lines = refusedLines().map(
      (l) => JSON.parse(l) as { count: number; in_flight: number; event_loop_delay: number },
    );
    const counted = lines.reduce((sum, l) => sum + l.count, 0);
    expect(counted).toBeGreaterThanOrEqual(5);
    // By the bound that refused them: the in-flight one, full with the held check-in.
    expect(lines.reduce((sum, l) => sum + l.in_flight, 0)).toBe(counted);
    expect(lines.reduce((sum, l) => sum + l.event_loop_delay, 0)).toBe(0);
    expect(refusedLines().length).toBeLessThan(counted);
    expect(service.output()).not.toMatch(/"msg":"request".*"status":503/);
  }, 60_000);
});
