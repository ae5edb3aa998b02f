import { sha256 } from '@oslojs/crypto/sha2';
import { describe, expect, it } from 'vitest';
import { getDevice } from '../../api/devices/repo.ts';
import { useTestApp } from '../support/app.ts';
import { activateDevice, createEnrollmentSession, newSerial, resolveDevice, TEMPLATES } from '../support/activation.ts';
import { createOrganization } from '../support/builders.ts';

const ctx = useTestApp({ activation: { maxFailures: 10_000, windowSeconds: 600, trustProxy: false } });

const resolve = (templateId: string, body: unknown) =>
  ctx.request('POST', `/api/v1/templates/${templateId}/resolve`, { token: null, body });

async function tokenRow(deviceId: string) {
  const [row] = await ctx.sql<{ token_hash: Uint8Array; expires_in_days: number }[]>`
    select token_hash, round(extract(epoch from expires_at - now()) / 86400)::int as expires_in_days
    from bootstrap_tokens where device_id = ${deviceId}`;
  return row ?? null;
}

async function assignment(deviceId: string) {
  const [row] = await ctx.sql`select template_id from devices where id = ${deviceId}`;
  return row!.template_id as string | null;
}

const hashOf = (token: string) => Buffer.from(sha256(new TextEncoder().encode(token))).toString('hex');

async function activateWithSession(templateId: string = TEMPLATES.debianEncrypted, maxDevices = 5) {
  const org = await createOrganization(ctx);
  const session = await createEnrollmentSession(ctx, org.id, { template_id: templateId, max_devices: maxDevices });
  const res = await ctx.request('POST', '/api/v1/activate', {
    token: null,
    body: { code: session.id, serial: newSerial() },
  });
  expect(res.status).toBe(200);
  return { org, session, deviceId: res.body.device_id as string };
}

describe('POST /api/v1/templates/{id}/resolve', () => {
  it('returns the Runtime Blueprint of the contract for the classic code', async () => {
    const org = await createOrganization(ctx);
    const device = await activateDevice(ctx, org.id);
    const res = await resolve(TEMPLATES.debianStandard, { code: device.code, device_id: device.device_id });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      device_id: device.device_id,
      organization_id: org.id,
      template: { id: TEMPLATES.debianStandard, name: 'Debian Standard' },
      workspace: { key: 'standard', name: 'Standard-Arbeitsplatz' },
      backend: { key: 'debian', name: 'Debian', distribution: 'Debian 12' },
      blueprints: [
        { merkmal: 'basis', ansible_role: 'base' },
        { merkmal: 'desktop', ansible_role: 'desktop' },
        { merkmal: 'firefox', ansible_role: 'firefox' },
        { merkmal: 'provisioning-agent', ansible_role: 'provisioning_agent' },
      ],
      installation: {
        locale: 'de_DE.UTF-8',
        keyboard: 'de',
        timezone: 'Europe/Berlin',
        encryption: false,
        packages: [],
      },
      partitioning: { scheme: 'single', root_filesystem: 'ext4', encryption: null },
      disk_encryption: null,
      agent: { base_url: 'http://fleet.test', device_id: device.device_id, bootstrap_token: expect.any(String) },
    });
    // At least 128 bits, base64url.
    expect(res.body.agent.bootstrap_token).toMatch(/^[A-Za-z0-9_-]{22,}$/);
  });

  it('records the assignment: the device shows the template and its backend', async () => {
    const org = await createOrganization(ctx);
    const device = await activateDevice(ctx, org.id);
    // Before any resolve: the default template of the preferred backend.
    expect(await getDevice(ctx.sql, device.device_id, 300)).toMatchObject({
      template_id: TEMPLATES.debianStandard,
      backend: 'debian',
    });
    const blueprint = await resolveDevice(ctx, { ...device, template_id: TEMPLATES.ubuntuStandard });
    expect(blueprint.backend).toEqual({ key: 'ubuntu', name: 'Ubuntu', distribution: 'Ubuntu 24.04 LTS' });
    expect(blueprint.partitioning).toEqual({ scheme: 'single', root_filesystem: 'ext4', encryption: null });
    expect(await assignment(device.device_id)).toBe(TEMPLATES.ubuntuStandard);
    expect(await getDevice(ctx.sql, device.device_id, 300)).toMatchObject({
      template_id: TEMPLATES.ubuntuStandard,
      backend: 'ubuntu',
    });
  });

  it('stores the bootstrap token only as its SHA-256 hash, valid 7 days', async () => {
    const org = await createOrganization(ctx);
    const device = await activateDevice(ctx, org.id);
    const { agent } = await resolveDevice(ctx, device);
    const row = await tokenRow(device.device_id);
    expect(Buffer.from(row!.token_hash).toString('hex')).toBe(hashOf(agent.bootstrap_token));
    expect(row!.expires_in_days).toBe(7);
  });

  it('issues a fresh token on every resolve and voids the earlier one', async () => {
    const org = await createOrganization(ctx);
    const device = await activateDevice(ctx, org.id);
    const first = await resolveDevice(ctx, device);
    const second = await resolveDevice(ctx, { ...device, template_id: TEMPLATES.debianEncrypted });
    expect(second.agent.bootstrap_token).not.toBe(first.agent.bootstrap_token);
    expect(second.partitioning).toEqual({
      scheme: 'luks-lvm',
      root_filesystem: 'ext4',
      encryption: { type: 'luks2', unlock: 'tpm2' },
    });
    const rows = await ctx.sql`select token_hash from bootstrap_tokens where device_id = ${device.device_id}`;
    expect(rows).toHaveLength(1);
    expect(Buffer.from(rows[0]!.token_hash).toString('hex')).toBe(hashOf(second.agent.bootstrap_token));
    const [stale] =
      await ctx.sql`select 1 from bootstrap_tokens where token_hash = ${sha256(new TextEncoder().encode(first.agent.bootstrap_token))}`;
    expect(stale).toBeUndefined();
  });

  it('accepts the code in any case and the ids in upper case', async () => {
    const org = await createOrganization(ctx);
    const device = await activateDevice(ctx, org.id);
    const res = await resolve(TEMPLATES.debianStandard.toUpperCase(), {
      code: device.code.toLowerCase(),
      device_id: device.device_id.toUpperCase(),
    });
    expect(res.status).toBe(200);
    expect(res.body.device_id).toBe(device.device_id);
    expect(res.body.template.id).toBe(TEMPLATES.debianStandard);
  });

  it('resolves a deprovisioned (not archived) device', async () => {
    const org = await createOrganization(ctx);
    const device = await activateDevice(ctx, org.id);
    await ctx.sql`update devices set deprovisioned_at = now() where id = ${device.device_id}`;
    expect((await resolve(TEMPLATES.debianStandard, { code: device.code, device_id: device.device_id })).status).toBe(
      200,
    );
  });
});

describe('resolve with an enrollment session', () => {
  it("resolves the session's template without counting the quota again", async () => {
    const { org, session, deviceId } = await activateWithSession(TEMPLATES.debianEncrypted, 1);
    const res = await resolve(TEMPLATES.debianEncrypted, { code: session.id, device_id: deviceId });
    expect(res.status).toBe(200);
    expect(res.body.organization_id).toBe(org.id);
    expect(res.body.template).toEqual({ id: TEMPLATES.debianEncrypted, name: 'Debian Verschlüsselt' });
    // The session is used up (1 of 1), yet its device can resolve again.
    expect((await resolve(TEMPLATES.debianEncrypted, { code: session.id, device_id: deviceId })).status).toBe(200);
    const [row] = await ctx.sql`select devices_used from enrollment_sessions where id = ${session.id}`;
    expect(row!.devices_used).toBe(1);
  });

  it('refuses a template the session does not offer with 403 template_not_allowed, nothing written', async () => {
    const { session, deviceId } = await activateWithSession(TEMPLATES.debianEncrypted);
    for (const other of [TEMPLATES.debianStandard, TEMPLATES.ubuntuStandard]) {
      const res = await resolve(other, { code: session.id, device_id: deviceId });
      expect(res.status).toBe(403);
      expect(res.body.error).toBe('template_not_allowed');
    }
    expect(await assignment(deviceId)).toBeNull();
    expect(await tokenRow(deviceId)).toBeNull();
  });

  it('refuses a revoked session with 403 invalid_activation_code, nothing written', async () => {
    const { session, deviceId } = await activateWithSession();
    await ctx.request('POST', `/api/v1/enrollment-sessions/${session.id}/revoke`);
    const res = await resolve(TEMPLATES.debianEncrypted, { code: session.id, device_id: deviceId });
    expect(res.status).toBe(403);
    expect(res.body.error).toBe('invalid_activation_code');
    expect(await assignment(deviceId)).toBeNull();
    expect(await tokenRow(deviceId)).toBeNull();
  });

  it('refuses an expired session with 403 invalid_activation_code, nothing written', async () => {
    const { session, deviceId } = await activateWithSession();
    await ctx.sql`update enrollment_sessions set expires_at = now() - interval '1 minute' where id = ${session.id}`;
    const res = await resolve(TEMPLATES.debianEncrypted, { code: session.id, device_id: deviceId });
    expect(res.status).toBe(403);
    expect(res.body.error).toBe('invalid_activation_code');
    expect(await tokenRow(deviceId)).toBeNull();
  });

  it("resolves with the organization's classic code too, any template", async () => {
    const { org, deviceId } = await activateWithSession(TEMPLATES.debianEncrypted);
    const [code] = await ctx.sql`select code from activation_codes where organization_id = ${org.id}`;
    const res = await resolve(TEMPLATES.ubuntuStandard, { code: code!.code, device_id: deviceId });
    expect(res.status).toBe(200);
  });
});

describe('resolve errors', () => {
  it('answers 403 invalid_activation_code for a wrong code, nothing written', async () => {
    const org = await createOrganization(ctx);
    const device = await activateDevice(ctx, org.id);
    for (const code of ['00000-00000-00000-00000', crypto.randomUUID(), 'nonsense']) {
      const res = await resolve(TEMPLATES.debianStandard, { code, device_id: device.device_id });
      expect(res.status, code).toBe(403);
      expect(res.body.error).toBe('invalid_activation_code');
    }
    expect(await assignment(device.device_id)).toBeNull();
    expect(await tokenRow(device.device_id)).toBeNull();
  });

  it('answers 404 not_found for a device of another organization, nothing written', async () => {
    const a = await createOrganization(ctx);
    const b = await createOrganization(ctx);
    const deviceA = await activateDevice(ctx, a.id);
    const deviceB = await activateDevice(ctx, b.id);
    const res = await resolve(TEMPLATES.debianStandard, { code: deviceA.code, device_id: deviceB.device_id });
    expect(res.status).toBe(404);
    expect(res.body.error).toBe('not_found');
    expect(await assignment(deviceB.device_id)).toBeNull();
    expect(await tokenRow(deviceB.device_id)).toBeNull();
    // Nor through a session of the other organization.
    const session = await createEnrollmentSession(ctx, a.id);
    const viaSession = await resolve(TEMPLATES.debianStandard, { code: session.id, device_id: deviceB.device_id });
    expect(viaSession.status).toBe(404);
    expect(viaSession.body.error).toBe('not_found');
  });

  it('answers 404 not_found for an unknown device', async () => {
    const org = await createOrganization(ctx);
    const device = await activateDevice(ctx, org.id);
    const res = await resolve(TEMPLATES.debianStandard, { code: device.code, device_id: crypto.randomUUID() });
    expect(res.status).toBe(404);
    expect(res.body.error).toBe('not_found');
  });

  it('answers 404 not_found for an archived device, nothing written', async () => {
    const org = await createOrganization(ctx);
    const device = await activateDevice(ctx, org.id);
    await ctx.sql`update devices set archived_at = now() where id = ${device.device_id}`;
    const res = await resolve(TEMPLATES.ubuntuStandard, { code: device.code, device_id: device.device_id });
    expect(res.status).toBe(404);
    expect(res.body.error).toBe('not_found');
    expect(await assignment(device.device_id)).toBeNull();
    expect(await tokenRow(device.device_id)).toBeNull();
  });

  it('answers 404 not_found for an unknown or malformed template id, nothing written', async () => {
    const org = await createOrganization(ctx);
    const device = await activateDevice(ctx, org.id);
    for (const id of [crypto.randomUUID(), 'debian-standard']) {
      const res = await resolve(id, { code: device.code, device_id: device.device_id });
      expect(res.status, id).toBe(404);
      expect(res.body.error).toBe('not_found');
    }
    expect(await tokenRow(device.device_id)).toBeNull();
  });

  it.each([
    ['missing code', { code: undefined }],
    ['empty code', { code: '' }],
    ['over-long code', { code: 'A'.repeat(65) }],
    ['missing device_id', { device_id: undefined }],
    ['device_id not a UUID', { device_id: 'abc' }],
    ['an unknown field', { template_id: TEMPLATES.debianStandard }],
  ])('answers 400 invalid_request for %s, nothing written', async (_case, fields) => {
    const org = await createOrganization(ctx);
    const device = await activateDevice(ctx, org.id);
    const res = await resolve(TEMPLATES.debianStandard, { code: device.code, device_id: device.device_id, ...fields });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request');
    expect(await tokenRow(device.device_id)).toBeNull();
  });
});
