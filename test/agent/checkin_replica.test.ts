/**
 * Check-ins from a real streaming replica (CONTRACT §19): the read goes to the standby
 * while it keeps up, a change on the primary reaches the answer once replayed, a replica
 * that stops answering is bypassed within the request's budget and taken back when it
 * returns, and a check-in writes nothing of its own (the primary's statement log shows
 * only the batched heartbeat).
 */
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CheckinPath, createCheckinPath } from '../../api/agent/checkin_path.ts';
import { createApp } from '../../api/app.ts';
import { createSql, type Sql } from '../../api/db/client.ts';
import { randomToken } from '../../api/http/crypto.ts';
import { silentLogger } from '../../api/log.ts';
import { enrollAgent, storedCheckinOf } from '../support/agent.ts';
import { ADMIN_TOKEN, request, type TestContext, testConfig } from '../support/app.ts';
import { type PrimaryAndStandby, startPrimaryAndStandby } from '../support/standby.ts';

const DATABASE_TIMEOUT_SECONDS = 4;

let pair: PrimaryAndStandby;
let primary: Sql;
let replica: Sql;
let checkinPath: CheckinPath;
const ctx = {} as TestContext;

beforeAll(async () => {
  pair = await startPrimaryAndStandby({
    // Every write statement of the application's database lands in the primary's log.
    prepare: async (url) => {
      const admin = postgres(url, { max: 1, onnotice: () => {} });
      await admin`alter database fleet set log_statement = 'mod'`;
      await admin.end();
    },
  });
  primary = createSql(pair.primary.url, { max: 4, timeoutSeconds: DATABASE_TIMEOUT_SECONDS });
  replica = createSql(pair.standby.url, { max: 4, timeoutSeconds: DATABASE_TIMEOUT_SECONDS });
  checkinPath = onReplica({ maxLagSeconds: 5, timeoutMs: 1000 });
  // Heartbeats flushed by hand here (their timer not started), so the log shows what a
  // check-in does before its batch is written.
  await checkinPath.reads.start();
  ctx.sql = primary;
  ctx.checkin = checkinPath;
  ctx.config = testConfig({ databaseTimeoutSeconds: DATABASE_TIMEOUT_SECONDS });
  ctx.app = createApp({ sql: primary, config: ctx.config, log: silentLogger, checkin: checkinPath });
  ctx.request = (method, path, options) => request(ctx.app, method, path, options);
}, 180_000);

/** The service's check-in path over the pair, with its own bounds for the replica. */
function onReplica(bounds: { maxLagSeconds: number; timeoutMs: number }): CheckinPath {
  return createCheckinPath({ primary, replica }, { log: silentLogger, replica: bounds });
}

afterAll(async () => {
  checkinPath?.reads.stop();
  await Promise.all([primary?.end({ timeout: 1 }), replica?.end({ timeout: 1 })]);
  await pair?.stop();
});

function checkin(secret: string, headers: Record<string, string> = {}) {
  return ctx.request('POST', '/api/v1/agent/checkin', { token: secret, headers });
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function readsOf(source: 'replica' | 'primary'): Promise<number> {
  const res = await ctx.request('GET', '/metrics', { token: ADMIN_TOKEN });
  const match = new RegExp(`^fleet_checkin_reads_total\\{source="${source}"\\} (\\d+)$`, 'm').exec(res.body);
  return Number(match?.[1] ?? Number.NaN);
}

/** Write statements of the primary's log (log_statement = 'mod'), in order. */
function writesIn(log: string): string[] {
  return [...log.matchAll(/(?:statement|execute [^:]*):\s*((?:update|insert|delete)[^\n]*)/gi)].map((m) => m[1]!);
}

describe('check-ins read from a streaming replica', () => {
  it('read on the replica and write nothing of their own: the heartbeat reaches the primary with the next batch', async () => {
    const agent = await enrollAgent(ctx);
    await pair.caughtUp();
    const { reads, heartbeats } = checkinPath;
    await until('the replica to be in use', async () => (reads.usingReplica ? true : undefined));
    const replicaBefore = reads.counts.replica;
    const mark = pair.primaryLog().length;
    const t0 = Date.now();
    const first = await checkin(agent.secret);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const unchanged = await checkin(agent.secret, { 'if-none-match': first.headers.get('etag')! });
    expect(unchanged.status).toBe(304);
    const t1 = Date.now();
    expect(reads.counts.replica - replicaBefore).toBe(2);
    expect(heartbeats.size).toBe(1);
    expect(await storedCheckinOf(primary, agent.device_id)).toBeNull();

    await heartbeats.flush();
    // The log arrives through the postmaster's stderr: wait for the batch to show in it.
    const writes = await until('the batched heartbeat in the log', async () => {
      const found = writesIn(pair.primaryLog().slice(mark));
      return found.length > 0 ? found : undefined;
    });
    expect(writes).toHaveLength(1);
    expect(writes[0]).toMatch(/^update device_heartbeats h set at = greatest/);
    const at = (await storedCheckinOf(primary, agent.device_id))!.getTime();
    expect(at).toBeGreaterThanOrEqual(t0);
    expect(at).toBeLessThanOrEqual(t1);
  });

  it('answer a selection made on the primary once the replica has replayed it', async () => {
    const agent = await enrollAgent(ctx);
    await pair.caughtUp();
    const etag = (await checkin(agent.secret)).headers.get('etag')!;
    const { reads } = checkinPath;
    const replicaBefore = reads.counts.replica;
    const selected = await ctx.request('POST', `/api/v1/devices/${agent.device_id}/catalog/qgis/select`);
    expect(selected.status).toBe(200);
    const changed = await until('the selection in the answer', async () => {
      const res = await checkin(agent.secret, { 'if-none-match': etag });
      return res.status === 200 ? res : undefined;
    });
    expect(changed.headers.get('etag')).not.toBe(etag);
    expect(changed.body.auftraege).toContainEqual({
      merkmal: 'qgis',
      ansible_role: 'qgis',
      state: 'present',
      optionen: {},
    });
    expect(reads.counts.replica).toBeGreaterThan(replicaBefore);
  });

  it('refuse a deprovisioned device with 403 once the replica has replayed it', async () => {
    const agent = await enrollAgent(ctx);
    await pair.caughtUp();
    expect((await checkin(agent.secret)).status).toBe(200);
    expect((await ctx.request('POST', `/api/v1/devices/${agent.device_id}/deprovision`)).status).toBe(200);
    const refused = await until('403', async () => {
      const res = await checkin(agent.secret);
      return res.status === 403 ? res : undefined;
    });
    expect(refused.body.error).toBe('device_deprovisioned');
  });

  it('ask the primary before 401 when the replica, within its lag bound, does not know the secret yet', async () => {
    // A bound no test reaches: the replica stays in use while its replay is paused.
    const patientPath = onReplica({ maxLagSeconds: 3600, timeoutMs: 1000 });
    const patient = patientPath.reads;
    await pair.caughtUp();
    await until('a caught-up sample', async () => {
      await patient.sample();
      return patient.lagSeconds === 0 ? true : undefined;
    });
    const app = createApp({ sql: primary, config: ctx.config, log: silentLogger, checkin: patientPath });
    const known = await enrollAgent(ctx);
    await pair.caughtUp();
    await replica`select pg_wal_replay_pause()`;
    try {
      // Bootstrapped on the primary only: the paused replica has no such secret.
      const fresh = await enrollAgent(ctx);
      await patient.sample();
      expect(patient.usingReplica).toBe(true);
      const [onReplica] = await replica`select count(*)::int as n from devices where id = ${fresh.device_id}`;
      expect(onReplica!.n).toBe(0);

      let before = { ...patient.counts };
      const res = await request(app, 'POST', '/api/v1/agent/checkin', { token: fresh.secret });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.device_id).toBe(fresh.device_id);
      expect(patient.counts).toEqual({ replica: before.replica + 1, primary: before.primary + 1 });

      // A device the replica knows is answered there alone.
      before = { ...patient.counts };
      expect((await request(app, 'POST', '/api/v1/agent/checkin', { token: known.secret })).status).toBe(200);
      expect(patient.counts).toEqual({ replica: before.replica + 1, primary: before.primary });

      // A secret of no device is 401 only after the primary did not know it either.
      before = { ...patient.counts };
      const unknown = await request(app, 'POST', '/api/v1/agent/checkin', { token: randomToken(32) });
      expect(unknown.status).toBe(401);
      expect(unknown.body.error).toBe('invalid_agent_secret');
      expect(patient.counts).toEqual({ replica: before.replica + 1, primary: before.primary + 1 });
    } finally {
      await replica`select pg_wal_replay_resume()`;
      patient.stop();
    }
  });

  it('bypass a replica whose replay lags more than the bound, and take it back once it caught up', async () => {
    const laggingPath = onReplica({ maxLagSeconds: 1, timeoutMs: 1000 });
    const lagging = laggingPath.reads;
    await pair.caughtUp();
    // Caught up and streaming: no lag, however old the last write (a sample taken between
    // receiving and replaying the earlier tests' WAL still sees a moment of lag).
    await until('a caught-up sample', async () => {
      await lagging.sample();
      return lagging.lagSeconds === 0 ? true : undefined;
    });
    expect(lagging.usingReplica).toBe(true);
    await replica`select pg_wal_replay_pause()`;
    try {
      await primary`update organizations set name = name`; // WAL the paused replica does not replay
      await until(
        'the lag to pass the bound',
        async () => {
          await lagging.sample();
          return lagging.usingReplica ? undefined : true;
        },
        15_000,
      );
      expect(lagging.lagSeconds!).toBeGreaterThan(1);
      const agent = await enrollAgent(ctx);
      const app = createApp({ sql: primary, config: ctx.config, log: silentLogger, checkin: laggingPath });
      const before = { ...lagging.counts };
      const res = await request(app, 'POST', '/api/v1/agent/checkin', { token: agent.secret });
      expect(res.status).toBe(200); // the device is not on the paused replica yet: the primary answered
      expect(lagging.counts.primary).toBe(before.primary + 1);
      expect(lagging.counts.replica).toBe(before.replica);
    } finally {
      await replica`select pg_wal_replay_resume()`;
    }
    await until('the replica back', async () => {
      await lagging.sample();
      return lagging.usingReplica ? true : undefined;
    });
  });

  it('answer from the primary while the replica is stopped and killed, and read from it again once it is back', async () => {
    const agent = await enrollAgent(ctx);
    await pair.caughtUp();
    const { reads } = checkinPath;
    await until('the replica to be in use', async () => (reads.usingReplica ? true : undefined));
    expect((await checkin(agent.secret)).status).toBe(200);
    const primaryBefore = await readsOf('primary');

    const stopped = pair.standbyPids();
    for (const pid of stopped) process.kill(pid, 'SIGSTOP');
    try {
      for (let i = 0; i < 3; i++) {
        const started = Date.now();
        const res = await checkin(agent.secret);
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        expect(Date.now() - started).toBeLessThan(DATABASE_TIMEOUT_SECONDS * 1000);
      }
      expect(await readsOf('primary')).toBeGreaterThanOrEqual(primaryBefore + 3);
      expect(reads.usingReplica).toBe(false);
    } finally {
      // Killed while stopped: its supervisor starts it again on the same port.
      for (const pid of stopped) process.kill(pid, 'SIGKILL');
    }
    const killedAt = Date.now();
    const res = await checkin(agent.secret);
    expect(res.status).toBe(200);
    expect(Date.now() - killedAt).toBeLessThan(DATABASE_TIMEOUT_SECONDS * 1000);

    const replicaBack = await readsOf('replica');
    await until(
      'reads back on the replica',
      async () => {
        const answer = await checkin(agent.secret);
        expect(answer.status).toBe(200);
        return (await readsOf('replica')) > replicaBack ? true : undefined;
      },
      60_000,
    );
    const metrics = (await ctx.request('GET', '/metrics')).body as string;
    expect(metrics).toMatch(/^fleet_replica_lag_seconds \d/m);
    expect(metrics).toMatch(/^fleet_heartbeats_pending \d+$/m);
  }, 120_000);
});
