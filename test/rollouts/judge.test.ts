/**
 * The judge of a running rollout, rule by rule, over reports written through the real report
 * route: the automatic pause (and none below min(5, n) reports), the next ring only after
 * the soak and enough reports (a ring without a live device waits; an empty one passes),
 * what the current ring waits for, an admin's resume accepting the failures so far, completion
 * (the scope's override, its audit row and webhook, the devices' states untouched for the
 * opened ones), a scope deleted meanwhile, and two judges at once on two connections.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listOverrides } from '../../api/catalog/repo.ts';
import { createSql, type Sql } from '../../api/db/client.ts';
import { judgeRollout } from '../../api/rollouts/judge.ts';
import { getRollout } from '../../api/rollouts/service.ts';
import { checkin, enrollAgent, type EnrolledAgent, waitForLockWaiter } from '../support/agent.ts';
import { useTestApp, writeHeartbeats } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { addToGroup, insertGroup } from '../support/devices.ts';
import {
  appliedDevices,
  insertRollout,
  judgeJobs,
  type RolloutInput,
  reportOutcome,
  rolloutState,
  rolloutWebhooks,
  soak,
  stateEvents,
  subscribeRolloutEvents,
} from './judge_support.ts';

const ctx = useTestApp();
const MERKMAL = 'libreoffice'; // absent by default: selecting it changes every device
const judge = (id: string, db: Sql = ctx.sql) =>
  judgeRollout(db, id, { pollIntervalSeconds: 300, requestId: 'job:test' });

interface Fleet {
  organizationId: string;
  unit: string;
  agents: EnrolledAgent[];
}

/** An organization with `n` bootstrapped agents in its default org unit, subscribed to rollout events. */
async function fleet(n: number): Promise<Fleet> {
  const org = (await createOrganization(ctx)) as { id: string; default_oe_id: string };
  const agents: EnrolledAgent[] = [];
  for (let i = 0; i < n; i++) agents.push(await enrollAgent(ctx, { organizationId: org.id }));
  await subscribeRolloutEvents(ctx.sql, org.id);
  return { organizationId: org.id, unit: org.default_oe_id, agents };
}

/** A select of libreoffice at the fleet's unit with the agents placed in rings by `rings[i]`. */
function rollout(f: Fleet, ringOf: number[], options: Partial<RolloutInput> = {}) {
  const placement = new Map(ringOf.map((ring, i) => [f.agents[i]!.device_id, ring] as const));
  return insertRollout(ctx.sql, {
    organizationId: f.organizationId,
    scope: 'org_unit',
    scopeId: f.unit,
    merkmal: MERKMAL,
    action: 'select',
    rings: [50, 100],
    placement,
    ...options,
  });
}

async function reports(f: Fleet, outcomes: Array<[number, 'applied' | 'apply_failed']>) {
  for (const [i, event] of outcomes) await reportOutcome(ctx, f.agents[i]!.secret, MERKMAL, event);
}

/** `waiting_for` of each ring, as the Rollout object says it. */
async function waitingFor(id: string) {
  return (await getRollout(ctx.sql, id, 300)).rings_detail.map((r) => r.waiting_for);
}

async function auditRows(action: string, targetId: string) {
  return ctx.sql<{ actor: unknown; target_type: string; details: Record<string, unknown>; request_id: string }[]>`
    select actor, target_type, details, request_id from audit_events
    where action = ${action} and target_id = ${targetId} order by id`;
}

describe('judgeRollout: the automatic pause', () => {
  it('pauses once at least min(5, n) reported and the failures exceed the ratio, not before; ring 1 is never touched', async () => {
    const f = await fleet(8);
    const id = await rollout(f, [0, 0, 0, 0, 0, 0, 1, 1]);
    expect(await appliedDevices(ctx.sql, id)).toEqual(
      f.agents
        .slice(0, 6)
        .map((a) => a.device_id)
        .sort(),
    );

    // 1 failed of 4 reported is a quarter, but 4 < min(5, 6): no judgement on so few.
    await reports(f, [
      [0, 'apply_failed'],
      [1, 'applied'],
      [2, 'applied'],
      [3, 'applied'],
    ]);
    expect(await judge(id)).toBe('waiting');
    expect((await rolloutState(ctx.sql, id)).status).toBe('running');

    await reports(f, [[4, 'applied']]);
    expect(await judge(id)).toBe('paused');
    expect(await rolloutState(ctx.sql, id)).toMatchObject({
      status: 'paused',
      paused_reason: 'failure_ratio',
      current_ring: 0,
    });
    const figures = { ring: 0, devices: 6, converged: 4, pending: 1, failed: 1, accepted_failures: 0 };
    expect(await auditRows('rollout.pause', id)).toEqual([
      {
        actor: { type: 'system' },
        target_type: 'rollout',
        details: { reason: 'failure_ratio', max_failure_ratio: 0.1, ...figures },
        request_id: 'job:test',
      },
    ]);
    expect(await rolloutWebhooks(ctx.sql, id)).toEqual([
      {
        type: 'rollout.paused',
        data: expect.objectContaining({ rollout_id: id, status: 'paused', paused_reason: 'failure_ratio', ...figures }),
      },
    ]);
    // Paused: the judge leaves it alone, and ring 1's devices never had the change.
    expect(await judge(id)).toBe('not_running');
    for (const agent of f.agents.slice(6)) expect(await stateEvents(ctx.sql, agent.device_id, MERKMAL)).toEqual([]);
    expect(await appliedDevices(ctx.sql, id)).toHaveLength(6);
  });

  it('a ring of fewer than five pauses once all of it reported', async () => {
    const f = await fleet(3);
    const id = await rollout(f, [0, 0, 1]);
    await reports(f, [[0, 'apply_failed']]);
    expect(await judge(id)).toBe('waiting');
    await reports(f, [[1, 'applied']]);
    expect(await judge(id)).toBe('paused');
  });
});

describe('judgeRollout: the next ring', () => {
  it('opens only after the soak, with failures within the ratio; its devices get the change with cause rollout', async () => {
    const f = await fleet(8);
    const id = await rollout(f, [0, 0, 0, 0, 0, 0, 1, 1], { maxFailureRatio: 0.25, soakSeconds: 3600 });
    await reports(f, [
      [0, 'apply_failed'],
      [1, 'applied'],
      [2, 'applied'],
      [3, 'applied'],
      [4, 'applied'],
      [5, 'applied'],
    ]);
    // 1 of 6 failed: within 0.25, but the ring opened just now.
    const before = Date.now();
    expect(await judge(id)).toBe('waiting');
    const [next] = await judgeJobs(ctx.sql, id);
    expect(next!.key).toBe(`judge_rollout:${id}:next`);
    // The next look at most 30 s away.
    expect(next!.run_at.getTime() - before).toBeGreaterThan(25_000);
    expect(next!.run_at.getTime() - before).toBeLessThanOrEqual(31_000);
    for (const agent of f.agents.slice(6)) expect(await stateEvents(ctx.sql, agent.device_id, MERKMAL)).toEqual([]);

    await soak(ctx.sql, id);
    expect(await judge(id)).toBe('ring_opened');
    expect(await rolloutState(ctx.sql, id)).toMatchObject({ status: 'running', current_ring: 1 });
    expect(await appliedDevices(ctx.sql, id)).toHaveLength(8);
    for (const agent of f.agents.slice(6)) {
      expect(await stateEvents(ctx.sql, agent.device_id, MERKMAL)).toEqual([
        {
          type: 'selected',
          payload: expect.objectContaining({ cause: 'rollout', source_id: id, actor: { type: 'system' } }),
        },
      ]);
      const res = await checkin(ctx, agent.secret);
      expect(res.body.auftraege.find((a: { merkmal: string }) => a.merkmal === MERKMAL).state).toBe('present');
    }
    expect(await rolloutWebhooks(ctx.sql, id)).toEqual([
      { type: 'rollout.ring_opened', data: expect.objectContaining({ rollout_id: id, ring: 1, current_ring: 1 }) },
    ]);
    // Ring 1 opened just now: nothing more until its own soak has passed.
    expect(await judge(id)).toBe('waiting');
  });

  it('waits until min_reported_ratio of the ring reported', async () => {
    const f = await fleet(7);
    const id = await rollout(f, [0, 0, 0, 0, 0, 0, 1], { soakSeconds: 0, minReportedRatio: 0.9 });
    await reports(f, [
      [0, 'applied'],
      [1, 'applied'],
      [2, 'applied'],
      [3, 'applied'],
      [4, 'applied'],
    ]);
    expect(await judge(id)).toBe('waiting'); // 5 of 6 reported: 0.83 < 0.9
    await reports(f, [[5, 'applied']]);
    expect(await judge(id)).toBe('ring_opened');
  });

  it('a ring whose devices all went silent waits for a live device, and says so; it passes once one reports', async () => {
    const f = await fleet(3);
    const id = await rollout(f, [0, 0, 1], { soakSeconds: 3600 });
    const silent = [f.agents[0]!.device_id, f.agents[1]!.device_id];
    await ctx.sql`update devices set agent_secret_issued_at = now() - interval '1 hour' where id = any(${silent}::uuid[])`;
    await ctx.sql`update device_heartbeats set at = null where device_id = any(${silent}::uuid[])`;
    await soak(ctx.sql, id);
    expect(await judge(id)).toBe('waiting');
    expect(await judge(id)).toBe('waiting');
    expect((await rolloutState(ctx.sql, id)).current_ring).toBe(0);
    expect((await waitingFor(id))[0]).toEqual({ reason: 'no_live_devices', reported: 0, needed: 0 });
    for (const agent of f.agents.slice(2)) expect(await stateEvents(ctx.sql, agent.device_id, MERKMAL)).toEqual([]);

    // One comes back (a check-in) and reports: min(5, 1) = 1 of 1 live device reported.
    await checkin(ctx, f.agents[0]!.secret);
    await writeHeartbeats(ctx);
    await reports(f, [[0, 'applied']]);
    expect(await judge(id)).toBe('ring_opened');
  });

  it('a ring whose devices were all archived since is empty: it passes at once', async () => {
    const f = await fleet(3);
    const id = await rollout(f, [0, 0, 1], { soakSeconds: 3600 });
    await ctx.sql`
      update devices set archived_at = now() where id = any(${[f.agents[0]!.device_id, f.agents[1]!.device_id]}::uuid[])`;
    expect((await waitingFor(id))[0]).toBeNull();
    expect(await judge(id)).toBe('ring_opened');
  });

  it('says what the current ring waits for: the soak until it ends, then the reports, reported of needed', async () => {
    const f = await fleet(8);
    const id = await rollout(f, [0, 0, 0, 0, 0, 0, 0, 1], {
      soakSeconds: 3600,
      minReportedRatio: 0.9,
      maxFailureRatio: 0.25,
    });
    await reports(f, [
      [0, 'applied'],
      [1, 'apply_failed'],
    ]);
    const [opened] = await ctx.sql<{ opened_at: Date }[]>`
      select opened_at from rollout_rings where rollout_id = ${id} and ring = 0`;
    expect(await waitingFor(id)).toEqual([
      {
        reason: 'soak',
        until: new Date(opened!.opened_at.getTime() + 3600_000).toISOString(),
        reported: 2,
        needed: 7, // ⌈0.9 × 7⌉
      },
      null, // closed: waits for nothing of its own
    ]);
    await soak(ctx.sql, id);
    expect(await judge(id)).toBe('waiting');
    expect((await waitingFor(id))[0]).toEqual({ reason: 'reports', reported: 2, needed: 7 });
    await reports(
      f,
      [2, 3, 4, 5, 6].map((i) => [i, 'applied'] as [number, 'applied']),
    );
    expect((await waitingFor(id))[0]).toBeNull();
    expect(await judge(id)).toBe('ring_opened');
    expect((await waitingFor(id))[1]).toEqual(expect.objectContaining({ reason: 'soak', reported: 0, needed: 1 }));
    expect((await waitingFor(id))[0]).toBeNull();
  });
});

describe('judgeRollout: after a resume', () => {
  it('counts only failures beyond those the admin accepted by resuming', async () => {
    const f = await fleet(7);
    const id = await rollout(f, [0, 0, 0, 0, 0, 0, 1], { soakSeconds: 0, minReportedRatio: 0.5 });
    await reports(f, [
      [0, 'apply_failed'],
      [1, 'apply_failed'],
      [2, 'applied'],
      [3, 'applied'],
      [4, 'applied'],
    ]);
    expect(await judge(id)).toBe('paused');

    // As a resume does: the ring's failures so far are accepted, and judging goes on.
    const resume = async (accepted: number) => {
      await ctx.sql`update rollout_rings set accepted_failures = ${accepted} where rollout_id = ${id} and ring = 0`;
      await ctx.sql`update rollouts set status = 'running', paused_reason = null where id = ${id}`;
    };
    await resume(2);
    // A new failure beyond the accepted two: 1 of 6 is above 0.1 again.
    await reports(f, [[5, 'apply_failed']]);
    expect(await judge(id)).toBe('paused');

    await resume(3);
    expect(await judge(id)).toBe('ring_opened');
    expect(await auditRows('rollout.pause', id)).toHaveLength(2);
  });
});

describe('judgeRollout: completion', () => {
  it('writes the change at the scope as a selection would, then releases the devices without events', async () => {
    const f = await fleet(5);
    // Devices 0-3 in rings 0 and 1; ring 2 is empty; device 4 is not the rollout's (it came
    // in after the creation): it gets the change only with the scope's override.
    const id = await rollout(f, [0, 0, 1, 1], { rings: [40, 80, 100], soakSeconds: 3600 });
    await reports(f, [
      [0, 'applied'],
      [1, 'applied'],
    ]);
    await soak(ctx.sql, id);
    expect(await judge(id)).toBe('ring_opened');
    await reports(f, [
      [2, 'applied'],
      [3, 'applied'],
    ]);
    await soak(ctx.sql, id);
    expect(await judge(id)).toBe('ring_opened'); // ring 2, without devices
    expect((await rolloutState(ctx.sql, id)).current_ring).toBe(2);

    const opened = f.agents.slice(0, 4);
    const outsider = f.agents[4]!;
    const answers = async (agents: EnrolledAgent[]) =>
      Promise.all(agents.map(async (a) => (await checkin(ctx, a.secret)).body));
    const eventsOf = (agents: EnrolledAgent[]) =>
      Promise.all(agents.map((a) => stateEvents(ctx.sql, a.device_id, MERKMAL)));
    const answersBefore = await answers(opened);
    const eventsBefore = await eventsOf(opened);
    const outsiderBefore = (await checkin(ctx, outsider.secret)).body;
    expect(await stateEvents(ctx.sql, outsider.device_id, MERKMAL)).toEqual([]);

    // An empty ring passes at once, without waiting for its soak.
    expect(await judge(id)).toBe('completed');
    const state = await rolloutState(ctx.sql, id);
    expect(state).toMatchObject({ status: 'completed', paused_reason: null });
    expect(state.completed_at).toBeInstanceOf(Date);

    expect(await listOverrides(ctx.sql, 'org-units', f.unit)).toEqual([
      expect.objectContaining({ merkmal: MERKMAL, state: 'present', optionen: {} }),
    ]);
    expect(await auditRows('catalog.select', f.unit)).toEqual([
      {
        actor: { type: 'system' },
        target_type: 'org_unit',
        details: { merkmal: MERKMAL, state: 'present', optionen: {} },
        request_id: 'job:test',
      },
    ]);
    const hooks = await rolloutWebhooks(ctx.sql, id);
    expect(hooks.at(-1)).toEqual({
      type: 'rollout.completed',
      data: expect.objectContaining({ rollout_id: id, status: 'completed' }),
    });
    expect(hooks.map((h) => h.type)).toEqual(['rollout.ring_opened', 'rollout.ring_opened', 'rollout.completed']);

    // The opened devices: released, same state, no event (the scope says what the rollout said).
    expect(await appliedDevices(ctx.sql, id)).toEqual([]);
    const texts = await ctx.sql<{ rollouts_text: string }[]>`
      select rollouts_text from devices where organization_id = ${f.organizationId}`;
    expect(texts.every((t) => t.rollouts_text === '')).toBe(true);
    expect(await eventsOf(opened)).toEqual(eventsBefore);
    expect(await answers(opened)).toEqual(answersBefore);
    // The device outside the rings gets the change now, from its org unit.
    expect(await stateEvents(ctx.sql, outsider.device_id, MERKMAL)).toEqual([
      {
        type: 'selected',
        payload: expect.objectContaining({ cause: 'oe', source_id: f.unit, actor: { type: 'system' } }),
      },
    ]);
    const outsiderAfter = (await checkin(ctx, outsider.secret)).body;
    expect(outsiderAfter).not.toEqual(outsiderBefore);
    expect(outsiderAfter.auftraege.find((a: { merkmal: string }) => a.merkmal === MERKMAL).state).toBe('present');

    // Completed: a direct selection there is allowed again, and the judge has nothing to do.
    expect(await judge(id)).toBe('not_running');
    const res = await ctx.request('POST', `/api/v1/org-units/${f.unit}/catalog/${MERKMAL}/deselect`, { body: {} });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  });

  it('aborts instead when the group was deleted before the last ring passed; nothing is written', async () => {
    const f = await fleet(2);
    const group = await insertGroup(ctx.sql, f.organizationId);
    for (const a of f.agents) await addToGroup(ctx.sql, group, a.device_id);
    const id = await insertRollout(ctx.sql, {
      organizationId: f.organizationId,
      scope: 'group',
      scopeId: group,
      merkmal: MERKMAL,
      action: 'select',
      rings: [100],
      soakSeconds: 0,
    });
    expect(await appliedDevices(ctx.sql, id)).toHaveLength(2);
    await reports(f, [
      [0, 'applied'],
      [1, 'applied'],
    ]);
    await ctx.sql`delete from groups where id = ${group}`;

    expect(await judge(id)).toBe('aborted');
    expect(await rolloutState(ctx.sql, id)).toMatchObject({ status: 'aborted', completed_at: null });
    expect(await appliedDevices(ctx.sql, id)).toEqual([]);
    expect(await auditRows('rollout.abort', id)).toEqual([
      expect.objectContaining({
        actor: { type: 'system' },
        details: expect.objectContaining({ reason: 'scope_deleted' }),
      }),
    ]);
    expect(await auditRows('catalog.select', group)).toEqual([]);
    expect((await rolloutWebhooks(ctx.sql, id)).map((h) => h.type)).toEqual(['rollout.aborted']);
  });
});

describe('judgeRollout: two judges at once', () => {
  let workerA: Sql;
  let workerB: Sql;
  let holder: Sql;
  beforeAll(() => {
    workerA = createSql(ctx.db.url, { max: 2, applicationName: 'fleet-test-judge-a' });
    workerB = createSql(ctx.db.url, { max: 2, applicationName: 'fleet-test-judge-b' });
    holder = createSql(ctx.db.url, { max: 1, applicationName: 'fleet-test-judge-holder' });
  });
  afterAll(async () => {
    await Promise.all([workerA?.end(), workerB?.end(), holder?.end()]);
  });

  /** Both judges start while the rollout's row is locked, so both wait, then run one after the other. */
  async function judgeTwiceAtOnce(id: string) {
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => {
      locked = resolve;
    });
    const held = holder.begin(async (tx) => {
      await tx`select 1 from rollouts where id = ${id} for update`;
      locked();
      await released;
    });
    // The holder has the lock once its statement returned: only then may the judges start
    // (a poll that gave up after 2 s let them run unlocked on a loaded host).
    await isLocked;
    const a = judge(id, workerA);
    const b = judge(id, workerB);
    await waitForLockWaiter(ctx.sql, 'for update of r');
    release();
    await held;
    return (await Promise.all([a, b])).sort();
  }

  it('opens the next ring once', async () => {
    const f = await fleet(4);
    const id = await rollout(f, [0, 0, 1, 1], { soakSeconds: 0 });
    await reports(f, [
      [0, 'applied'],
      [1, 'applied'],
    ]);
    expect(await judgeTwiceAtOnce(id)).toEqual(['ring_opened', 'waiting']);
    expect((await rolloutWebhooks(ctx.sql, id)).map((h) => h.type)).toEqual(['rollout.ring_opened']);
    for (const agent of f.agents.slice(2)) expect(await stateEvents(ctx.sql, agent.device_id, MERKMAL)).toHaveLength(1);
  });

  it('pauses once', async () => {
    const f = await fleet(3);
    const id = await rollout(f, [0, 0, 1]);
    await reports(f, [
      [0, 'apply_failed'],
      [1, 'apply_failed'],
    ]);
    expect(await judgeTwiceAtOnce(id)).toEqual(['not_running', 'paused']);
    expect(await auditRows('rollout.pause', id)).toHaveLength(1);
    expect((await rolloutWebhooks(ctx.sql, id)).map((h) => h.type)).toEqual(['rollout.paused']);
  });
});
