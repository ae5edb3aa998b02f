/**
 * Prompt judging: a report from a device of an open ring queues its rollout's judge within
 * a second, in the report's transaction, and a burst of reports one judging; any other
 * report queues nothing and costs no statement more. The worker's tasks: `judge_rollout`
 * judges, `judge_running_rollouts` (the crontab's safety net) queues every running one.
 */
import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { judgeJobKey } from '../../api/rollouts/schedule.ts';
import { judgeRunningRollouts } from '../../jobs/tasks/judge_running_rollouts.ts';
import { enrollAgent, type EnrolledAgent } from '../support/agent.ts';
import { request, testApp, useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { runJobs, workerDeps } from '../support/iso_builds.ts';
import { insertRollout, judgeJobs, reportOutcome, rolloutState, subscribeRolloutEvents } from './judge_support.ts';

const ctx = useTestApp();
const MERKMAL = 'libreoffice';

/** Three agents: 0 in the open ring 0, 1 in ring 1 (not open), 2 not the rollout's. */
async function rolloutWithAgents(options: { soakSeconds?: number } = {}) {
  const org = (await createOrganization(ctx)) as { id: string; default_oe_id: string };
  const agents: EnrolledAgent[] = [];
  for (let i = 0; i < 3; i++) agents.push(await enrollAgent(ctx, { organizationId: org.id }));
  await subscribeRolloutEvents(ctx.sql, org.id);
  const id = await insertRollout(ctx.sql, {
    organizationId: org.id,
    scope: 'org_unit',
    scopeId: org.default_oe_id,
    merkmal: MERKMAL,
    action: 'select',
    rings: [50, 100],
    placement: new Map([
      [agents[0]!.device_id, 0],
      [agents[1]!.device_id, 1],
    ]),
    ...options,
  });
  return { id, agents };
}

describe('POST /api/v1/agent/report: prompt judging', () => {
  it("queues the judge of the open ring's rollout within a second; a burst of reports keeps the one job", async () => {
    const { id, agents } = await rolloutWithAgents();
    expect(await judgeJobs(ctx.sql, id)).toEqual([]);
    const before = Date.now();
    await reportOutcome(ctx, agents[0]!.secret, MERKMAL, 'applied');
    const [job] = await judgeJobs(ctx.sql, id);
    expect(job!.key).toBe(judgeJobKey(id, 'soon'));
    expect(job!.run_at.getTime() - before).toBeLessThan(3_000);

    await reportOutcome(ctx, agents[0]!.secret, MERKMAL, 'apply_failed');
    expect(await judgeJobs(ctx.sql, id)).toEqual([job]);
  });

  it('queues nothing for a device of a ring not open, a device outside, another Merkmal, a paused rollout or a rejected report', async () => {
    const { id, agents } = await rolloutWithAgents();
    await reportOutcome(ctx, agents[1]!.secret, MERKMAL, 'applied');
    await reportOutcome(ctx, agents[2]!.secret, MERKMAL, 'applied');
    await reportOutcome(ctx, agents[0]!.secret, 'firefox', 'applied');
    const rejected = await ctx.request('POST', '/api/v1/agent/report', {
      token: agents[0]!.secret,
      body: {
        entries: [
          { merkmal: MERKMAL, event: 'applied' },
          { merkmal: 'not-a-merkmal', event: 'applied' },
        ],
      },
    });
    expect(rejected.status).toBe(422);
    expect(await judgeJobs(ctx.sql, id)).toEqual([]);

    await ctx.sql`update rollouts set status = 'paused', paused_reason = 'manual' where id = ${id}`;
    await reportOutcome(ctx, agents[0]!.secret, MERKMAL, 'applied');
    expect(await judgeJobs(ctx.sql, id)).toEqual([]);
  });

  it('costs a device without applied rollouts no statement more: the lookup and the insert', async () => {
    const { agents } = await rolloutWithAgents();
    let statements = 0;
    const counted = postgres(ctx.db.url, { max: 2, onnotice: () => {}, debug: () => void statements++ });
    try {
      const app = testApp(counted, ctx.config);
      const send = (agent: EnrolledAgent) =>
        request(app, 'POST', '/api/v1/agent/report', {
          token: agent.secret,
          body: { entries: [{ merkmal: MERKMAL, event: 'applied' }] },
        });
      expect((await send(agents[2]!)).status).toBe(200); // warms whatever is cached
      statements = 0;
      expect((await send(agents[2]!)).status).toBe(200);
      expect(statements).toBe(2);
      expect((await send(agents[1]!)).status).toBe(200); // in a ring not open yet
      expect(statements).toBe(4);
    } finally {
      await counted.end();
    }
  });
});

describe('the worker tasks', () => {
  it("judge_rollout judges the reported ring: ring 0's failures pause the rollout", async () => {
    const { id, agents } = await rolloutWithAgents();
    await reportOutcome(ctx, agents[0]!.secret, MERKMAL, 'apply_failed');
    await ctx.sql`update graphile_worker._private_jobs set run_at = now() where key = ${judgeJobKey(id, 'soon')}`;
    await runJobs(ctx, workerDeps(ctx));
    expect(await rolloutState(ctx.sql, id)).toMatchObject({ status: 'paused', paused_reason: 'failure_ratio' });
    const [audit] = await ctx.sql<{ request_id: string }[]>`
      select request_id from audit_events where action = 'rollout.pause' and target_id = ${id}`;
    expect(audit!.request_id).toMatch(/^job:\d+$/);
  });

  it('judge_running_rollouts queues the judge of each running rollout at once, and of no other', async () => {
    const running = await rolloutWithAgents();
    const paused = await rolloutWithAgents();
    await ctx.sql`update rollouts set status = 'paused', paused_reason = 'manual' where id = ${paused.id}`;
    const queued = await judgeRunningRollouts(ctx.sql);
    expect(queued).toContain(running.id);
    expect(queued).not.toContain(paused.id);
    const [job] = await judgeJobs(ctx.sql, running.id);
    expect(job!.key).toBe(judgeJobKey(running.id, 'next'));
    expect(job!.run_at.getTime()).toBeLessThanOrEqual(Date.now() + 1_000);
    expect(await judgeJobs(ctx.sql, paused.id)).toEqual([]);

    // Run by the worker: ring 0 has one live device that has not reported; the judge waits
    // and queues its next look itself.
    await runJobs(ctx, workerDeps(ctx));
    expect((await rolloutState(ctx.sql, running.id)).status).toBe('running');
    const [next] = await judgeJobs(ctx.sql, running.id);
    expect(next!.run_at.getTime()).toBeGreaterThan(Date.now() + 20_000);
  });
});
