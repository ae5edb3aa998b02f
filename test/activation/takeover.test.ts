/**
 * No takeover of managed devices: activate and resolve for a device that
 * holds an agent secret answer 409 device_already_enrolled and change nothing.
 */
import { describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';
import { activateDevice, createEnrollmentSession, newSerial, resolveDevice, TEMPLATES } from '../support/activation.ts';
import { bootstrapAgent, checkin, enrollAgent } from '../support/agent.ts';

const ctx = useTestApp();

async function deviceState(id: string) {
  const [device] = await ctx.sql`
    select d.oe_id, d.hostname, d.template_id, d.enrollment_session_id, d.agent_secret_hash, h.hardware,
           (select count(*)::int from devices x where x.organization_id = d.organization_id) as devices,
           (select count(*)::int from bootstrap_tokens t where t.device_id = d.id) as tokens
    from devices d left join device_hardware h on h.device_id = d.id where d.id = ${id}`;
  return device;
}

async function sessionUsed(id: string): Promise<number> {
  const [row] = await ctx.sql<
    { devices_used: number }[]
  >`select devices_used from enrollment_sessions where id = ${id}`;
  return row!.devices_used;
}

describe('a managed device', () => {
  it('cannot be activated again: 409, no move, hostname, hardware or new device', async () => {
    const serial = newSerial();
    const agent = await enrollAgent(ctx, { serial });
    const unit = await ctx.request('POST', `/api/v1/organizations/${agent.organization_id}/org-units`, {
      body: { name: 'Büro' },
    });
    await ctx.request('PUT', `/api/v1/devices/${agent.device_id}/org-unit`, { body: { oe_id: unit.body.id } });
    const before = await deviceState(agent.device_id);
    const res = await ctx.request('POST', '/api/v1/activate', {
      token: null,
      body: { code: agent.code, serial, hostname: 'evil', hardware: { cpu: 'fake' } },
    });
    expect(res.status).toBe(409);
    expect(res.body.error).toBe('device_already_enrolled');
    expect(await deviceState(agent.device_id)).toEqual(before);
    expect((await checkin(ctx, agent.secret)).status).toBe(200);
  });

  it('spends no quota of an enrollment session on a refused activation', async () => {
    const serial = newSerial();
    const agent = await enrollAgent(ctx, { serial });
    const session = await createEnrollmentSession(ctx, agent.organization_id, { max_devices: 2 });
    const res = await ctx.request('POST', '/api/v1/activate', { token: null, body: { code: session.id, serial } });
    expect(res.status).toBe(409);
    expect(await sessionUsed(session.id)).toBe(0);
  });

  it('cannot be resolved to another template: 409, template and backend kept, no token issued', async () => {
    const agent = await enrollAgent(ctx);
    const before = await deviceState(agent.device_id);
    const res = await ctx.request('POST', `/api/v1/templates/${TEMPLATES.ubuntuStandard}/resolve`, {
      token: null,
      body: { code: agent.code, device_id: agent.device_id },
    });
    expect(res.status).toBe(409);
    expect(res.body.error).toBe('device_already_enrolled');
    expect(await deviceState(agent.device_id)).toEqual(before);
    const state = await checkin(ctx, agent.secret);
    expect(state.body.blueprints).toEqual(agent.blueprint.blueprints);
  });

  it('a wrong code is still 403 first: the 409 tells nothing to someone without a credential', async () => {
    const serial = newSerial();
    await enrollAgent(ctx, { serial });
    const res = await ctx.request('POST', '/api/v1/activate', {
      token: null,
      body: { code: 'AAAAA-AAAAA-AAAAA-AAAAA', serial },
    });
    expect(res.status).toBe(403);
    expect(res.body.error).toBe('invalid_activation_code');
  });
});

describe('a device that is not managed', () => {
  it('can be activated again while it never bootstrapped (the installer retried): same device', async () => {
    const org = (await ctx.request('POST', '/api/v1/organizations', { body: { name: 'Retry' } })).body;
    const serial = newSerial();
    const first = await activateDevice(ctx, org.id, serial);
    await resolveDevice(ctx, { code: first.code, device_id: first.device_id });
    const again = await activateDevice(ctx, org.id, serial);
    expect(again.device_id).toBe(first.device_id);
    const blueprint = await resolveDevice(ctx, {
      code: first.code,
      device_id: first.device_id,
      template_id: TEMPLATES.ubuntuStandard,
    });
    expect(blueprint.backend.key).toBe('ubuntu');
  });

  it('can be re-imaged after an admin reprovisions it', async () => {
    const serial = newSerial();
    const agent = await enrollAgent(ctx, { serial });
    expect((await ctx.request('POST', `/api/v1/devices/${agent.device_id}/reprovision`)).status).toBe(200);
    const again = await activateDevice(ctx, agent.organization_id, serial);
    expect(again.device_id).toBe(agent.device_id);
    const blueprint = await resolveDevice(ctx, {
      code: agent.code,
      device_id: agent.device_id,
      template_id: TEMPLATES.ubuntuStandard,
    });
    const secret = await bootstrapAgent(ctx, blueprint.agent);
    expect((await checkin(ctx, secret)).status).toBe(200);
    expect((await checkin(ctx, agent.secret)).status).toBe(401);
  });
});
