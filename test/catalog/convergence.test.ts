/**
 * What a device reported and whether it converged, through the API after real agent
 * reports: each catalog item's `reported` and `convergence`, and the device's worst.
 */
import { describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';
import { enrollAgent, report } from '../support/agent.ts';

const ctx = useTestApp();

type Report = 'none' | 'applied' | 'apply_failed' | 'removed' | 'remove_failed';

async function setState(deviceId: string, merkmal: string, state: 'present' | 'absent') {
  const verb = state === 'present' ? 'select' : 'deselect';
  const res = await ctx.request('POST', `/api/v1/devices/${deviceId}/catalog/${merkmal}/${verb}`, { body: {} });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

async function reportOf(secret: string, merkmal: string, event: Report) {
  if (event === 'none') return;
  const res = await report(ctx, secret, [{ merkmal, event, detail: `${event} by the test` }]);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

async function catalogItem(deviceId: string, merkmal: string) {
  const res = await ctx.request('GET', `/api/v1/devices/${deviceId}/catalog`);
  expect(res.status).toBe(200);
  return res.body.items.find((i: { merkmal: string }) => i.merkmal === merkmal);
}

function expected(state: 'present' | 'absent', event: Report, when: 'before' | 'after'): string {
  if (event === 'none' || when === 'before') return 'pending';
  if (event === 'apply_failed' || event === 'remove_failed') return 'failed';
  return (event === 'applied') === (state === 'present') ? 'converged' : 'pending';
}

const cases = (['present', 'absent'] as const).flatMap((state) =>
  (['none', 'applied', 'apply_failed', 'removed', 'remove_failed'] as const).flatMap((event) =>
    (['before', 'after'] as const).map((when) => [state, event, when, expected(state, event, when)] as const),
  ),
);

describe('GET /api/v1/devices/{id}/catalog: reported and convergence', () => {
  it.each(cases)('state %s, last report %s %s the last change: %s', async (state, event, when, convergence) => {
    const agent = await enrollAgent(ctx);
    // libreoffice is absent by default: the change below is a real one whichever the state.
    if (when === 'before') await reportOf(agent.secret, 'libreoffice', event);
    await setState(agent.device_id, 'libreoffice', state);
    if (when === 'after') await reportOf(agent.secret, 'libreoffice', event);

    const item = await catalogItem(agent.device_id, 'libreoffice');
    expect(item.state).toBe(state);
    expect(item.convergence).toBe(convergence);
    if (event === 'none') {
      expect(item.reported).toBeNull();
    } else {
      expect(item.reported).toEqual({ event, at: expect.any(String), detail: `${event} by the test` });
      const [row] = await ctx.sql<{ created_at: Date }[]>`
        select created_at from device_merkmal_events
        where device_id = ${agent.device_id} and merkmal = 'libreoffice' and type = ${event}`;
      expect(item.reported.at).toBe(row!.created_at.toISOString());
    }
  });

  it('counts from the bootstrap while the state never changed: a report before it is not one since', async () => {
    const agent = await enrollAgent(ctx);
    expect((await catalogItem(agent.device_id, 'firefox')).convergence).toBe('pending');
    await reportOf(agent.secret, 'firefox', 'applied'); // the workspace default: present
    expect(await catalogItem(agent.device_id, 'firefox')).toMatchObject({
      state: 'present',
      convergence: 'converged',
      reported: { event: 'applied', detail: 'applied by the test' },
    });
    // A report older than the bootstrap (as from the device's former life) is none since.
    await ctx.sql`update devices set agent_secret_issued_at = now() + interval '1 minute' where id = ${agent.device_id}`;
    expect((await catalogItem(agent.device_id, 'firefox')).convergence).toBe('pending');
  });

  it('a report without detail has detail null; the latest report wins', async () => {
    const agent = await enrollAgent(ctx);
    await report(ctx, agent.secret, [
      { merkmal: 'firefox', event: 'apply_failed', detail: { rc: 2 } },
      { merkmal: 'firefox', event: 'applied' },
    ]);
    expect(await catalogItem(agent.device_id, 'firefox')).toMatchObject({
      reported: { event: 'applied', detail: null },
      convergence: 'converged',
    });
  });
});

describe('the device object: convergence is the worst over its catalog', () => {
  async function deviceConvergence(deviceId: string) {
    const res = await ctx.request('GET', `/api/v1/devices/${deviceId}`);
    expect(res.status).toBe(200);
    return res.body.convergence;
  }

  it('failed over pending over converged, and equal to the worst of the catalog read', async () => {
    const agent = await enrollAgent(ctx);
    const catalog = (await ctx.request('GET', `/api/v1/devices/${agent.device_id}/catalog`)).body.items as Array<{
      merkmal: string;
      state: 'present' | 'absent';
    }>;
    // Everything converged: each Merkmal reported in its state.
    await report(
      ctx,
      agent.secret,
      catalog.map((i) => ({ merkmal: i.merkmal, event: i.state === 'present' ? 'applied' : 'removed' })),
    );
    expect(await deviceConvergence(agent.device_id)).toBe('converged');
    await setState(agent.device_id, 'qgis', 'present');
    expect(await deviceConvergence(agent.device_id)).toBe('pending');
    await reportOf(agent.secret, 'libreoffice', 'remove_failed');
    expect(await deviceConvergence(agent.device_id)).toBe('failed');
    const items = (await ctx.request('GET', `/api/v1/devices/${agent.device_id}/catalog`)).body.items;
    expect(items.map((i: { merkmal: string; convergence: string }) => [i.merkmal, i.convergence])).toEqual(
      catalog.map((i) => [
        i.merkmal,
        i.merkmal === 'qgis' ? 'pending' : i.merkmal === 'libreoffice' ? 'failed' : 'converged',
      ]),
    );
  });
});
