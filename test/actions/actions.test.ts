/**
 * Device actions (§28): creation with its defaults and limits, the check-in's delivery and
 * its ETag, the agent's start and result with every refusal, cancel, expiry, the viewer's
 * redacted read, tenancy, audit and webhooks; never a script or an output outside the action.
 */
import { Buffer } from 'node:buffer';
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { request, testApp, type TestContext, type TestResponse, useTestApp } from '../support/app.ts';
import { capturingLogger } from '../support/iso_builds.ts';
import { enrollAgent, type EnrolledAgent } from '../support/agent.ts';
import { createApiKey } from '../support/access.ts';
import { expireDeviceActions } from '../../jobs/tasks/expire_device_actions.ts';

const ctx = useTestApp();

/** A check-in, with the tag of an earlier answer when given. */
function checkin(c: TestContext, secret: string, body?: unknown, etag?: string): Promise<TestResponse> {
  return c.request('POST', '/api/v1/agent/checkin', {
    token: secret,
    body,
    headers: etag === undefined ? {} : { 'if-none-match': etag },
  });
}

function createAction(c: TestContext, deviceId: string, body: unknown, token?: string): Promise<TestResponse> {
  return c.request('POST', `/api/v1/devices/${deviceId}/actions`, { body, token });
}

function start(secret: string, id: string): Promise<TestResponse> {
  return ctx.request('POST', `/api/v1/agent/actions/${id}/start`, { token: secret });
}

function result(secret: string, id: string, body: unknown): Promise<TestResponse> {
  return ctx.request('POST', `/api/v1/agent/actions/${id}/result`, { token: secret, body });
}

async function created(deviceId: string, body: unknown): Promise<any> {
  const res = await createAction(ctx, deviceId, body);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

async function stored(id: string) {
  const [row] = await ctx.sql<{ status: string; delivered_at: Date | null; started_at: Date | null }[]>`
    select status, delivered_at, started_at from device_actions where id = ${id}`;
  return row!;
}

/** Makes the action overdue, as time would (an expiry is at least 60 s ahead). */
async function makeOverdue(id: string): Promise<void> {
  await ctx.sql`update device_actions set expires_at = now() - interval '1 second', created_at = now() - interval '2 seconds'
                where id = ${id}`;
}

async function subscribe(organizationId: string): Promise<void> {
  const res = await ctx.request('POST', `/api/v1/organizations/${organizationId}/webhooks`, {
    body: { url: 'https://hooks.example.com/actions', events: ['action.finished'] },
  });
  expect(res.status).toBe(201);
}

async function webhooksOf(organizationId: string) {
  return ctx.sql<{ type: string; data: Record<string, unknown> }[]>`
    select type, data from webhook_events where organization_id = ${organizationId} and type = 'action.finished'
    order by created_at`;
}

const SCRIPT = 'echo "hello from the fleet"\nexit 0\n';

describe('creating an action', () => {
  it('answers 201 with the action pending, its defaults filled in, expiring in 7 days', async () => {
    const agent = await enrollAgent(ctx);
    const before = Date.now();
    const reboot = await created(agent.device_id, { type: 'reboot' });
    expect(reboot).toMatchObject({
      organization_id: agent.organization_id,
      device_id: agent.device_id,
      type: 'reboot',
      parameters: { delay_seconds: 60 },
      status: 'pending',
      created_by: { type: 'operator' },
      delivered_at: null,
      started_at: null,
      finished_at: null,
      result: null,
      rollout_id: null,
    });
    const expiresIn = Date.parse(reboot.expires_at) - Date.parse(reboot.created_at);
    expect(expiresIn).toBe(7 * 86_400_000);
    expect(Date.parse(reboot.created_at)).toBeGreaterThanOrEqual(before - 1000);
    expect((await created(agent.device_id, { type: 'apply_now' })).parameters).toEqual({});
    expect((await created(agent.device_id, { type: 'apply_updates' })).parameters).toEqual({ security_only: true });
    const script = await created(agent.device_id, {
      type: 'script',
      parameters: { interpreter: 'bash', script: SCRIPT },
    });
    expect(script.parameters).toEqual({ interpreter: 'bash', script: SCRIPT, timeout_seconds: 600 });
    const given = await created(agent.device_id, {
      type: 'reboot',
      parameters: { delay_seconds: 0, message: 'Neustart' },
      expires_at: new Date(Date.now() + 3_600_000).toISOString(),
    });
    expect(given.parameters).toEqual({ delay_seconds: 0, message: 'Neustart' });
    const read = await ctx.request('GET', `/api/v1/actions/${script.id}`);
    expect(read.status).toBe(200);
    expect(read.body).toEqual(script);
  });

  it.each([
    ['an unknown type', { type: 'shutdown' }],
    ['a script without its text', { type: 'script', parameters: { interpreter: 'sh' } }],
    ['an empty script', { type: 'script', parameters: { interpreter: 'sh', script: '' } }],
    ['an unknown interpreter', { type: 'script', parameters: { interpreter: 'perl', script: 'print 1' } }],
    ['a timeout of 0', { type: 'script', parameters: { interpreter: 'sh', script: 'true', timeout_seconds: 0 } }],
    [
      'a timeout over an hour',
      { type: 'script', parameters: { interpreter: 'sh', script: 'x', timeout_seconds: 3601 } },
    ],
    ['a reboot delay over an hour', { type: 'reboot', parameters: { delay_seconds: 3601 } }],
    ['a negative reboot delay', { type: 'reboot', parameters: { delay_seconds: -1 } }],
    ['a message of 201 characters', { type: 'reboot', parameters: { message: 'x'.repeat(201) } }],
    ['a message with a newline', { type: 'reboot', parameters: { message: 'a\nb' } }],
    ['an unknown parameter', { type: 'apply_now', parameters: { force: true } }],
    ['security_only not a boolean', { type: 'apply_updates', parameters: { security_only: 'yes' } }],
    ['an unknown field', { type: 'reboot', status: 'succeeded' }],
    ['an expiry 30 s ahead', { type: 'reboot', expires_at: new Date(Date.now() + 30_000).toISOString() }],
    ['an expiry in the past', { type: 'reboot', expires_at: new Date(Date.now() - 60_000).toISOString() }],
    ['an expiry 31 days ahead', { type: 'reboot', expires_at: new Date(Date.now() + 31 * 86_400_000).toISOString() }],
    ['an expiry that is no time', { type: 'reboot', expires_at: 'tomorrow' }],
  ])('refuses %s with 400 and stores nothing', async (_, body) => {
    const agent = await enrollAgent(ctx);
    const res = await createAction(ctx, agent.device_id, body);
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.error).toBe('invalid_request');
    expect(await ctx.sql`select 1 from device_actions where device_id = ${agent.device_id}`).toHaveLength(0);
    expect(
      await ctx.sql`select 1 from audit_events where organization_id = ${agent.organization_id} and action = 'action.create'`,
    ).toHaveLength(0);
  });

  it('takes a script of exactly 64 KiB of UTF-8 and refuses one byte more (bytes, not characters)', async () => {
    const agent = await enrollAgent(ctx);
    // "ä" is two bytes: 32,768 of them are 65,536 bytes.
    const full = 'ä'.repeat(32_768);
    expect((await createAction(ctx, agent.device_id, script(full))).status).toBe(201);
    const over = await createAction(ctx, agent.device_id, script(`${full}x`));
    expect(over.status).toBe(400);
    expect(over.body.details[0].path).toEqual(['parameters', 'script']);
  });

  it('is 404 for an unknown device, 409 device_archived / device_deprovisioned, and writes nothing then', async () => {
    expect((await createAction(ctx, crypto.randomUUID(), { type: 'reboot' })).status).toBe(404);
    expect((await createAction(ctx, 'not-a-uuid', { type: 'reboot' })).status).toBe(404);
    const deprovisioned = await enrollAgent(ctx);
    expect((await ctx.request('POST', `/api/v1/devices/${deprovisioned.device_id}/deprovision`)).status).toBe(200);
    const refused = await createAction(ctx, deprovisioned.device_id, { type: 'reboot' });
    expect(refused.status).toBe(409);
    expect(refused.body).toEqual({
      error: 'device_deprovisioned',
      message: `device ${deprovisioned.device_id} is deprovisioned: it takes no actions until an admin reprovisions it`,
    });
    const archived = await enrollAgent(ctx);
    expect((await ctx.request('POST', `/api/v1/devices/${archived.device_id}/archive`)).status).toBe(200);
    const refusedArchived = await createAction(ctx, archived.device_id, { type: 'reboot' });
    expect(refusedArchived.status).toBe(409);
    expect(refusedArchived.body.error).toBe('device_archived');
    expect(
      await ctx.sql`select 1 from device_actions where device_id in (${deprovisioned.device_id}, ${archived.device_id})`,
    ).toHaveLength(0);
  });

  it("audits action.create with a script's SHA-256 and size, never its text; a cancel with its type", async () => {
    const agent = await enrollAgent(ctx);
    const admin = await createApiKey(ctx, agent.organization_id, 'admin', { name: 'helpdesk' });
    const text = 'echo geheim-4711\n';
    const action = await (async () => {
      const res = await createAction(ctx, agent.device_id, script(text), admin.key);
      expect(res.status).toBe(201);
      return res.body;
    })();
    expect(action.created_by).toEqual({ type: 'api_key', api_key_id: admin.id, name: 'helpdesk' });
    await created(agent.device_id, { type: 'reboot' });
    expect((await ctx.request('POST', `/api/v1/actions/${action.id}/cancel`, { token: admin.key })).status).toBe(200);
    const audit = await ctx.request(
      'GET',
      `/api/v1/organizations/${agent.organization_id}/audit-events?target_id=${action.id}`,
    );
    const byAction = Object.fromEntries(audit.body.items.map((e: any) => [e.action, e]));
    expect(byAction['action.create']).toMatchObject({
      target_type: 'action',
      target_id: action.id,
      actor: { type: 'api_key', api_key_id: admin.id, name: 'helpdesk' },
      details: { type: 'script', sha256: createHash('sha256').update(text).digest('hex'), size: 17 },
    });
    expect(byAction['action.cancel'].details).toEqual({ type: 'script' });
    const [leak] = await ctx.sql<{ n: number }[]>`
      select (select count(*) from audit_events where details::text like '%geheim-4711%')
           + (select count(*) from webhook_events where data::text like '%geheim-4711%')
           + (select count(*) from device_merkmal_events where payload::text like '%geheim-4711%') as n`;
    expect(Number(leak!.n)).toBe(0);
    const [reboot] = await ctx.sql<{ details: unknown }[]>`
      select details from audit_events where organization_id = ${agent.organization_id} and action = 'action.create'
      and details ->> 'type' = 'reboot'`;
    expect(reboot!.details).toEqual({ type: 'reboot' });
  });
});

function script(text: string, extra: Record<string, unknown> = {}) {
  return { type: 'script', parameters: { interpreter: 'sh', script: text, ...extra } };
}

describe('delivery in the check-in', () => {
  it('keeps a device without actions at 304, answers 200 with the action once queued, then 304 again', async () => {
    const agent = await enrollAgent(ctx);
    const first = await checkin(ctx, agent.secret);
    expect(first.status).toBe(200);
    expect(first.body.actions).toEqual([]);
    const etag = first.headers.get('etag')!;
    expect((await checkin(ctx, agent.secret, undefined, etag)).status).toBe(304);

    const action = await created(agent.device_id, script(SCRIPT, { timeout_seconds: 30 }));
    // Another device of the organization keeps its 304.
    const other = await enrollAgent(ctx, { organizationId: agent.organization_id });
    const otherTag = (await checkin(ctx, other.secret)).headers.get('etag')!;
    await created(agent.device_id, { type: 'reboot' });
    expect((await checkin(ctx, other.secret, undefined, otherTag)).status).toBe(304);

    const delivered = await checkin(ctx, agent.secret, undefined, etag);
    expect(delivered.status).toBe(200);
    expect(delivered.headers.get('etag')).not.toBe(etag);
    expect(delivered.body.actions).toHaveLength(2);
    expect(delivered.body.actions[0]).toEqual({
      id: action.id,
      type: 'script',
      parameters: { interpreter: 'sh', script: SCRIPT, timeout_seconds: 30 },
      expires_at: action.expires_at,
    });
    expect(delivered.body.actions[1]).toMatchObject({ type: 'reboot', parameters: { delay_seconds: 60 } });
    const row = await stored(action.id);
    expect(row.status).toBe('delivered');
    expect(row.delivered_at).not.toBeNull();
    expect((await ctx.request('GET', `/api/v1/actions/${action.id}`)).body.status).toBe('delivered');

    // Delivered actions stay in the answer until started: the same content, a 304.
    const tag = delivered.headers.get('etag')!;
    expect((await checkin(ctx, agent.secret, undefined, tag)).status).toBe(304);
    // Started: it leaves the answer.
    expect((await start(agent.secret, action.id)).status).toBe(204);
    const after = await checkin(ctx, agent.secret, undefined, tag);
    expect(after.status).toBe(200);
    expect(after.body.actions.map((a: any) => a.type)).toEqual(['reboot']);
  });

  it('carries at most 10, oldest first with ties broken by id, and not those past their expiry', async () => {
    const agent = await enrollAgent(ctx);
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) ids.push((await created(agent.device_id, { type: 'apply_now' })).id);
    // Two with the same creation time: the lower id first.
    await ctx.sql`update device_actions set created_at = '2026-01-01T00:00:00Z' where id = any(${ids.slice(0, 2)}::uuid[])`;
    await makeOverdue(ids[2]!);
    const res = await checkin(ctx, agent.secret);
    expect(res.status).toBe(200);
    const expected = [...ids.slice(0, 2).sort(), ...ids.slice(3, 11)];
    expect(res.body.actions.map((a: any) => a.id)).toEqual(expected);
    // The eleventh waits for the next answer; the overdue one is never delivered.
    expect((await stored(ids[11]!)).status).toBe('pending');
    expect((await stored(ids[2]!)).status).toBe('pending');
    expect((await ctx.request('GET', `/api/v1/actions/${ids[2]}`)).body.status).toBe('expired');
  });

  it('an action canceled before delivery leaves the answer, and the device gets back its old tag', async () => {
    const agent = await enrollAgent(ctx);
    const plain = await checkin(ctx, agent.secret);
    const action = await created(agent.device_id, { type: 'reboot' });
    const withAction = await checkin(ctx, agent.secret, undefined, plain.headers.get('etag')!);
    expect(withAction.status).toBe(200);
    expect((await ctx.request('POST', `/api/v1/actions/${action.id}/cancel`)).status).toBe(200);
    const again = await checkin(ctx, agent.secret, undefined, withAction.headers.get('etag')!);
    expect(again.status).toBe(200);
    expect(again.body.actions).toEqual([]);
    expect(again.headers.get('etag')).toBe(plain.headers.get('etag'));
    const [device] = await ctx.sql<{ actions_open: boolean }[]>`
      select actions_open from devices where id = ${agent.device_id}`;
    expect(device!.actions_open).toBe(false);
  });
});

describe("the agent's start and result", () => {
  async function deliveredAction(agent: EnrolledAgent, body: unknown = { type: 'apply_now' }) {
    const action = await created(agent.device_id, body);
    expect((await checkin(ctx, agent.secret)).status).toBe(200);
    return action;
  }

  it('runs pending or delivered → running → succeeded, a start retried answers 204 again, the result is kept', async () => {
    const agent = await enrollAgent(ctx);
    await subscribe(agent.organization_id);
    const action = await deliveredAction(agent, script(SCRIPT));
    expect((await start(agent.secret, action.id)).status).toBe(204);
    const running = (await ctx.request('GET', `/api/v1/actions/${action.id}`)).body;
    expect(running.status).toBe('running');
    expect(running.started_at).not.toBeNull();
    expect((await start(agent.secret, action.id)).status).toBe(204);
    expect((await ctx.request('GET', `/api/v1/actions/${action.id}`)).body.started_at).toBe(running.started_at);
    const done = await result(agent.secret, action.id, {
      exit_code: 0,
      output: 'hello from the fleet\n',
      duration_ms: 12,
    });
    expect(done.status, JSON.stringify(done.body)).toBe(204);
    const read = (await ctx.request('GET', `/api/v1/actions/${action.id}`)).body;
    expect(read).toMatchObject({
      status: 'succeeded',
      result: { exit_code: 0, output: 'hello from the fleet\n', duration_ms: 12, details: {} },
    });
    expect(read.finished_at).not.toBeNull();
    expect(await webhooksOf(agent.organization_id)).toEqual([
      {
        type: 'action.finished',
        data: { action_id: action.id, device_id: agent.device_id, type: 'script', status: 'succeeded', exit_code: 0 },
      },
    ]);
    // A second result changes nothing.
    const second = await result(agent.secret, action.id, { exit_code: 1, output: 'again', duration_ms: 1 });
    expect(second.status).toBe(409);
    expect(second.body.error).toBe('action_finished');
    expect((await ctx.request('GET', `/api/v1/actions/${action.id}`)).body).toEqual(read);
    expect(await webhooksOf(agent.organization_id)).toHaveLength(1);
    // Nor does it start again.
    const restart = await start(agent.secret, action.id);
    expect(restart.status).toBe(409);
    expect(restart.body.error).toBe('action_finished');
  });

  it('a non-zero exit code is failed, with its details; a pending action may be started directly', async () => {
    const agent = await enrollAgent(ctx);
    const action = await created(agent.device_id, { type: 'apply_updates' });
    expect((await start(agent.secret, action.id)).status).toBe(204);
    const row = await stored(action.id);
    expect(row.status).toBe('running');
    expect(row.delivered_at).not.toBeNull();
    const details = { upgraded: [{ name: 'fleet-test-pkg', from: '1.0-1', to: '1.1-1' }], reboot_required: false };
    expect(
      (await result(agent.secret, action.id, { exit_code: 100, output: 'E: x', duration_ms: 3, details })).status,
    ).toBe(204);
    const read = (await ctx.request('GET', `/api/v1/actions/${action.id}`)).body;
    expect(read.status).toBe('failed');
    expect(read.result).toEqual({ exit_code: 100, output: 'E: x', duration_ms: 3, details });
  });

  it('keeps the last 64 KiB of a longer output, cut at a character', async () => {
    const agent = await enrollAgent(ctx);
    const action = await deliveredAction(agent, script('yes | head -c 100000'));
    expect((await start(agent.secret, action.id)).status).toBe(204);
    const output = `${'a'.repeat(10)}${'ä'.repeat(40_000)}END`;
    expect((await result(agent.secret, action.id, { exit_code: 0, output, duration_ms: 5 })).status).toBe(204);
    const kept = (await ctx.request('GET', `/api/v1/actions/${action.id}`)).body.result.output as string;
    expect(kept.endsWith('END')).toBe(true);
    expect(Buffer.byteLength(kept, 'utf8')).toBeLessThanOrEqual(65_536);
    expect(Buffer.byteLength(kept, 'utf8')).toBeGreaterThan(65_533);
    expect(kept.startsWith('ä')).toBe(true);
  });

  it('refuses a result for an action that is not running (409 action_not_running), and changes nothing', async () => {
    const agent = await enrollAgent(ctx);
    const action = await deliveredAction(agent);
    const res = await result(agent.secret, action.id, { exit_code: 0, output: '', duration_ms: 1 });
    expect(res.status).toBe(409);
    expect(res.body.error).toBe('action_not_running');
    expect((await stored(action.id)).status).toBe('delivered');
  });

  it('refuses to start a canceled or expired action (409 action_not_pending); expiry is judged at the start', async () => {
    const agent = await enrollAgent(ctx);
    await subscribe(agent.organization_id);
    const canceled = await deliveredAction(agent);
    expect((await ctx.request('POST', `/api/v1/actions/${canceled.id}/cancel`)).status).toBe(200);
    const refused = await start(agent.secret, canceled.id);
    expect(refused.status).toBe(409);
    expect(refused.body.error).toBe('action_not_pending');
    expect((await stored(canceled.id)).status).toBe('canceled');

    const overdue = await deliveredAction(agent, { type: 'reboot' });
    await makeOverdue(overdue.id);
    const late = await start(agent.secret, overdue.id);
    expect(late.status).toBe(409);
    expect(late.body.error).toBe('action_not_pending');
    const row = await stored(overdue.id);
    expect(row.status).toBe('expired');
    expect(row.started_at).toBeNull();
    // Expired: the webhook with exit_code null; canceled: none.
    expect((await webhooksOf(agent.organization_id)).map((w) => w.data)).toEqual([
      { action_id: overdue.id, device_id: agent.device_id, type: 'reboot', status: 'expired', exit_code: null },
    ]);
    const noResult = await result(agent.secret, overdue.id, { exit_code: 0, output: '', duration_ms: 1 });
    expect(noResult.status).toBe(409);
    expect(noResult.body.error).toBe('action_not_running');
  });

  it("is 404 for another device's action and for none, on start and on result, and changes nothing", async () => {
    const agent = await enrollAgent(ctx);
    const neighbour = await enrollAgent(ctx, { organizationId: agent.organization_id });
    const action = await deliveredAction(agent);
    for (const id of [action.id, crypto.randomUUID(), 'not-a-uuid']) {
      const s = await start(neighbour.secret, id);
      expect(s.status, id).toBe(404);
      expect(s.body.error).toBe('not_found');
      const r = await result(neighbour.secret, id, { exit_code: 0, output: '', duration_ms: 1 });
      expect(r.status, id).toBe(404);
    }
    expect((await stored(action.id)).status).toBe('delivered');
  });

  it('checks the agent secret first (401), and refuses a deprovisioned device (403)', async () => {
    const agent = await enrollAgent(ctx);
    const action = await deliveredAction(agent);
    expect((await start('x'.repeat(43), action.id)).status).toBe(401);
    expect((await result('x'.repeat(43), action.id, {})).status).toBe(401);
    expect((await ctx.request('POST', `/api/v1/agent/actions/${action.id}/start`, { token: null })).status).toBe(401);
    expect((await ctx.request('POST', `/api/v1/devices/${agent.device_id}/deprovision`)).status).toBe(200);
    const refused = await start(agent.secret, action.id);
    expect(refused.status).toBe(403);
    expect(refused.body.error).toBe('device_deprovisioned');
  });

  it('refuses a malformed result with 400', async () => {
    const agent = await enrollAgent(ctx);
    const action = await deliveredAction(agent);
    expect((await start(agent.secret, action.id)).status).toBe(204);
    for (const body of [
      {},
      { exit_code: 0, output: '' },
      { exit_code: 'zero', output: '', duration_ms: 1 },
      { exit_code: 0, output: '', duration_ms: -1 },
      { exit_code: 0, output: '', duration_ms: 1, status: 'succeeded' },
      { exit_code: 0, output: '', duration_ms: 1, details: [] },
    ]) {
      const res = await result(agent.secret, action.id, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
    }
    expect((await stored(action.id)).status).toBe('running');
  });
});

describe('cancel', () => {
  it('cancels pending and delivered actions; anything else is 409 action_not_cancelable', async () => {
    const agent = await enrollAgent(ctx);
    const pending = await created(agent.device_id, { type: 'reboot' });
    const canceled = await ctx.request('POST', `/api/v1/actions/${pending.id}/cancel`);
    expect(canceled.status).toBe(200);
    expect(canceled.body.status).toBe('canceled');
    expect(canceled.body.finished_at).not.toBeNull();
    const again = await ctx.request('POST', `/api/v1/actions/${pending.id}/cancel`);
    expect(again.status).toBe(409);
    expect(again.body).toEqual({
      error: 'action_not_cancelable',
      message: `action ${pending.id} is canceled; only a pending or delivered action can be canceled`,
    });

    const delivered = await created(agent.device_id, { type: 'apply_now' });
    expect((await checkin(ctx, agent.secret)).body.actions).toHaveLength(1);
    expect((await ctx.request('POST', `/api/v1/actions/${delivered.id}/cancel`)).status).toBe(200);

    const running = await created(agent.device_id, { type: 'apply_now' });
    expect((await start(agent.secret, running.id)).status).toBe(204);
    expect((await ctx.request('POST', `/api/v1/actions/${running.id}/cancel`)).status).toBe(409);
    expect((await result(agent.secret, running.id, { exit_code: 0, output: '', duration_ms: 1 })).status).toBe(204);
    expect((await ctx.request('POST', `/api/v1/actions/${running.id}/cancel`)).body.error).toBe(
      'action_not_cancelable',
    );

    const overdue = await created(agent.device_id, { type: 'apply_now' });
    await makeOverdue(overdue.id);
    expect((await ctx.request('POST', `/api/v1/actions/${overdue.id}/cancel`)).body.error).toBe(
      'action_not_cancelable',
    );
    expect((await ctx.request('POST', `/api/v1/actions/${crypto.randomUUID()}/cancel`)).status).toBe(404);
    const audits = await ctx.sql`
      select 1 from audit_events where organization_id = ${agent.organization_id} and action = 'action.cancel'`;
    expect(audits).toHaveLength(2);
  });

  it('deprovisioning or archiving a device cancels its pending and delivered actions; reprovisioning revives none', async () => {
    const agent = await enrollAgent(ctx);
    const delivered = await created(agent.device_id, { type: 'reboot' });
    expect((await checkin(ctx, agent.secret)).status).toBe(200);
    const pending = await created(agent.device_id, { type: 'apply_now' });
    const running = await created(agent.device_id, { type: 'apply_updates' });
    expect((await start(agent.secret, running.id)).status).toBe(204);
    expect((await ctx.request('POST', `/api/v1/devices/${agent.device_id}/deprovision`)).status).toBe(200);
    expect((await stored(delivered.id)).status).toBe('canceled');
    expect((await stored(pending.id)).status).toBe('canceled');
    expect((await stored(running.id)).status).toBe('running');
    expect((await ctx.request('POST', `/api/v1/devices/${agent.device_id}/reprovision`)).status).toBe(200);
    expect((await stored(pending.id)).status).toBe('canceled');

    const other = await enrollAgent(ctx);
    const queued = await created(other.device_id, { type: 'reboot' });
    expect((await ctx.request('POST', `/api/v1/devices/${other.device_id}/archive`)).status).toBe(200);
    expect((await stored(queued.id)).status).toBe('canceled');
    const [flags] = await ctx.sql<{ n: number }[]>`
      select count(*)::int as n from devices where id in (${agent.device_id}, ${other.device_id}) and actions_open`;
    expect(flags!.n).toBe(0);
  });
});

describe('concurrent writers', () => {
  it('cancels, starts, deprovisions and sweeps at once without a deadlock or a lost flag', async () => {
    const agents = await Promise.all([0, 1, 2, 3].map(() => enrollAgent(ctx)));
    const actions = await Promise.all(
      agents.flatMap((a) => [0, 1, 2].map(() => created(a.device_id, { type: 'apply_now' }))),
    );
    await makeOverdue(actions[2]!.id);
    const calls: Array<Promise<TestResponse | number>> = [];
    actions.forEach((action, i) => {
      const agent = agents[Math.floor(i / 3)]!;
      calls.push(
        i % 3 === 0 ? start(agent.secret, action.id) : ctx.request('POST', `/api/v1/actions/${action.id}/cancel`),
      );
    });
    for (const agent of agents) calls.push(ctx.request('POST', `/api/v1/devices/${agent.device_id}/deprovision`));
    calls.push(expireDeviceActions(ctx.sql));
    const answers = await Promise.all(calls);
    for (const answer of answers) {
      if (typeof answer !== 'number') expect(answer.status, JSON.stringify(answer.body)).toBeLessThan(500);
    }
    const rows = await ctx.sql<{ status: string }[]>`
      select status from device_actions where id = any(${actions.map((a) => a.id)}::uuid[])`;
    for (const row of rows) expect(['running', 'canceled', 'expired']).toContain(row.status);
    const [open] = await ctx.sql<{ n: number }[]>`
      select count(*)::int as n from devices
      where id = any(${agents.map((a) => a.device_id)}::uuid[]) and actions_open`;
    expect(open!.n).toBe(0);
  });
});

describe('expiry', () => {
  it('the sweep marks overdue actions expired in batches, with the webhook; running ones stay', async () => {
    const agent = await enrollAgent(ctx);
    await subscribe(agent.organization_id);
    const overdue = await created(agent.device_id, { type: 'apply_now' });
    const overdueToo = await created(agent.device_id, { type: 'apply_now' });
    const fresh = await created(agent.device_id, { type: 'apply_now' });
    const running = await created(agent.device_id, { type: 'reboot' });
    expect((await start(agent.secret, running.id)).status).toBe(204);
    await makeOverdue(overdue.id);
    await makeOverdue(overdueToo.id);
    await ctx.sql`update device_actions set expires_at = now() - interval '1 second' where id = ${running.id}`;
    // Batches of one: the run goes on until none is left.
    expect(await expireDeviceActions(ctx.sql, 1)).toBeGreaterThanOrEqual(2);
    expect((await stored(overdueToo.id)).status).toBe('expired');
    expect((await stored(overdue.id)).status).toBe('expired');
    expect((await stored(fresh.id)).status).toBe('pending');
    expect((await stored(running.id)).status).toBe('running');
    const read = (await ctx.request('GET', `/api/v1/actions/${overdue.id}`)).body;
    expect(read.finished_at).toBe(read.expires_at);
    expect((await webhooksOf(agent.organization_id)).map((w) => w.data['action_id']).sort()).toEqual(
      [overdue.id, overdueToo.id].sort(),
    );
    expect(await expireDeviceActions(ctx.sql)).toBe(0);
  });
});

describe('reading actions', () => {
  it('lists a device’s actions newest first, filters by status (an overdue one as expired), pages', async () => {
    const agent = await enrollAgent(ctx);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await created(agent.device_id, { type: 'apply_now' })).id);
    await makeOverdue(ids[0]!);
    const page = await ctx.request('GET', `/api/v1/devices/${agent.device_id}/actions?limit=3`);
    expect(page.status).toBe(200);
    expect(page.body.items.map((a: any) => a.id)).toEqual([ids[4], ids[3], ids[2]]);
    const next = await ctx.request(
      'GET',
      `/api/v1/devices/${agent.device_id}/actions?limit=3&cursor=${page.body.next_cursor}`,
    );
    expect(next.body.items.map((a: any) => a.id)).toEqual([ids[1], ids[0]]);
    expect(next.body.next_cursor).toBeNull();
    const expired = await ctx.request('GET', `/api/v1/devices/${agent.device_id}/actions?status=expired`);
    expect(expired.body.items.map((a: any) => a.id)).toEqual([ids[0]]);
    const pending = await ctx.request('GET', `/api/v1/devices/${agent.device_id}/actions?status=pending`);
    expect(pending.body.items).toHaveLength(4);
    expect((await ctx.request('GET', `/api/v1/devices/${agent.device_id}/actions?status=done`)).status).toBe(400);
    expect((await ctx.request('GET', `/api/v1/devices/${agent.device_id}/actions?cursor=xyz`)).status).toBe(400);
    expect((await ctx.request('GET', `/api/v1/devices/${crypto.randomUUID()}/actions`)).status).toBe(404);
  });

  it("shows a viewer type, status and times, never a script's text or an output", async () => {
    const agent = await enrollAgent(ctx);
    const viewer = await createApiKey(ctx, agent.organization_id, 'viewer');
    const action = await created(agent.device_id, script('cat /etc/shadow'));
    expect((await start(agent.secret, action.id)).status).toBe(204);
    expect(
      (await result(agent.secret, action.id, { exit_code: 0, output: 'root:secret', duration_ms: 2 })).status,
    ).toBe(204);
    const read = await ctx.request('GET', `/api/v1/actions/${action.id}`, { token: viewer.key });
    expect(read.status).toBe(200);
    expect(read.body.parameters).toEqual({ interpreter: 'sh', script: null, timeout_seconds: 600 });
    expect(read.body.result).toEqual({ exit_code: 0, output: null, duration_ms: 2, details: {} });
    expect(read.body.status).toBe('succeeded');
    const list = await ctx.request('GET', `/api/v1/devices/${agent.device_id}/actions`, { token: viewer.key });
    expect(JSON.stringify(list.body)).not.toContain('shadow');
    expect(JSON.stringify(list.body)).not.toContain('root:secret');
    expect(list.body.items[0].parameters.script).toBeNull();
    // An admin key reads both.
    const admin = await createApiKey(ctx, agent.organization_id, 'admin');
    const full = await ctx.request('GET', `/api/v1/actions/${action.id}`, { token: admin.key });
    expect(full.body.parameters.script).toBe('cat /etc/shadow');
    expect(full.body.result.output).toBe('root:secret');
    // A viewer may neither ask nor cancel.
    expect((await createAction(ctx, agent.device_id, { type: 'reboot' }, viewer.key)).status).toBe(403);
    expect((await ctx.request('POST', `/api/v1/actions/${action.id}/cancel`, { token: viewer.key })).status).toBe(403);
  });

  it("answers another organization's action and device 404, exactly as an unknown one", async () => {
    const agent = await enrollAgent(ctx);
    const action = await created(agent.device_id, { type: 'reboot' });
    const stranger = await enrollAgent(ctx);
    const key = (await createApiKey(ctx, stranger.organization_id, 'admin')).key;
    for (const [method, path] of [
      ['GET', `/api/v1/actions/${action.id}`],
      ['POST', `/api/v1/actions/${action.id}/cancel`],
      ['GET', `/api/v1/devices/${agent.device_id}/actions`],
    ] as const) {
      const res = await ctx.request(method, path, { token: key });
      expect(res.status, path).toBe(404);
      expect(res.body.error).toBe('not_found');
    }
    expect((await createAction(ctx, agent.device_id, { type: 'reboot' }, key)).status).toBe(404);
    expect((await stored(action.id)).status).toBe('pending');
    const [n] = await ctx.sql<
      { n: number }[]
    >`select count(*)::int as n from device_actions where device_id = ${agent.device_id}`;
    expect(n!.n).toBe(1);
  });
});

describe('the service log', () => {
  it("never holds a script's text or an output, at debug level, through every call and refusal", async () => {
    const log = capturingLogger();
    const app = testApp(ctx.sql, ctx.config, log);
    const call = (method: string, path: string, options: Parameters<typeof request>[3] = {}) =>
      request(app, method, path, options);
    const agent = await enrollAgent(ctx);
    const text = 'echo LOGGED-SCRIPT-7f3a';
    const output = 'LOGGED-OUTPUT-91be';
    const made = await call('POST', `/api/v1/devices/${agent.device_id}/actions`, { body: script(text) });
    expect(made.status).toBe(201);
    // Refusals log too: a script too long, a body the agent got wrong.
    const tooLong = `${text}${'x'.repeat(65_536)}`;
    expect((await call('POST', `/api/v1/devices/${agent.device_id}/actions`, { body: script(tooLong) })).status).toBe(
      400,
    );
    expect((await call('POST', '/api/v1/agent/checkin', { token: agent.secret })).status).toBe(200);
    const id = made.body.id as string;
    expect((await call('POST', `/api/v1/agent/actions/${id}/start`, { token: agent.secret })).status).toBe(204);
    const body = { exit_code: 3, output, duration_ms: 1 };
    expect((await call('POST', `/api/v1/agent/actions/${id}/result`, { token: agent.secret, body })).status).toBe(204);
    expect((await call('POST', `/api/v1/agent/actions/${id}/result`, { token: agent.secret, body })).status).toBe(409);
    expect((await call('GET', `/api/v1/actions/${id}`)).body.result.output).toBe(output);
    await app.checkin.heartbeats.flush();
    const all = log.lines.join('\n');
    expect(log.lines.length).toBeGreaterThan(3);
    expect(all).not.toContain('LOGGED-SCRIPT-7f3a');
    expect(all).not.toContain('LOGGED-OUTPUT-91be');
  });
});
