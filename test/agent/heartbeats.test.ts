/**
 * Heartbeats in batches (CONTRACT §19): the time of the check-in (not of the write) is
 * visible within 2 s, the later time wins when two processes write the same device, a
 * failed write is retried by the next, and a stop writes what is pending (real process).
 * Each write updates its rows in place (HOT): nothing indexes the heartbeat's time.
 */
import { Buffer } from 'node:buffer';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HEARTBEAT_WRITE, Heartbeats } from '../../api/agent/heartbeats.ts';
import { createSql } from '../../api/db/client.ts';
import { enrollAgent, storedCheckinOf } from '../support/agent.ts';
import { useTestApp } from '../support/app.ts';
import { startService } from '../support/service_process.ts';

const ctx = useTestApp();

async function lastCheckin(deviceId: string): Promise<number | null> {
  return (await storedCheckinOf(ctx.sql, deviceId))?.getTime() ?? null;
}

describe('batched heartbeats', () => {
  it('store the time of each check-in within 2 s, written in one statement per batch', async () => {
    // The test app's own batches, on the service's timer.
    const { heartbeats } = ctx.checkin;
    const agents = await Promise.all(Array.from({ length: 5 }, () => enrollAgent(ctx)));
    let flushes = 0;
    let written = 0;
    heartbeats.onFlush((r) => {
      flushes++;
      written += r.devices;
    });
    const windows = await Promise.all(
      agents.map(async (agent) => {
        const t0 = Date.now();
        const res = await ctx.request('POST', '/api/v1/agent/checkin', { token: agent.secret });
        expect(res.status).toBe(200);
        return [t0, Date.now()] as const;
      }),
    );
    const answered = Date.now();
    for (const [i, agent] of agents.entries()) {
      let at = await lastCheckin(agent.device_id);
      while (at === null && Date.now() - answered < 2000) {
        await new Promise((r) => setTimeout(r, 50));
        at = await lastCheckin(agent.device_id);
      }
      expect(at, 'visible within 2 s').not.toBeNull();
      expect(at!).toBeGreaterThanOrEqual(windows[i]![0]);
      expect(at!).toBeLessThanOrEqual(windows[i]![1]);
    }
    expect(written).toBe(5);
    expect(flushes).toBeLessThanOrEqual(2); // one statement per batch, not one per check-in
  });

  it('update each row in place (HOT): nothing indexes the time, and the other columns do not change', async () => {
    const agents = await Promise.all(Array.from({ length: 3 }, () => enrollAgent(ctx)));
    const ids = agents.map((a) => a.device_id);
    // The backend's counts not yet reported, before and after the write.
    const [before, after] = await ctx.sql.begin(async (tx) => {
      const counts = () => tx<{ updated: number; hot: number }[]>`
        select pg_stat_get_xact_tuples_updated('device_heartbeats'::regclass)::int as updated,
               pg_stat_get_xact_tuples_hot_updated('device_heartbeats'::regclass)::int as hot`;
      const first = (await counts())[0]!;
      await tx.unsafe(HEARTBEAT_WRITE, [ids.join(','), ids.map(() => Date.now()).join(',')]);
      return [first, (await counts())[0]!];
    });
    expect({ updated: after.updated - before.updated, hot: after.hot - before.hot }).toEqual({ updated: 3, hot: 3 });
  });

  it('keep the later time when two processes write the same device, in either order', async () => {
    const agent = await enrollAgent(ctx);
    const other = createSql(ctx.db.url, { max: 1 });
    try {
      const a = new Heartbeats(ctx.sql);
      const b = new Heartbeats(other);
      const later = Date.parse('2026-11-24T10:00:00.500Z');
      const earlier = later - 1500;
      a.record(agent.device_id, later);
      b.record(agent.device_id, earlier);
      await a.flush();
      await b.flush();
      expect(await lastCheckin(agent.device_id)).toBe(later);
      a.record(agent.device_id, later + 10);
      b.record(agent.device_id, later + 20);
      await Promise.all([a.flush(), b.flush()]);
      expect(await lastCheckin(agent.device_id)).toBe(later + 20);
    } finally {
      await other.end();
    }
  });

  it('retry a failed write with the next one', async () => {
    const agent = await enrollAgent(ctx);
    // A pool whose statements give up after a second: the table is locked longer than that.
    const impatient = createSql(ctx.db.url, { max: 1, timeoutSeconds: 2 });
    const locker = createSql(ctx.db.url, { max: 1, timeoutSeconds: 30 });
    const failures: unknown[] = [];
    const batch = new Heartbeats(impatient, (err) => failures.push(err));
    try {
      const at = Date.now();
      batch.record(agent.device_id, at);
      await locker.begin(async (tx) => {
        await tx`lock table device_heartbeats in exclusive mode`;
        await batch.flush();
      });
      expect(failures).toHaveLength(1);
      expect(batch.size).toBe(1);
      expect(await lastCheckin(agent.device_id)).toBeNull();
      await batch.flush();
      expect(batch.size).toBe(0);
      expect(await lastCheckin(agent.device_id)).toBe(at);
    } finally {
      await impatient.end();
      await locker.end();
    }
  });

  it('write the check-in of a device deprovisioned before the write: it checked in while live', async () => {
    const agent = await enrollAgent(ctx);
    const batch = new Heartbeats(ctx.sql);
    const at = Date.now();
    batch.record(agent.device_id, at);
    expect((await ctx.request('POST', `/api/v1/devices/${agent.device_id}/deprovision`)).status).toBe(200);
    await batch.flush();
    expect(await lastCheckin(agent.device_id)).toBe(at);
  });

  it('skip a device deleted before the write, and still write the others of the batch', async () => {
    const gone = await enrollAgent(ctx);
    const kept = await enrollAgent(ctx);
    const batch = new Heartbeats(ctx.sql);
    const at = Date.now();
    batch.record(gone.device_id, at);
    batch.record(kept.device_id, at);
    await ctx.sql`delete from devices where id = ${gone.device_id}`;
    await batch.flush();
    expect(batch.size).toBe(0);
    expect(await lastCheckin(kept.device_id)).toBe(at);
  });
});

describe('the service process', () => {
  it('writes the pending heartbeats when stopped at once after a check-in (SIGTERM)', async () => {
    const agent = await enrollAgent(ctx);
    const dataDir = await mkdtemp(join(tmpdir(), 'fleet-heartbeats-'));
    const service = await startService(
      {
        DATABASE_URL: ctx.db.url,
        ADMIN_TOKEN: 'x'.repeat(40),
        ISO_ENCRYPTION_KEY: Buffer.alloc(32, 1).toString('base64'),
        DATA_DIR: dataDir,
      },
      ['--api-only'],
    );
    try {
      const t0 = Date.now();
      const res = await fetch(`${service.base}/api/v1/agent/checkin`, {
        method: 'POST',
        headers: { authorization: `Bearer ${agent.secret}` },
      });
      expect(res.status).toBe(200);
      const t1 = Date.now();
      expect(await service.stop('SIGTERM')).toBe(0);
      const at = await lastCheckin(agent.device_id);
      expect(at).not.toBeNull();
      expect(at!).toBeGreaterThanOrEqual(t0);
      expect(at!).toBeLessThanOrEqual(t1);
      expect(service.output()).toContain('stop: heartbeats written');
    } finally {
      await service.stop('SIGKILL');
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 120_000);
});
