/** The device object's `status` and the `convergence` it carries (null without a reporting agent). */
import { describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';
import { enrollAgent } from '../support/agent.ts';
import { createOrganization } from '../support/builders.ts';
import { insertDevice } from '../support/devices.ts';

// Poll interval 300 s (testConfig): stale after 15 minutes without a check-in.
const ctx = useTestApp();

async function read(deviceId: string) {
  const res = await ctx.request('GET', `/api/v1/devices/${deviceId}`);
  expect(res.status).toBe(200);
  return { status: res.body.status, convergence: res.body.convergence };
}

async function bootstrapped(issued: string, checkin?: string): Promise<string> {
  const agent = await enrollAgent(ctx);
  await ctx.sql`update devices set agent_secret_issued_at = now() - ${issued}::interval where id = ${agent.device_id}`;
  if (checkin !== undefined) {
    await ctx.sql`
      update device_heartbeats set at = now() - ${checkin}::interval where device_id = ${agent.device_id}`;
  }
  return agent.device_id;
}

describe('GET /api/v1/devices/{id}: status', () => {
  it('enrolled: no agent secret yet, convergence null', async () => {
    const org = await createOrganization(ctx);
    const d = await insertDevice(ctx.sql, { organizationId: org.id });
    expect(await read(d.id)).toEqual({ status: 'enrolled', convergence: null });
  });

  it('active: bootstrapped and checked in within three poll intervals', async () => {
    expect(await read(await bootstrapped('2 days', '14 minutes'))).toEqual({
      status: 'active',
      convergence: 'pending',
    });
  });

  it('active: bootstrapped recently without a check-in', async () => {
    expect((await read(await bootstrapped('2 minutes'))).status).toBe('active');
  });

  it('stale: no check-in since its bootstrap for three poll intervals', async () => {
    expect(await read(await bootstrapped('16 minutes'))).toEqual({ status: 'stale', convergence: 'pending' });
  });

  it('stale: its last check-in three poll intervals ago', async () => {
    expect((await read(await bootstrapped('2 days', '16 minutes'))).status).toBe('stale');
  });

  it('deprovisioned: even when stale, convergence null', async () => {
    const id = await bootstrapped('2 days', '1 day');
    await ctx.sql`update devices set deprovisioned_at = now() where id = ${id}`;
    expect(await read(id)).toEqual({ status: 'deprovisioned', convergence: null });
  });

  it('archived: before everything else, convergence null', async () => {
    const id = await bootstrapped('2 days', '1 minute');
    await ctx.sql`update devices set deprovisioned_at = now(), archived_at = now() where id = ${id}`;
    expect(await read(id)).toEqual({ status: 'archived', convergence: null });
  });

  it('the list answers the same status as the read', async () => {
    const id = await bootstrapped('16 minutes');
    const org = (await ctx.request('GET', `/api/v1/devices/${id}`)).body.organization_id;
    const res = await ctx.request('GET', `/api/v1/organizations/${org}/devices`);
    expect(res.body.items).toEqual([expect.objectContaining({ id, status: 'stale', convergence: 'pending' })]);
  });
});
