/**
 * Device actions in rings (§28 "In rings", §23): a rollout with `device_action` queues the
 * action for each ring's devices as the ring opens, is judged on their results by the same
 * judge, and its abort cancels what has not started.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { judgeRollout } from '../../api/rollouts/judge.ts';
import { expireDeviceActions } from '../../jobs/tasks/expire_device_actions.ts';
import { createApiKey } from '../support/access.ts';
import { type TestResponse, useTestApp } from '../support/app.ts';
import { enrollAgent, type EnrolledAgent } from '../support/agent.ts';
import { createOrganization } from '../support/builders.ts';

const ctx = useTestApp();

interface Fleet {
  organizationId: string;
  groupId: string;
  agents: EnrolledAgent[];
}

/** An organization with a group of `n` enrolled devices. */
async function fleet(n: number): Promise<Fleet> {
  const organizationId = (await createOrganization(ctx)).id;
  const group = await ctx.request('POST', `/api/v1/organizations/${organizationId}/groups`, {
    body: { name: `Labor ${crypto.randomUUID().slice(0, 8)}` },
  });
  expect(group.status).toBe(201);
  const agents: EnrolledAgent[] = [];
  for (let i = 0; i < n; i++) {
    const agent = await enrollAgent(ctx, { organizationId });
    expect((await ctx.request('PUT', `/api/v1/groups/${group.body.id}/devices/${agent.device_id}`)).status).toBe(204);
    agents.push(agent);
  }
  return { organizationId, groupId: group.body.id, agents };
}

function createRollout(f: Fleet, body: Record<string, unknown>, token?: string): Promise<TestResponse> {
  return ctx.request('POST', `/api/v1/organizations/${f.organizationId}/rollouts`, {
    body: { scope: 'group', scope_id: f.groupId, soak_seconds: 0, ...body },
    token,
  });
}

async function created(f: Fleet, body: Record<string, unknown>): Promise<any> {
  const res = await createRollout(f, body);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

/**
 * A rollout of two rings each holding some of the fleet's devices: the hash places them,
 * so one that put all in one ring is aborted (its actions canceled) and made again.
 */
async function withBothRings(f: Fleet, body: Record<string, unknown>): Promise<any> {
  for (let tries = 0; tries < 20; tries++) {
    const r = await created(f, body);
    const queued = (await actionsOf(r.id)).length;
    if (queued > 0 && queued < f.agents.length) return r;
    expect((await ctx.request('POST', `/api/v1/rollouts/${r.id}/abort`)).status).toBe(200);
  }
  throw new Error('no rollout put devices in both rings');
}

async function actionsOf(rolloutId: string) {
  return ctx.sql<{ id: string; device_id: string; status: string; type: string; parameters: unknown }[]>`
    select id, device_id, status, type, parameters from device_actions where rollout_id = ${rolloutId}
    order by device_id`;
}

/** Each device's ring, by the rollout's own list. */
async function ringsOf(rolloutId: string): Promise<Map<string, number>> {
  const res = await ctx.request('GET', `/api/v1/rollouts/${rolloutId}/devices?limit=500`);
  expect(res.status).toBe(200);
  return new Map(res.body.items.map((d: any) => [d.device_id, d.ring]));
}

function judge(rolloutId: string) {
  return judgeRollout(ctx.sql, rolloutId, {
    pollIntervalSeconds: ctx.config.agentPollIntervalSeconds,
    requestId: 'test',
  });
}

/** The agent of each device starts its rollout action and reports `exit_code`. */
async function run(f: Fleet, actionIds: Array<{ id: string; device_id: string }>, exitCode: (i: number) => number) {
  let i = 0;
  for (const action of actionIds) {
    const agent = f.agents.find((a) => a.device_id === action.device_id)!;
    const started = await ctx.request('POST', `/api/v1/agent/actions/${action.id}/start`, { token: agent.secret });
    expect(started.status).toBe(204);
    const done = await ctx.request('POST', `/api/v1/agent/actions/${action.id}/result`, {
      token: agent.secret,
      body: { exit_code: exitCode(i++), output: 'ok', duration_ms: 10 },
    });
    expect(done.status).toBe(204);
  }
}

async function rollout(id: string): Promise<any> {
  const res = await ctx.request('GET', `/api/v1/rollouts/${id}`);
  expect(res.status).toBe(200);
  return res.body;
}

describe('creating a rollout of a device action', () => {
  it.each([
    ['a Merkmal and a device action', { merkmal: 'libreoffice', action: 'select', device_action: { type: 'reboot' } }],
    ['neither', {}],
    ['optionen with a device action', { device_action: { type: 'reboot' }, optionen: {} }],
    [
      'a script without expected_devices',
      { device_action: { type: 'script', parameters: { interpreter: 'sh', script: 'true' } } },
    ],
    ['expected_devices with a Merkmal', { merkmal: 'libreoffice', action: 'select', expected_devices: 3 }],
    ['bad parameters', { device_action: { type: 'reboot', parameters: { delay_seconds: 9999 } } }],
    ['an unknown type', { device_action: { type: 'format_disk' } }],
    ['an expiry', { device_action: { type: 'reboot', expires_at: new Date(Date.now() + 86_400_000).toISOString() } }],
  ])('refuses %s with 400 and writes nothing', async (_, body) => {
    const f = await fleet(1);
    const res = await createRollout(f, body);
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.error).toBe('invalid_request');
    expect(await ctx.sql`select 1 from rollouts where organization_id = ${f.organizationId}`).toHaveLength(0);
    expect(await ctx.sql`select 1 from device_actions where organization_id = ${f.organizationId}`).toHaveLength(0);
  });

  it('is 409 device_count_changed when the script’s confirmed count is not the scope’s count now, and writes nothing', async () => {
    const f = await fleet(3);
    const body = {
      device_action: { type: 'script', parameters: { interpreter: 'sh', script: 'true' } },
      expected_devices: 2,
    };
    const res = await createRollout(f, body);
    expect(res.status).toBe(409);
    expect(res.body.error).toBe('device_count_changed');
    expect(res.body.message).toContain('3 devices');
    expect(await ctx.sql`select 1 from rollouts where organization_id = ${f.organizationId}`).toHaveLength(0);
    expect(await ctx.sql`select 1 from device_actions where organization_id = ${f.organizationId}`).toHaveLength(0);
    // An archived device is not counted.
    expect((await ctx.request('POST', `/api/v1/devices/${f.agents[2]!.device_id}/archive`)).status).toBe(200);
    expect((await createRollout(f, body)).status).toBe(201);
  });

  it('takes the scope’s devices, queues ring 0’s actions with rollout_id, echoes device_action, audits no script text', async () => {
    const f = await fleet(6);
    const text = 'apt-get clean # geheim-rollout';
    const r = await withBothRings(f, {
      device_action: { type: 'script', parameters: { interpreter: 'bash', script: text } },
      expected_devices: 6,
      rings: [50, 100],
    });
    expect(r).toMatchObject({
      merkmal: null,
      action: null,
      optionen: null,
      device_action: { type: 'script', parameters: { interpreter: 'bash', script: text, timeout_seconds: 600 } },
      status: 'running',
      current_ring: 0,
    });
    expect(r.rings_detail.reduce((n: number, d: any) => n + d.devices, 0)).toBe(6);
    const rings = await ringsOf(r.id);
    const ring0 = [...rings]
      .filter(([, ring]) => ring === 0)
      .map(([id]) => id)
      .sort();
    const actions = await actionsOf(r.id);
    expect(actions.map((a) => a.device_id)).toEqual(ring0);
    for (const a of actions) {
      expect(a).toMatchObject({ status: 'pending', type: 'script' });
      expect(a.parameters).toEqual({ interpreter: 'bash', script: text, timeout_seconds: 600 });
    }
    const read = await ctx.request('GET', `/api/v1/actions/${actions[0]!.id}`);
    expect(read.body).toMatchObject({ rollout_id: r.id, created_by: { type: 'operator' } });
    const [audit] = await ctx.sql<{ details: any }[]>`
      select details from audit_events where target_id = ${r.id} and action = 'rollout.create'`;
    expect(audit!.details.device_action).toEqual({
      type: 'script',
      sha256: createHash('sha256').update(text).digest('hex'),
      size: Buffer.byteLength(text),
    });
    const [leak] = await ctx.sql<{ n: number }[]>`
      select (select count(*) from audit_events where details::text like '%geheim-rollout%')
           + (select count(*) from webhook_events where data::text like '%geheim-rollout%') as n`;
    expect(Number(leak!.n)).toBe(0);
    // A viewer reads the rollout without the script.
    const viewer = await createApiKey(ctx, f.organizationId, 'viewer');
    const seen = await ctx.request('GET', `/api/v1/rollouts/${r.id}`, { token: viewer.key });
    expect(seen.body.device_action.parameters.script).toBeNull();
    const listed = await ctx.request('GET', `/api/v1/organizations/${f.organizationId}/rollouts`, {
      token: viewer.key,
    });
    expect(JSON.stringify(listed.body)).not.toContain('geheim-rollout');
    // A catalog rollout reads device_action null.
    const catalog = await created(f, { merkmal: 'libreoffice', action: 'select' });
    expect(catalog.device_action).toBeNull();
  });

  it('lets several action rollouts run on one scope, beside a catalog rollout', async () => {
    const f = await fleet(2);
    await created(f, { device_action: { type: 'reboot' }, rings: [100] });
    await created(f, { device_action: { type: 'reboot' }, rings: [100] });
    await created(f, { device_action: { type: 'apply_updates', parameters: { security_only: false } }, rings: [100] });
    await created(f, { merkmal: 'libreoffice', action: 'select' });
    const [n] = await ctx.sql<{ n: number }[]>`
      select count(*)::int as n from device_actions where organization_id = ${f.organizationId}`;
    expect(n!.n).toBe(6);
    // Each device's check-in carries its three.
    const answer = await ctx.request('POST', '/api/v1/agent/checkin', { token: f.agents[0]!.secret });
    expect(answer.body.actions.map((a: any) => a.type)).toEqual(['reboot', 'reboot', 'apply_updates']);
    expect(answer.body.actions[2].parameters).toEqual({ security_only: false });
  });
});

describe('judging a rollout of a device action', () => {
  it('opens the next ring on succeeded results (converged), queues its actions, and completes; newcomers get nothing', async () => {
    const f = await fleet(6);
    const r = await withBothRings(f, { device_action: { type: 'apply_now' }, rings: [50, 100], min_reported_ratio: 1 });
    const ring0 = await actionsOf(r.id);
    const rings = await ringsOf(r.id);
    expect(await judge(r.id)).toBe('waiting');
    expect((await rollout(r.id)).rings_detail[0]).toMatchObject({
      converged: 0,
      pending: ring0.length,
      failed: 0,
      waiting_for: { reason: 'reports', reported: 0 },
    });
    await run(f, ring0, () => 0);
    const late = await enrollAgent(ctx, { organizationId: f.organizationId });
    expect((await ctx.request('PUT', `/api/v1/groups/${f.groupId}/devices/${late.device_id}`)).status).toBe(204);
    expect((await rollout(r.id)).rings_detail[0]).toMatchObject({ converged: ring0.length, pending: 0, failed: 0 });
    expect(await judge(r.id)).toBe('ring_opened');
    const all = await actionsOf(r.id);
    expect(all).toHaveLength(6);
    expect(all.map((a) => a.device_id).sort()).toEqual([...rings.keys()].sort());
    expect(all.some((a) => a.device_id === late.device_id)).toBe(false);
    const ring1 = all.filter((a) => a.status === 'pending');
    expect(ring1.length).toBe(6 - ring0.length);
    expect(await judge(r.id)).toBe('waiting');
    await run(f, ring1, () => 0);
    expect(await judge(r.id)).toBe('completed');
    const done = await rollout(r.id);
    expect(done.status).toBe('completed');
    expect(done.rings_detail.map((d: any) => d.converged)).toEqual(done.rings_detail.map((d: any) => d.devices));
    const devices = await ctx.request('GET', `/api/v1/rollouts/${r.id}/devices`);
    expect(devices.body.items.every((d: any) => d.convergence === 'converged' && d.reported === null)).toBe(true);
  });

  it('pauses on failed and expired results beyond the ratio, as the judge does for reports', async () => {
    const f = await fleet(6);
    const r = await created(f, { device_action: { type: 'reboot' }, rings: [100], max_failure_ratio: 0.2 });
    const actions = await actionsOf(r.id);
    expect(actions).toHaveLength(6);
    // Three succeed, one fails, one expires (overdue, then swept), one still pending.
    await run(f, actions.slice(0, 4), (i) => (i === 3 ? 1 : 0));
    await ctx.sql`update device_actions set expires_at = now() - interval '1 second' where id = ${actions[4]!.id}`;
    expect((await rollout(r.id)).rings_detail[0]).toMatchObject({ converged: 3, failed: 2, pending: 1 });
    expect(await expireDeviceActions(ctx.sql)).toBeGreaterThanOrEqual(1);
    // The sweep asked the judge to look soon.
    const [job] = await ctx.sql<{ n: number }[]>`
      select count(*)::int as n from graphile_worker.jobs where key = ${`judge_rollout:${r.id}:soon`}`;
    expect(job!.n).toBe(1);
    expect(await judge(r.id)).toBe('paused');
    expect(await rollout(r.id)).toMatchObject({ status: 'paused', paused_reason: 'failure_ratio' });
    const failed = await ctx.request('GET', `/api/v1/rollouts/${r.id}/devices?convergence=failed`);
    expect(failed.body.items.map((d: any) => d.device_id).sort()).toEqual(
      [actions[3]!.device_id, actions[4]!.device_id].sort(),
    );
  });

  it('asks the judge to look soon after a result of a rollout action', async () => {
    const f = await fleet(1);
    const r = await created(f, { device_action: { type: 'reboot' }, rings: [100] });
    await ctx.sql`delete from graphile_worker._private_jobs where key like ${`judge_rollout:${r.id}:%`}`;
    await run(f, await actionsOf(r.id), () => 0);
    const [job] = await ctx.sql<{ n: number }[]>`
      select count(*)::int as n from graphile_worker.jobs where key = ${`judge_rollout:${r.id}:soon`}`;
    expect(job!.n).toBe(1);
  });

  it('abort cancels the actions not yet started; a running one runs to its end; no later ring opens', async () => {
    const f = await fleet(4);
    const r = await created(f, { device_action: { type: 'apply_updates' }, rings: [100] });
    const actions = await actionsOf(r.id);
    const [running, delivered, ...pending] = actions;
    const agentOf = (deviceId: string) => f.agents.find((a) => a.device_id === deviceId)!;
    expect(
      (
        await ctx.request('POST', `/api/v1/agent/actions/${running!.id}/start`, {
          token: agentOf(running!.device_id).secret,
        })
      ).status,
    ).toBe(204);
    expect(
      (await ctx.request('POST', '/api/v1/agent/checkin', { token: agentOf(delivered!.device_id).secret })).status,
    ).toBe(200);
    const aborted = await ctx.request('POST', `/api/v1/rollouts/${r.id}/abort`);
    expect(aborted.status).toBe(200);
    expect(aborted.body.status).toBe('aborted');
    const after = new Map((await actionsOf(r.id)).map((a) => [a.id, a.status]));
    expect(after.get(running!.id)).toBe('running');
    expect(after.get(delivered!.id)).toBe('canceled');
    for (const p of pending) expect(after.get(p.id)).toBe('canceled');
    const start = await ctx.request('POST', `/api/v1/agent/actions/${delivered!.id}/start`, {
      token: agentOf(delivered!.device_id).secret,
    });
    expect(start.status).toBe(409);
    expect(start.body.error).toBe('action_not_pending');
    const [audit] = await ctx.sql<{ details: any }[]>`
      select details from audit_events where target_id = ${r.id} and action = 'rollout.abort'`;
    expect(audit!.details).toEqual({ device_action: { type: 'apply_updates' }, from: 'running', to: 'aborted' });
  });

  it('sends the rollout webhooks with the action’s type only', async () => {
    const f = await fleet(1);
    await ctx.request('POST', `/api/v1/organizations/${f.organizationId}/webhooks`, {
      body: { url: 'https://hooks.example.com/rollouts', events: ['rollout.ring_opened', 'rollout.completed'] },
    });
    const r = await created(f, {
      device_action: { type: 'script', parameters: { interpreter: 'sh', script: 'echo webhook-geheim' } },
      expected_devices: 1,
      rings: [100],
    });
    await run(f, await actionsOf(r.id), () => 0);
    expect(await judge(r.id)).toBe('completed');
    const hooks = await ctx.sql<{ type: string; data: any }[]>`
      select type, data from webhook_events where data ->> 'rollout_id' = ${r.id} order by created_at, type`;
    expect(hooks.map((h) => h.type)).toEqual(['rollout.ring_opened', 'rollout.completed']);
    for (const h of hooks) {
      expect(h.data).toMatchObject({ merkmal: null, action: null, device_action: { type: 'script' } });
      expect(JSON.stringify(h.data)).not.toContain('webhook-geheim');
    }
  });
});
