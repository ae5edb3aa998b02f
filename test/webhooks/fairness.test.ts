/**
 * Fair webhooks: one webhook's backlog never delays another's deliveries. Real receivers
 * (a local server that accepts and never answers, one that answers 204) and the real
 * worker (startWorker, four delivery slots): while one webhook has 1,000 deliveries due for
 * a retry, a test event to another arrives within 5 s, and the failing one never has more
 * than one attempt in flight. Also: a host whose name never resolves is bounded by the
 * attempt's time limit.
 */
import { createServer, type Server } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import type { Runner } from 'graphile-worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postWebhook } from '../../jobs/webhooks/post.ts';
import { startWorker } from '../../jobs/worker.ts';
import { useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { workerDeps } from '../support/iso_builds.ts';

const ctx = useTestApp({ webhooks: { allowHttp: true, allowPrivate: true } });

/** Accepts connections and never answers; counts the open ones. */
let hanging: TcpServer;
const open = new Set<Socket>();
let mostOpen = 0;
let connections = 0;
/** Answers 204 and notes when each body came. */
let healthy: Server;
const arrived: Array<{ at: number; body: { type: string } }> = [];
let worker: Runner | undefined;

const portOf = (server: { address(): unknown }) => (server.address() as AddressInfo).port;

beforeAll(async () => {
  hanging = createTcpServer((socket) => {
    connections++;
    open.add(socket);
    mostOpen = Math.max(mostOpen, open.size);
    socket.on('error', () => {});
    socket.on('close', () => open.delete(socket));
  });
  healthy = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      arrived.push({ at: Date.now(), body: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
      res.writeHead(204).end();
    });
  });
  await Promise.all([
    new Promise<void>((ready) => hanging.listen(0, '127.0.0.1', ready)),
    new Promise<void>((ready) => healthy.listen(0, '127.0.0.1', ready)),
  ]);
});

afterAll(async () => {
  for (const socket of open) socket.destroy();
  await new Promise((done) => hanging.close(done));
  await worker?.stop();
  await new Promise((done) => healthy.close(done));
  await ctx.sql`delete from graphile_worker._private_jobs`;
});

async function subscribe(organizationId: string, url: string) {
  const res = await ctx.request('POST', `/api/v1/organizations/${organizationId}/webhooks`, {
    body: { url, events: ['device.stale'] },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id as string;
}

async function pendingOf(organizationId: string): Promise<Record<string, number>> {
  const res = await ctx.request('GET', `/api/v1/organizations/${organizationId}/webhooks`);
  expect(res.status).toBe(200);
  return Object.fromEntries(
    res.body.items.map((w: { id: string; pending_deliveries: number }) => [w.id, w.pending_deliveries]),
  );
}

async function until(what: string, ok: () => boolean | Promise<boolean>, ms: number) {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('one webhook with 1,000 deliveries due for a retry', () => {
  it("holds one delivery slot at most; another webhook's test event arrives within 5 s", async () => {
    const org = (await createOrganization(ctx)).id as string;
    const dead = await subscribe(org, `http://127.0.0.1:${portOf(hanging)}/hook`);
    const fine = await subscribe(org, `http://127.0.0.1:${portOf(healthy)}/hook`);
    // 1,000 events for the dead receiver, each tried once and due again now.
    await ctx.sql`
      select emit_webhook_event(${org}, 'webhook.test', jsonb_build_object('n', n), ${dead})
        from generate_series(1, 1000) n`;
    await ctx.sql`
      update webhook_deliveries set attempts = 1, last_error = 'no answer within 10 s'
       where webhook_id = ${dead}`;
    expect(await pendingOf(org)).toEqual({ [dead]: 1000, [fine]: 0 });

    worker = await startWorker(ctx.db.url, workerDeps(ctx, { webhooks: { allowPrivate: true, timeoutMs: 3000 } }), 1, {
      pollIntervalMs: 200,
      webhookConcurrency: 4,
      gracefulShutdownAbortTimeoutMs: 500,
    });
    // The worker is busy with the backlog before the test event is sent.
    await until('the dead receiver is called', () => connections > 0, 10_000);

    const sent = Date.now();
    const res = await ctx.request('POST', `/api/v1/webhooks/${fine}/test`);
    expect(res.status).toBe(202);
    await until('the test event arrives', () => arrived.some((a) => a.body.type === 'webhook.test'), 5_000);
    const latency = arrived.find((a) => a.body.type === 'webhook.test')!.at - sent;
    console.log(`test event to the healthy webhook arrived after ${latency} ms, 1,000 deliveries of another due`);
    expect(latency).toBeLessThan(5_000);

    // Recorded as delivered; the dead one's backlog is all still pending, one attempt at a time.
    await until('the delivery is recorded', async () => (await pendingOf(org))[fine] === 0, 5_000);
    const [delivered] = await ctx.sql<{ status: string; attempts: number }[]>`
      select status, attempts from webhook_deliveries where webhook_id = ${fine}`;
    expect(delivered).toEqual({ status: 'delivered', attempts: 1 });
    expect((await pendingOf(org))[dead]).toBe(1000);
    expect(mostOpen).toBe(1);
    // Its jobs wait in the webhook's own queue. The healthy webhook's job row goes when its
    // task returns, just after the delivery was recorded: wait for it, or it is counted too.
    await until(
      'the healthy webhook has no job left',
      async () => {
        const [left] = await ctx.sql<{ n: number }[]>`
        select count(*)::int as n from graphile_worker.jobs where queue_name = ${`deliver_webhook:${fine}`}`;
        return left!.n === 0;
      },
      5_000,
    );
    const queues = await ctx.sql<{ queue_name: string | null; n: number }[]>`
      select queue_name, count(*)::int as n from graphile_worker.jobs
       where task_identifier = 'deliver_webhook' group by queue_name`;
    expect(queues).toEqual([{ queue_name: `deliver_webhook:${dead}`, n: 1000 }]);
  }, 30_000);
});

describe('a host whose name does not resolve', () => {
  it("fails the attempt within the attempt's time limit", async () => {
    const started = Date.now();
    const outcome = await postWebhook(
      'https://never.example.com/hook',
      '{}',
      {},
      { allowPrivate: false, timeoutMs: 300, resolve: () => new Promise(() => {}) },
    );
    expect(outcome).toEqual({ statusCode: null, error: 'never.example.com did not resolve within 0.3 s' });
    expect(Date.now() - started).toBeLessThan(2_000);
  });
});
