/**
 * Webhook events and their delivery (api/webhooks/README.md): emitted in the transaction of the
 * change, delivered by the worker's real task (Graphile Worker's runOnce) to a receiver
 * played by nock, or by a real local HTTP server end to end; signed, retried, refused
 * where the address is private, and never carrying the secret anywhere but the signature.
 */
import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import nock from 'nock';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { MAX_ATTEMPTS, RETRY_PAUSES_SECONDS, retryPauseSeconds } from '../../jobs/tasks/deliver_webhook.ts';
import { sweepWebhookDeliveries } from '../../jobs/tasks/sweep_webhook_deliveries.ts';
import { staleAfterSeconds, sweepStaleDevices } from '../../jobs/tasks/sweep_stale_devices.ts';
import { emitRolloutWebhook } from '../../api/rollouts/notify.ts';
import { matchOutdated } from '../../api/vulnerabilities/matching.ts';
import { WEBHOOK_EVENT_TYPES } from '../../api/webhooks/schemas.ts';
import type { ResolvedAddress } from '../../jobs/webhooks/post.ts';
import type { WorkerDeps } from '../../jobs/worker_deps.ts';
import { activateDevice } from '../support/activation.ts';
import { checkin, enrollAgent, report } from '../support/agent.ts';
import { useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { insertDevice } from '../support/devices.ts';
import { capturingLogger, runJobs, workerDeps } from '../support/iso_builds.ts';
import { BOOKWORM, insertInventory, insertPackageSet } from '../support/vulnerabilities.ts';

// The app lets a loopback http URL be subscribed (for the real server below); the worker's
// own policy decides at delivery, and is strict unless a test says otherwise.
const ctx = useTestApp({ webhooks: { allowHttp: true, allowPrivate: true } });

const PUBLIC_ADDRESS: ResolvedAddress = { address: '93.184.215.14', family: 4 };
const dns: Record<string, ResolvedAddress[]> = {
  'hooks.example.com': [PUBLIC_ADDRESS],
  'rebind.example.com': [PUBLIC_ADDRESS, { address: '10.0.0.5', family: 4 }],
  'mapped.example.com': [{ address: '::ffff:169.254.169.254', family: 6 }],
  '6to4.example.com': [{ address: '2002:7f00:1::', family: 6 }],
  'translated.example.com': [{ address: '::ffff:0:7f00:1', family: 6 }],
  'teredo.example.com': [{ address: '2001:0:a00:1::1', family: 6 }],
  'nat64.example.com': [{ address: '64:ff9b::a00:1', family: 6 }],
  'compatible.example.com': [{ address: '::127.0.0.1', family: 6 }],
};
const resolve = async (host: string) => {
  const found = dns[host];
  if (!found) throw new Error(`getaddrinfo ENOTFOUND ${host}`);
  return found;
};

let log: ReturnType<typeof capturingLogger>;
function deps(allowPrivate = false): WorkerDeps {
  return workerDeps(ctx, { webhooks: { allowPrivate, timeoutMs: 300, resolve } }, log);
}

interface Received {
  body: string;
  headers: IncomingHttpHeaders;
}

/** A nock receiver at https://hooks.example.com/fleet answering `status` to every POST. */
function receiver(status = 200, path = '/fleet', host = 'https://hooks.example.com') {
  const received: Received[] = [];
  const scope = nock(host)
    .post(path)
    .times(1000)
    .reply(function (_uri, body) {
      received.push({ body: typeof body === 'string' ? body : JSON.stringify(body), headers: this.req.headers });
      return [status, ''];
    });
  return { received, scope };
}

async function subscribe(organizationId: string, url: string, events: string[]) {
  const res = await ctx.request('POST', `/api/v1/organizations/${organizationId}/webhooks`, { body: { url, events } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as { id: string; secret: string };
}

async function deliveries(webhookId: string) {
  const res = await ctx.request('GET', `/api/v1/webhooks/${webhookId}/deliveries`);
  expect(res.status).toBe(200);
  return res.body.items as Array<{
    id: string;
    event_id: string;
    event: string;
    status: string;
    attempts: number;
    last_status_code: number | null;
    last_error: string | null;
    next_attempt_at: string | null;
    delivered_at: string | null;
  }>;
}

/** Checks `Fleet-Signature` as a receiver would: with the secret it verifies, with another it fails. */
function verifySignature(header: string, rawBody: string, secret: string) {
  const match = header.match(/^t=(\d+),v1=([0-9a-f]{64})$/);
  expect(match, header).not.toBeNull();
  const [, t, v1] = match!;
  expect(Math.abs(Number(t) - Date.now() / 1000)).toBeLessThan(60);
  expect(createHmac('sha256', secret).update(`${t}.${rawBody}`).digest('hex')).toBe(v1);
  expect(createHmac('sha256', `${secret}x`).update(`${t}.${rawBody}`).digest('hex')).not.toBe(v1);
  expect(
    createHmac('sha256', secret)
      .update(`${Number(t) + 1}.${rawBody}`)
      .digest('hex'),
  ).not.toBe(v1);
}

/** Makes the delivery's next attempt due now. */
async function dueNow(deliveryId: string) {
  await ctx.sql`update graphile_worker._private_jobs set run_at = now() where key = ${`deliver_webhook:${deliveryId}`}`;
}

/** Every event type of §16: each must arrive in the first test. */
const ALL_EVENTS: string[] = [...WEBHOOK_EVENT_TYPES];

// nock intercepts every HTTP request of the process while it is active, and a worker runs
// further files after this one (isolate: false): on here only, restored after.
beforeAll(() => {
  if (!nock.isActive()) nock.activate();
  nock.disableNetConnect();
  nock.enableNetConnect('127.0.0.1');
});
afterEach(async () => {
  nock.cleanAll();
  // Each test starts with an empty queue: nothing left over is delivered to the next.
  await ctx.sql`delete from graphile_worker._private_jobs`;
});
afterAll(() => {
  nock.enableNetConnect();
  nock.restore();
});

describe('events', () => {
  it('each event type arrives once, with its data, signed with the secret', async () => {
    log = capturingLogger();
    const org = (await createOrganization(ctx)).id as string;
    // A rollout created before the subscription: only its completion is sent.
    const unit = (await ctx.sql<{ id: string }[]>`select id from org_units where organization_id = ${org}`)[0]!.id;
    const rolloutOf = async (merkmal: string) => {
      const res = await ctx.request('POST', `/api/v1/organizations/${org}/rollouts`, {
        body: { scope: 'org_unit', scope_id: unit, merkmal, action: 'select' },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      return res.body.id as string;
    };
    const done = await rolloutOf('onlyoffice');
    const hook = await subscribe(org, 'https://hooks.example.com/fleet', ALL_EVENTS);
    const { received } = receiver();

    const agent = await enrollAgent(ctx, { organizationId: org });
    const reported = await report(ctx, agent.secret, [
      { merkmal: 'firefox', event: 'applied' },
      { merkmal: 'libreoffice', event: 'apply_failed', detail: { rc: 2 } },
      { merkmal: 'onlyoffice', event: 'removed' },
      { merkmal: 'qgis', event: 'remove_failed' },
    ]);
    expect(reported.status, JSON.stringify(reported.body)).toBeLessThan(300);
    // A rollout opened (ring 0 at its creation), paused and aborted; the other completed, which
    // the judge does: its webhook queued here as the judge queues it.
    const stopped = await rolloutOf('gastsitzung');
    for (const verb of ['pause', 'abort']) {
      const res = await ctx.request('POST', `/api/v1/rollouts/${stopped}/${verb}`);
      expect(res.status, `${verb} ${JSON.stringify(res.body)}`).toBe(200);
    }
    await ctx.sql`update rollouts set status = 'completed', completed_at = now() where id = ${done}`;
    await emitRolloutWebhook(ctx.sql, 'rollout.completed', done);
    // A disk key escrowed by the agent and revealed by an admin, with a reason.
    const escrowed = await ctx.request('POST', '/api/v1/agent/disk-keys', {
      token: agent.secret,
      body: {
        device_path: '/dev/sda3',
        luks_uuid: crypto.randomUUID(),
        keyslot: 1,
        recovery_key: 'cbdefghi-jklnrtuv-cbdefghi-jklnrtuv-cbdefghi-jklnrtuv-cbdefghi-jklnrtuv',
      },
    });
    expect(escrowed.status).toBe(201);
    const revealed = await ctx.request('POST', `/api/v1/disk-keys/${escrowed.body.id}/reveal`, {
      body: { reason: 'Ticket 7' },
    });
    expect(revealed.status).toBe(200);
    // A script the agent ran and reported failed: action.finished, without the script or its output.
    const queued = await ctx.request('POST', `/api/v1/devices/${agent.device_id}/actions`, {
      body: { type: 'script', parameters: { interpreter: 'sh', script: 'echo webhook-script-text' } },
    });
    expect(queued.status).toBe(201);
    for (const [step, body] of [
      ['start', undefined],
      ['result', { exit_code: 2, output: 'webhook-script-output', duration_ms: 5 }],
    ] as const) {
      const res = await ctx.request('POST', `/api/v1/agent/actions/${queued.body.id}/${step}`, {
        token: agent.secret,
        body,
      });
      expect(res.status, `${step} ${JSON.stringify(res.body)}`).toBe(204);
    }
    // Silent for three poll intervals since its bootstrap: the stale sweep announces it.
    await ctx.sql`update devices set agent_secret_issued_at = now() - interval '1 hour' where id = ${agent.device_id}`;
    await ctx.sql`update device_heartbeats set at = null where device_id = ${agent.device_id}`;
    expect(await sweepStaleDevices(ctx.sql, staleAfterSeconds(ctx.config))).toContain(agent.device_id);
    for (const action of ['deprovision', 'reprovision', 'archive']) {
      const res = await ctx.request('POST', `/api/v1/devices/${agent.device_id}/${action}`);
      expect(res.status, `${action} ${JSON.stringify(res.body)}`).toBeLessThan(300);
    }
    const [completed] = await ctx.sql<{ id: string }[]>`
      insert into iso_builds (organization_id) values (${org}) returning id`;
    await ctx.sql`
      update iso_builds set status = 'completed', progress = 100, finished_at = now(),
             expires_at = now() + interval '7 days', size_bytes = 1234, sha256 = ${'a'.repeat(64)},
             file_name = 'x.iso'
      where id = ${completed!.id}`;
    const [failed] = await ctx.sql<{ id: string }[]>`
      insert into iso_builds (organization_id) values (${org}) returning id`;
    await ctx.sql`update iso_builds set status = 'failed', error = 'xorriso failed' where id = ${failed!.id}`;
    // A device of a package set a new security entry affects: the match announces the CVE.
    await ctx.sql`
      insert into vulnerability_entries (feed, release, source, cve, fixed_version, urgency)
      values ('debian', 'bookworm', 'fleet-test-pkg', 'CVE-2099-0001', '1.1-1', 'high')`;
    await ctx.sql`update vulnerability_feeds set version = version + 1 where name = 'debian'`;
    const affected = await insertDevice(ctx.sql, { organizationId: org });
    const set = await insertPackageSet(ctx.sql, [{ name: 'fleet-test-pkg', version: '1.0-1' }]);
    await insertInventory(ctx.sql, affected, set, BOOKWORM);
    expect((await matchOutdated(ctx.sql)).detected).toBe(1);

    await runJobs(ctx, deps());

    const bodies = received.map((r) => JSON.parse(r.body));
    expect(bodies.map((b) => b.type).sort()).toEqual([...ALL_EVENTS].sort());
    const byType = Object.fromEntries(bodies.map((b) => [b.type, b]));
    for (const body of bodies) {
      expect(Object.keys(body)).toEqual(['id', 'type', 'organization_id', 'created_at', 'data']);
      expect(body.organization_id).toBe(org);
      expect(new Date(body.created_at).toISOString()).toBe(body.created_at);
    }
    for (const type of ALL_EVENTS.filter((t) => t.startsWith('device.'))) {
      expect(byType[type].data.device_id, type).toBe(agent.device_id);
    }
    expect(byType['device.activated'].data).toMatchObject({ device_id: agent.device_id, serial: expect.any(String) });
    expect(byType['device.stale'].data).toMatchObject({ agent_last_checkin: null, oe_id: expect.any(String) });
    expect(byType['device.archived'].data).not.toHaveProperty('reason');
    expect(byType['order.applied'].data).toMatchObject({ device_id: agent.device_id, merkmal: 'firefox' });
    expect(byType['order.apply_failed'].data).toMatchObject({ merkmal: 'libreoffice' });
    expect(byType['order.removed'].data.merkmal).toBe('onlyoffice');
    expect(byType['order.remove_failed'].data.merkmal).toBe('qgis');
    expect(byType['iso_build.completed'].data).toMatchObject({
      iso_build_id: completed!.id,
      size_bytes: 1234,
      sha256: 'a'.repeat(64),
    });
    expect(byType['iso_build.failed'].data).toMatchObject({ iso_build_id: failed!.id, error: 'xorriso failed' });
    expect(byType['rollout.ring_opened'].data).toMatchObject({ rollout_id: stopped, ring: 0, status: 'running' });
    expect(byType['rollout.paused'].data).toMatchObject({ rollout_id: stopped, paused_reason: 'manual' });
    expect(byType['rollout.aborted'].data).toMatchObject({ rollout_id: stopped, status: 'aborted' });
    expect(byType['rollout.completed'].data).toMatchObject({ rollout_id: done, merkmal: 'onlyoffice' });
    expect(byType['vulnerability.detected'].data).toEqual({
      cve: 'CVE-2099-0001',
      urgency: 'high',
      devices_affected: 1,
    });
    expect(byType['disk_key.revealed'].data).toEqual({
      device_id: agent.device_id,
      key_id: escrowed.body.id,
      reason: 'Ticket 7',
    });
    expect(JSON.stringify(bodies)).not.toContain('cbdefghi-jklnrtuv');
    expect(byType['action.finished'].data).toEqual({
      action_id: queued.body.id,
      device_id: agent.device_id,
      type: 'script',
      status: 'failed',
      exit_code: 2,
    });
    expect(JSON.stringify(bodies)).not.toContain('webhook-script');

    for (const { body, headers } of received) {
      expect(headers['content-type']).toBe('application/json');
      // nock hands over the parsed body; the compact JSON of it is the raw body here.
      verifySignature(String(headers['fleet-signature']), body, hook.secret);
      expect(body).not.toContain(hook.secret);
    }

    const list = await deliveries(hook.id);
    expect(list).toHaveLength(ALL_EVENTS.length);
    for (const d of list) {
      expect(d).toMatchObject({ status: 'delivered', attempts: 1, last_status_code: 200, last_error: null });
      expect(d.next_attempt_at).toBeNull();
      expect(d.delivered_at).not.toBeNull();
    }
    expect(JSON.stringify(list)).not.toContain(hook.secret);
    expect(log.lines.join('\n')).not.toContain(hook.secret);
  });

  it('goes only to live webhooks of the organization subscribed to the type', async () => {
    log = capturingLogger();
    const org = (await createOrganization(ctx)).id as string;
    const other = (await createOrganization(ctx)).id as string;
    const subscribed = await subscribe(org, 'https://hooks.example.com/fleet', ['device.activated']);
    const elsewhere = await subscribe(org, 'https://hooks.example.com/fleet', ['order.applied']);
    const foreign = await subscribe(other, 'https://hooks.example.com/fleet', ['device.activated']);
    const { received } = receiver();
    await activateDevice(ctx, org);
    await runJobs(ctx, deps());
    expect(received).toHaveLength(1);
    expect(await deliveries(subscribed.id)).toHaveLength(1);
    expect(await deliveries(elsewhere.id)).toHaveLength(0);
    expect(await deliveries(foreign.id)).toHaveLength(0);
  });

  it('queues nothing when the change is refused or rolled back, and nothing on check-ins', async () => {
    const agent = await enrollAgent(ctx);
    await subscribe(agent.organization_id, 'https://hooks.example.com/fleet', ALL_EVENTS);
    const count = async () => {
      const [row] = await ctx.sql<{ events: number; jobs: number }[]>`
        select (select count(*)::int from webhook_events where organization_id = ${agent.organization_id}) as events,
               (select count(*)::int from graphile_worker._private_jobs
                 join graphile_worker._private_tasks t on t.id = task_id
                where t.identifier = 'deliver_webhook') as jobs`;
      return row!;
    };
    const before = await count();
    // A managed device's serial: activation is refused (409), nothing written.
    const serial = (await ctx.sql<{ serial: string }[]>`select serial from devices where id = ${agent.device_id}`)[0]!
      .serial;
    const refused = await ctx.request('POST', '/api/v1/activate', {
      token: null,
      body: { code: agent.code, serial },
    });
    expect(refused.status).toBe(409);
    // A report with one unknown Merkmal is refused whole.
    const bad = await report(ctx, agent.secret, [
      { merkmal: 'firefox', event: 'applied' },
      { merkmal: 'no-such-merkmal', event: 'applied' },
    ]);
    expect(bad.status).toBeGreaterThanOrEqual(400);
    // A transaction that archives the device and then fails.
    await expect(
      ctx.sql.begin(async (tx) => {
        await tx`update devices set archived_at = now() where id = ${agent.device_id}`;
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    for (let i = 0; i < 3; i++) expect((await checkin(ctx, agent.secret)).status).toBe(200);
    expect(await count()).toEqual(before);
  });
});

describe('delivery', () => {
  it('retries a 500 and records both attempts; the pause grows from 30 s with jitter', async () => {
    log = capturingLogger();
    const org = (await createOrganization(ctx)).id as string;
    const hook = await subscribe(org, 'https://hooks.example.com/flaky', ['device.activated']);
    const first = nock('https://hooks.example.com').post('/flaky').reply(500, 'database is down');
    await activateDevice(ctx, org);
    await runJobs(ctx, deps());
    expect(first.isDone()).toBe(true);
    const [pending] = await deliveries(hook.id);
    expect(pending).toMatchObject({ status: 'pending', attempts: 1, last_status_code: 500 });
    expect(pending!.last_error).toBe('answered 500: database is down');
    const pause = (Date.parse(pending!.next_attempt_at!) - Date.now()) / 1000;
    expect(pause).toBeGreaterThan(20);
    expect(pause).toBeLessThanOrEqual(36);
    // Not due yet: another run delivers nothing.
    const second = nock('https://hooks.example.com').post('/flaky').reply(200);
    await runJobs(ctx, deps());
    expect(second.isDone()).toBe(false);
    await dueNow(pending!.id);
    await runJobs(ctx, deps());
    expect(second.isDone()).toBe(true);
    const [done] = await deliveries(hook.id);
    expect(done).toMatchObject({ id: pending!.id, status: 'delivered', attempts: 2, last_status_code: 200 });
    expect(done!.last_error).toBeNull();
    const attempts = await ctx.request('GET', `/api/v1/webhooks/${hook.id}/deliveries/${done!.id}/attempts`);
    expect(attempts.status).toBe(200);
    expect(attempts.body.next_cursor).toBeNull();
    expect(attempts.body.items).toMatchObject([
      { attempt: 1, status_code: 500, error: 'answered 500: database is down' },
      { attempt: 2, status_code: 200, error: null },
    ]);
    for (const a of attempts.body.items) {
      expect(a.duration_ms).toBeGreaterThanOrEqual(0);
      expect(Date.parse(a.started_at)).toBeLessThanOrEqual(Date.now());
    }
    // A delivery of another webhook is not one of this webhook's: 404.
    const other = await subscribe(org, 'https://hooks.example.com/other', ['device.activated']);
    const foreign = await ctx.request('GET', `/api/v1/webhooks/${other.id}/deliveries/${done!.id}/attempts`);
    expect(foreign.status).toBe(404);
    expect(foreign.body.error).toBe('not_found');
  });

  it('keeps at most the first 1 KiB of an error answer', async () => {
    const org = (await createOrganization(ctx)).id as string;
    const hook = await subscribe(org, 'https://hooks.example.com/big', ['device.activated']);
    nock('https://hooks.example.com').post('/big').reply(503, 'x'.repeat(100_000));
    await activateDevice(ctx, org);
    await runJobs(ctx, deps());
    const [d] = await deliveries(hook.id);
    expect(d!.last_status_code).toBe(503);
    expect(d!.last_error!.length).toBeLessThanOrEqual(1024 + 'answered 503: '.length);
  });

  it('a receiver that does not answer in time is a failed attempt', async () => {
    const org = (await createOrganization(ctx)).id as string;
    const hook = await subscribe(org, 'https://hooks.example.com/slow', ['device.activated']);
    nock('https://hooks.example.com').post('/slow').delay(2000).reply(200);
    await activateDevice(ctx, org);
    await runJobs(ctx, deps());
    const [d] = await deliveries(hook.id);
    expect(d).toMatchObject({ status: 'pending', attempts: 1, last_status_code: null });
    expect(d!.last_error).toContain('no answer within 0.3 s');
  });

  it('does not follow a redirect', async () => {
    const org = (await createOrganization(ctx)).id as string;
    const hook = await subscribe(org, 'https://hooks.example.com/moved', ['device.activated']);
    nock('https://hooks.example.com').post('/moved').reply(307, '', { location: 'https://hooks.example.com/internal' });
    const target = nock('https://hooks.example.com').post('/internal').reply(200);
    await activateDevice(ctx, org);
    await runJobs(ctx, deps());
    expect(target.isDone()).toBe(false);
    const [d] = await deliveries(hook.id);
    expect(d).toMatchObject({ status: 'pending', attempts: 1, last_status_code: 307 });
    expect(d!.last_error).toBe('redirect to https://hooks.example.com/internal not followed');
  });

  it.each([
    ['rebind.example.com', '10.0.0.5'],
    ['mapped.example.com', '::ffff:169.254.169.254'],
    ['6to4.example.com', '2002:7f00:1::'],
    ['translated.example.com', '::ffff:0:7f00:1'],
    ['teredo.example.com', '2001:0:a00:1::1'],
    ['nat64.example.com', '64:ff9b::a00:1'],
    ['compatible.example.com', '::127.0.0.1'],
  ])('refuses at delivery a host that now resolves to a private address (%s)', async (host, address) => {
    const org = (await createOrganization(ctx)).id as string;
    const hook = await subscribe(org, `https://${host}/hook`, ['device.activated']);
    const never = nock(`https://${host}`).post('/hook').reply(200);
    await activateDevice(ctx, org);
    await runJobs(ctx, deps());
    expect(never.isDone()).toBe(false);
    const [d] = await deliveries(hook.id);
    expect(d).toMatchObject({ status: 'pending', attempts: 1, last_status_code: null });
    expect(d!.last_error).toBe(`${host} resolves to ${address}, a private address (WEBHOOK_ALLOW_PRIVATE)`);
  });

  it('gives up after the last attempt, and queues no more', async () => {
    const org = (await createOrganization(ctx)).id as string;
    const hook = await subscribe(org, 'https://hooks.example.com/down', ['device.activated']);
    nock('https://hooks.example.com').post('/down').times(2).reply(500);
    await activateDevice(ctx, org);
    await runJobs(ctx, deps());
    const [d] = await deliveries(hook.id);
    await ctx.sql`update webhook_deliveries set attempts = ${MAX_ATTEMPTS - 1} where id = ${d!.id}`;
    await dueNow(d!.id);
    await runJobs(ctx, deps());
    const [last] = await deliveries(hook.id);
    expect(last).toMatchObject({ status: 'failed', attempts: MAX_ATTEMPTS, next_attempt_at: null });
    const [jobs] = await ctx.sql<{ n: number }[]>`
      select count(*)::int as n from graphile_worker._private_jobs where key = ${`deliver_webhook:${d!.id}`}`;
    expect(jobs!.n).toBe(0);
  });

  it('disables a webhook whose deliveries failed for 3 days, says so in the audit log, and sends it nothing more', async () => {
    const org = (await createOrganization(ctx)).id as string;
    const hook = await subscribe(org, 'https://hooks.example.com/gone', ['device.activated']);
    nock('https://hooks.example.com').post('/gone').reply(410);
    await ctx.sql`update webhooks set failing_since = now() - interval '3 days 1 minute' where id = ${hook.id}`;
    await activateDevice(ctx, org);
    await runJobs(ctx, deps());
    const list = await ctx.request('GET', `/api/v1/organizations/${org}/webhooks`);
    expect(list.body.items[0].disabled_at).not.toBeNull();
    const [d] = await deliveries(hook.id);
    expect(d).toMatchObject({ status: 'failed', attempts: 1, last_status_code: 410, next_attempt_at: null });
    const audit = await ctx.request('GET', `/api/v1/organizations/${org}/audit-events?action=webhook.disable`);
    expect(audit.body.items).toHaveLength(1);
    expect(audit.body.items[0]).toMatchObject({
      actor: { type: 'system' },
      target_id: hook.id,
      details: { reason: 'deliveries failed for 3 days', failing_since: expect.any(String) },
    });
    await activateDevice(ctx, org);
    expect(await deliveries(hook.id)).toHaveLength(1);
  });

  it('a deleted webhook gets nothing more: its queued delivery ends quietly', async () => {
    const org = (await createOrganization(ctx)).id as string;
    const hook = await subscribe(org, 'https://hooks.example.com/deleted', ['device.activated']);
    const never = nock('https://hooks.example.com').post('/deleted').reply(200);
    await activateDevice(ctx, org);
    expect((await ctx.request('DELETE', `/api/v1/webhooks/${hook.id}`)).status).toBe(204);
    await runJobs(ctx, deps());
    expect(never.isDone()).toBe(false);
  });

  it('records a worker whose key cannot open the secret as a failed attempt, and retries', async () => {
    const org = (await createOrganization(ctx)).id as string;
    const hook = await subscribe(org, 'https://hooks.example.com/fleet', ['device.activated']);
    const never = nock('https://hooks.example.com').post('/fleet').reply(200);
    await activateDevice(ctx, org);
    await runJobs(
      ctx,
      workerDeps(ctx, { wlanKey: new Uint8Array(32).fill(9), webhooks: { allowPrivate: false, resolve } }, log),
    );
    expect(never.isDone()).toBe(false);
    const [d] = await deliveries(hook.id);
    expect(d).toMatchObject({ status: 'pending', attempts: 1, last_status_code: null });
    expect(d!.last_error).toContain('ISO_ENCRYPTION_KEY');
  });

  it('keeps the secret out of the job payload', async () => {
    const org = (await createOrganization(ctx)).id as string;
    const hook = await subscribe(org, 'https://hooks.example.com/fleet', ['device.activated']);
    await activateDevice(ctx, org);
    const rows = await ctx.sql<{ payload: string }[]>`
      select j.payload::text as payload from graphile_worker._private_jobs j
      join graphile_worker._private_tasks t on t.id = j.task_id where t.identifier = 'deliver_webhook'`;
    expect(rows.length).toBeGreaterThan(0);
    for (const { payload } of rows) {
      expect(Object.keys(JSON.parse(payload))).toEqual(['delivery_id']);
      expect(payload).not.toContain(hook.secret);
    }
  });

  it('spreads at least 8 attempts over about a day', () => {
    expect(MAX_ATTEMPTS).toBeGreaterThanOrEqual(8);
    const hours = RETRY_PAUSES_SECONDS.reduce((a, b) => a + b, 0) / 3600;
    expect(hours).toBeGreaterThan(18);
    expect(hours).toBeLessThan(30);
    const pauses = Array.from({ length: 200 }, () => retryPauseSeconds(1));
    expect(Math.min(...pauses)).toBeGreaterThanOrEqual(24);
    expect(Math.max(...pauses)).toBeLessThanOrEqual(36);
    expect(new Set(pauses).size).toBeGreaterThan(3);
  });
});

describe('the hourly sweep', () => {
  it('deletes settled deliveries after 30 days, and their events; pending ones stay', async () => {
    const org = (await createOrganization(ctx)).id as string;
    const hook = await subscribe(org, 'https://hooks.example.com/fleet', ['device.activated']);
    nock('https://hooks.example.com').post('/fleet').times(2).reply(200);
    await activateDevice(ctx, org);
    await activateDevice(ctx, org);
    await runJobs(ctx, deps());
    await activateDevice(ctx, org); // stays pending: its job is not run
    const [old, recent] = (await deliveries(hook.id)).filter((d) => d.status === 'delivered');
    await ctx.sql`
      update webhook_deliveries set created_at = now() - interval '31 days' where id = ${old!.id}`;
    await ctx.sql`
      update webhook_events set created_at = now() - interval '31 days' where id = ${old!.event_id}`;
    await ctx.sql`
      update webhook_deliveries set created_at = now() - interval '40 days' where status = 'pending'
        and webhook_id = ${hook.id}`;
    const result = await sweepWebhookDeliveries(ctx.sql);
    expect(result).toEqual({ deliveries: 1, events: 1 });
    const left = await deliveries(hook.id);
    expect(left.map((d) => d.id).sort()).toEqual([recent!.id, left.find((d) => d.status === 'pending')!.id].sort());
  });
});

describe('end to end with a real HTTP receiver', () => {
  it('delivers to a local server (WEBHOOK_ALLOW_PRIVATE) with a signature it can verify', async () => {
    log = capturingLogger();
    const got: Received[] = [];
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        got.push({ body: Buffer.concat(chunks).toString('utf8'), headers: req.headers });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    try {
      const port = (server.address() as AddressInfo).port;
      const org = (await createOrganization(ctx)).id as string;
      const hook = await subscribe(org, `http://127.0.0.1:${port}/hook`, ['device.activated']);
      // The strict worker refuses the loopback address...
      await activateDevice(ctx, org);
      await runJobs(ctx, deps(false));
      expect(got).toHaveLength(0);
      const [refused] = await deliveries(hook.id);
      expect(refused!.last_error).toContain('private address');
      // ...the one that allows private addresses delivers.
      await dueNow(refused!.id);
      await runJobs(ctx, deps(true));
      expect(got).toHaveLength(1);
      const { body, headers } = got[0]!;
      expect(headers['content-type']).toBe('application/json');
      verifySignature(String(headers['fleet-signature']), body, hook.secret);
      expect(JSON.parse(body)).toMatchObject({ type: 'device.activated', organization_id: org });
      const [d] = await deliveries(hook.id);
      expect(d).toMatchObject({ status: 'delivered', attempts: 2, last_status_code: 204 });
    } finally {
      server.close();
    }
  });
});

describe('POST /api/v1/webhooks/{id}/test', () => {
  it('sends that webhook alone a signed webhook.test event, listed and audited like any delivery', async () => {
    log = capturingLogger();
    const org = (await createOrganization(ctx)).id as string;
    const hook = await subscribe(org, 'https://hooks.example.com/fleet', ['iso_build.failed']);
    const other = await subscribe(org, 'https://hooks.example.com/other', ALL_EVENTS);
    const { received } = receiver();
    const res = await ctx.request('POST', `/api/v1/webhooks/${hook.id}/test`);
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body).toMatchObject({ event: 'webhook.test', status: 'pending', attempts: 0 });
    await runJobs(ctx, deps());
    expect(received).toHaveLength(1);
    const { body, headers } = received[0]!;
    verifySignature(String(headers['fleet-signature']), body, hook.secret);
    expect(JSON.parse(body)).toMatchObject({
      id: res.body.event_id,
      type: 'webhook.test',
      organization_id: org,
      data: { webhook_id: hook.id, url: 'https://hooks.example.com/fleet' },
    });
    const [listed] = await deliveries(hook.id);
    expect(listed).toMatchObject({ id: res.body.id, event: 'webhook.test', status: 'delivered', attempts: 1 });
    expect(await deliveries(other.id)).toEqual([]);
    const [audit] = await ctx.sql`
      select action, target_id, actor from audit_events where organization_id = ${org} and action = 'webhook.test'`;
    expect(audit).toMatchObject({ target_id: hook.id, actor: { type: 'operator' } });
  });

  it('a disabled webhook sends nothing: 400, nothing queued; an unknown one is 404', async () => {
    const org = (await createOrganization(ctx)).id as string;
    const hook = await subscribe(org, 'https://hooks.example.com/fleet', ['iso_build.failed']);
    await ctx.sql`update webhooks set disabled_at = now() where id = ${hook.id}`;
    const res = await ctx.request('POST', `/api/v1/webhooks/${hook.id}/test`);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request');
    expect(await deliveries(hook.id)).toEqual([]);
    const [{ n }] = (await ctx.sql`select count(*)::int as n from webhook_events where organization_id = ${org}`) as [
      { n: number },
    ];
    expect(n).toBe(0);
    const missing = await ctx.request('POST', `/api/v1/webhooks/${crypto.randomUUID()}/test`);
    expect(missing.status).toBe(404);
  });
});
