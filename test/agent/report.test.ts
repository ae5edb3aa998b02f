import { describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, useTestApp } from '../support/app.ts';
import { enrollAgent, report, unknownSecret } from '../support/agent.ts';
import { countRows } from '../support/db.ts';

const ctx = useTestApp();

async function eventsOf(deviceId: string) {
  return ctx.sql`
    select merkmal, type, payload from device_merkmal_events
    where device_id = ${deviceId} order by merkmal, type`;
}

describe('POST /api/v1/agent/report', () => {
  it('stores every entry as a device Merkmal event with its detail in the payload', async () => {
    const agent = await enrollAgent(ctx);
    const res = await report(ctx, agent.secret, [
      { merkmal: 'firefox', event: 'applied', detail: 'role firefox applied in 12 s' },
      { merkmal: 'libreoffice', event: 'apply_failed', detail: { rc: 2, stderr: 'E: unable to locate package' } },
      { merkmal: 'onlyoffice', event: 'removed' },
      { merkmal: 'qgis', event: 'remove_failed', detail: 'dpkg lock held' },
    ]);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ accepted: 4 });
    expect(await eventsOf(agent.device_id)).toEqual([
      { merkmal: 'firefox', type: 'applied', payload: { detail: 'role firefox applied in 12 s' } },
      {
        merkmal: 'libreoffice',
        type: 'apply_failed',
        payload: { detail: { rc: 2, stderr: 'E: unable to locate package' } },
      },
      { merkmal: 'onlyoffice', type: 'removed', payload: {} },
      { merkmal: 'qgis', type: 'remove_failed', payload: { detail: 'dpkg lock held' } },
    ]);
  });

  it('accepts Merkmale outside the order catalog (the agent applies the base roles too)', async () => {
    const agent = await enrollAgent(ctx);
    const res = await report(ctx, agent.secret, [{ merkmal: 'basis', event: 'applied' }]);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ accepted: 1 });
  });

  it('accepts 500 entries', async () => {
    const agent = await enrollAgent(ctx);
    const entries = Array.from({ length: 500 }, (_, i) => ({
      merkmal: 'firefox',
      event: 'applied',
      detail: `run ${i}`,
    }));
    const res = await report(ctx, agent.secret, entries);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ accepted: 500 });
    expect(await eventsOf(agent.device_id)).toHaveLength(500);
  });

  it.each([
    ['no entries', { entries: [] }],
    ['501 entries', { entries: Array.from({ length: 501 }, () => ({ merkmal: 'firefox', event: 'applied' })) }],
    ['no entries field', {}],
    ['an entry without event', { entries: [{ merkmal: 'firefox' }] }],
    ['an entry without merkmal', { entries: [{ event: 'applied' }] }],
    [
      'an entry with an unknown field',
      { entries: [{ merkmal: 'firefox', event: 'applied', device_id: crypto.randomUUID() }] },
    ],
    ['an event that is not a string', { entries: [{ merkmal: 'firefox', event: 1 }] }],
  ])('rejects %s with 400 invalid_request and writes nothing', async (_case, body) => {
    const agent = await enrollAgent(ctx);
    const before = await countRows(ctx.sql, 'device_merkmal_events');
    const res = await ctx.request('POST', '/api/v1/agent/report', { token: agent.secret, body });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request');
    expect(await countRows(ctx.sql, 'device_merkmal_events')).toBe(before);
  });

  it.each(['selected', 'deselected', 'installed', 'APPLIED', ''])(
    'rejects the whole report with 422 invalid_event_type for an entry of type %j, writing nothing',
    async (event) => {
      const agent = await enrollAgent(ctx);
      const before = await countRows(ctx.sql, 'device_merkmal_events');
      const res = await report(ctx, agent.secret, [
        { merkmal: 'firefox', event: 'applied' },
        { merkmal: 'libreoffice', event },
      ]);
      expect(res.status).toBe(422);
      expect(res.body.error).toBe('invalid_event_type');
      expect(res.body.details).toEqual([{ path: ['entries', '1', 'event'], message: expect.any(String) }]);
      expect(await countRows(ctx.sql, 'device_merkmal_events')).toBe(before);
    },
  );

  it('rejects the whole report with 422 unknown_merkmal when one Merkmal does not exist, writing nothing', async () => {
    const agent = await enrollAgent(ctx);
    const before = await countRows(ctx.sql, 'device_merkmal_events');
    const res = await report(ctx, agent.secret, [
      { merkmal: 'firefox', event: 'applied' },
      { merkmal: 'not-a-merkmal', event: 'applied' },
      { merkmal: 'libreoffice', event: 'removed' },
    ]);
    expect(res.status).toBe(422);
    expect(res.body.error).toBe('unknown_merkmal');
    expect(res.body.message).toContain('not-a-merkmal');
    expect(await countRows(ctx.sql, 'device_merkmal_events')).toBe(before);
  });

  it.each([
    ['no secret', null],
    ['a malformed secret', 'short'],
    ['an unknown secret', unknownSecret()],
    ['the admin token', ADMIN_TOKEN],
  ])('answers 401 invalid_agent_secret to %s and writes nothing', async (_case, secret) => {
    const before = await countRows(ctx.sql, 'device_merkmal_events');
    const res = await report(ctx, secret, [{ merkmal: 'firefox', event: 'applied' }]);
    expect(res.status).toBe(401);
    expect(res.body.error).toBe('invalid_agent_secret');
    expect(await countRows(ctx.sql, 'device_merkmal_events')).toBe(before);
  });

  it('checks the secret before what the entries mean: a bad secret with a bad event type is 401', async () => {
    const res = await report(ctx, unknownSecret(), [{ merkmal: 'nope', event: 'selected' }]);
    expect(res.status).toBe(401);
    expect(res.body.error).toBe('invalid_agent_secret');
  });

  it.each([
    ['deprovision', 'device_deprovisioned'],
    ['archive', 'device_archived'],
  ])('answers 403 after %s and writes nothing', async (action, code) => {
    const agent = await enrollAgent(ctx);
    await ctx.request('POST', `/api/v1/devices/${agent.device_id}/${action}`);
    const res = await report(ctx, agent.secret, [{ merkmal: 'firefox', event: 'applied' }]);
    expect(res.status).toBe(403);
    expect(res.body.error).toBe(code);
    expect(await eventsOf(agent.device_id)).toHaveLength(0);
  });

  it('never shows the secret in its answers', async () => {
    const agent = await enrollAgent(ctx);
    for (const entries of [
      [{ merkmal: 'firefox', event: 'applied' }],
      [{ merkmal: 'firefox', event: 'selected' }],
      [{ merkmal: 'x', event: 'applied' }],
    ]) {
      const res = await report(ctx, agent.secret, entries);
      expect(JSON.stringify(res.body)).not.toContain(agent.secret);
    }
  });
});
