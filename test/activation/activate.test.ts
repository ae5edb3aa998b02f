import { describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';
import { createEnrollmentSession, newSerial, TEMPLATES } from '../support/activation.ts';
import { activationCodeOf, createOrganization } from '../support/builders.ts';
import { countRows } from '../support/db.ts';

// Many refusals below come from one in-process "address"; the limit has its own file.
const ctx = useTestApp({ activation: { maxFailures: 10_000, windowSeconds: 600, trustProxy: false } });

const activate = (body: unknown) => ctx.request('POST', '/api/v1/activate', { token: null, body });

/** Everything an activation can write. */
async function snapshot() {
  const [sessions] = await ctx.sql<
    { used: number }[]
  >`select coalesce(sum(devices_used), 0)::int as used from enrollment_sessions`;
  return {
    devices: await countRows(ctx.sql, 'devices'),
    hardware: await countRows(ctx.sql, 'device_hardware'),
    devicesUsed: sessions!.used,
  };
}

async function deviceRow(id: string) {
  const [row] = await ctx.sql`
    select organization_id, serial, hostname, oe_id, template_id, enrollment_session_id, archived_at
    from devices where id = ${id}`;
  return row!;
}

async function sessionUsed(id: string): Promise<number> {
  const [row] = await ctx.sql<
    { devices_used: number }[]
  >`select devices_used from enrollment_sessions where id = ${id}`;
  return row!.devices_used;
}

describe('POST /api/v1/activate with the classic code', () => {
  it('creates the device in "Neue Geräte" and offers every template', async () => {
    const org = await createOrganization(ctx);
    const code = await activationCodeOf(ctx, org.id);
    const res = await activate({ code, serial: 'PF3XK2QZ', hostname: 'arbeitsplatz-017' });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['default_template_id', 'device_id', 'organization_id', 'templates']);
    expect(res.body.organization_id).toBe(org.id);
    expect(res.body.default_template_id).toBe(TEMPLATES.debianStandard);
    expect(res.body.templates.map((t: any) => t.id)).toEqual([
      TEMPLATES.debianStandard,
      TEMPLATES.ubuntuStandard,
      TEMPLATES.debianEncrypted,
      TEMPLATES.ubuntuEncrypted,
    ]);
    expect(res.body.templates[0]).toEqual({
      id: TEMPLATES.debianStandard,
      name: 'Debian Standard',
      backend: 'debian',
      workspace: 'standard',
      partitioning: { scheme: 'single', root_filesystem: 'ext4', encryption: null },
      installation: expect.any(Object),
      is_default: true,
    });
    expect(res.body.templates.map((t: any) => t.is_default)).toEqual([true, true, false, false]);
    expect(await deviceRow(res.body.device_id)).toEqual({
      organization_id: org.id,
      serial: 'PF3XK2QZ',
      hostname: 'arbeitsplatz-017',
      oe_id: org.default_oe_id,
      template_id: null,
      enrollment_session_id: null,
      archived_at: null,
    });
  });

  it('matches the code case-insensitively, with or without dashes', async () => {
    const org = await createOrganization(ctx);
    const code = await activationCodeOf(ctx, org.id);
    for (const variant of [code.toLowerCase(), code.replaceAll('-', ''), ` ${code} `]) {
      const res = await activate({ code: variant, serial: newSerial() });
      expect(res.status, variant).toBe(200);
      expect(res.body.organization_id).toBe(org.id);
    }
  });

  it('stores the hardware object and replaces it on the next activation', async () => {
    const org = await createOrganization(ctx);
    const code = await activationCodeOf(ctx, org.id);
    const serial = newSerial();
    const first = await activate({ code, serial, hardware: { cpu: 'i5', memory_mb: 8192 } });
    expect(first.status).toBe(200);
    const [stored] = await ctx.sql`select hardware from device_hardware where device_id = ${first.body.device_id}`;
    expect(stored!.hardware).toEqual({ cpu: 'i5', memory_mb: 8192 });
    await activate({ code, serial, hardware: { cpu: 'i7' } });
    const [replaced] = await ctx.sql`select hardware from device_hardware where device_id = ${first.body.device_id}`;
    expect(replaced!.hardware).toEqual({ cpu: 'i7' });
    await activate({ code, serial });
    const [kept] = await ctx.sql`select hardware from device_hardware where device_id = ${first.body.device_id}`;
    expect(kept!.hardware).toEqual({ cpu: 'i7' });
  });

  it('loads the live device of the same serial, moves it back to "Neue Geräte" and updates a given hostname', async () => {
    const org = await createOrganization(ctx);
    const code = await activationCodeOf(ctx, org.id);
    const first = await activate({ code, serial: 'SAME-1', hostname: 'alt' });
    const [unit] = await ctx.sql`
      insert into org_units (organization_id, parent_id, name) values (${org.id}, null, 'Verwaltung') returning id`;
    await ctx.sql`update devices set oe_id = ${unit!.id} where id = ${first.body.device_id}`;

    const again = await activate({ code, serial: 'SAME-1' });
    expect(again.status).toBe(200);
    expect(again.body.device_id).toBe(first.body.device_id);
    expect(await deviceRow(first.body.device_id)).toMatchObject({ oe_id: org.default_oe_id, hostname: 'alt' });

    const renamed = await activate({ code, serial: 'SAME-1', hostname: 'neu' });
    expect(renamed.body.device_id).toBe(first.body.device_id);
    expect(await deviceRow(first.body.device_id)).toMatchObject({ hostname: 'neu' });
    const [n] = await ctx.sql`select count(*)::int as n from devices where organization_id = ${org.id}`;
    expect(n!.n).toBe(1);
  });

  it('creates a new device when the device of that serial is archived', async () => {
    const org = await createOrganization(ctx);
    const code = await activationCodeOf(ctx, org.id);
    const first = await activate({ code, serial: 'ARCH-1' });
    await ctx.sql`update devices set archived_at = now() where id = ${first.body.device_id}`;
    const second = await activate({ code, serial: 'ARCH-1' });
    expect(second.status).toBe(200);
    expect(second.body.device_id).not.toBe(first.body.device_id);
    expect((await deviceRow(first.body.device_id)).archived_at).not.toBeNull();
  });

  it('keeps devices of the same serial in different organizations apart', async () => {
    const a = await createOrganization(ctx);
    const b = await createOrganization(ctx);
    const resA = await activate({ code: await activationCodeOf(ctx, a.id), serial: 'SHARED-1' });
    const resB = await activate({ code: await activationCodeOf(ctx, b.id), serial: 'SHARED-1' });
    expect(resA.body.device_id).not.toBe(resB.body.device_id);
    expect((await deviceRow(resB.body.device_id)).oe_id).toBe(b.default_oe_id);
  });

  it('gives concurrent activations of one serial one device', async () => {
    const org = await createOrganization(ctx);
    const code = await activationCodeOf(ctx, org.id);
    const results = await Promise.all(Array.from({ length: 10 }, () => activate({ code, serial: 'RACE-SERIAL' })));
    expect(results.map((r) => r.status)).toEqual(Array(10).fill(200));
    expect(new Set(results.map((r) => r.body.device_id)).size).toBe(1);
  });

  it('refuses a rotated (old) code with 403 invalid_activation_code', async () => {
    const org = await createOrganization(ctx);
    const old = await activationCodeOf(ctx, org.id);
    await ctx.request('POST', `/api/v1/organizations/${org.id}/activation-code/rotate`);
    const before = await snapshot();
    const res = await activate({ code: old, serial: newSerial() });
    expect(res.status).toBe(403);
    expect(res.body.error).toBe('invalid_activation_code');
    expect(await snapshot()).toEqual(before);
  });

  it.each([
    ['a well-formed code nobody has', '00000-00000-00000-00000'],
    ['a string that cannot be a code', 'hello world'],
    ['a code one character short', 'K7M2Q-4XW9D-PZ3RT-8HBN'],
  ])('refuses %s with 403 invalid_activation_code and writes nothing', async (_case, code) => {
    const before = await snapshot();
    const res = await activate({ code, serial: newSerial(), hardware: { cpu: 'x' } });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ error: 'invalid_activation_code', message: expect.any(String) });
    expect(await snapshot()).toEqual(before);
  });
});

describe('POST /api/v1/activate with an enrollment session (every row of the spec table)', () => {
  it('id is not a UUID: the classic activation code path is used instead', async () => {
    const org = await createOrganization(ctx);
    const session = await createEnrollmentSession(ctx, org.id, { template_id: TEMPLATES.ubuntuStandard });
    const res = await activate({ code: await activationCodeOf(ctx, org.id), serial: newSerial() });
    expect(res.status).toBe(200);
    expect(res.body.templates).toHaveLength(4);
    expect(await sessionUsed(session.id)).toBe(0);
    // A session id mangled into a non-UUID is looked up as a classic code, and is none.
    const mangled = await activate({ code: session.id.replaceAll('-', ''), serial: newSerial() });
    expect(mangled.status).toBe(403);
    expect(mangled.body.error).toBe('invalid_activation_code');
  });

  it('a UUID that is no session is refused, not tried as a classic code', async () => {
    const org = await createOrganization(ctx);
    const before = await snapshot();
    for (const code of [crypto.randomUUID(), org.id, org.default_oe_id, TEMPLATES.debianStandard]) {
      const res = await activate({ code, serial: newSerial() });
      expect(res.status, code).toBe(403);
      expect(res.body.error).toBe('invalid_activation_code');
    }
    expect(await snapshot()).toEqual(before);
  });

  it('session revoked: invalid_activation_code, nothing written', async () => {
    const org = await createOrganization(ctx);
    const session = await createEnrollmentSession(ctx, org.id);
    await ctx.request('POST', `/api/v1/enrollment-sessions/${session.id}/revoke`);
    const before = await snapshot();
    const res = await activate({ code: session.id, serial: newSerial(), hardware: { cpu: 'x' } });
    expect(res.status).toBe(403);
    expect(res.body.error).toBe('invalid_activation_code');
    expect(await snapshot()).toEqual(before);
    expect(await sessionUsed(session.id)).toBe(0);
  });

  it('session expired: invalid_activation_code, nothing written', async () => {
    const org = await createOrganization(ctx);
    const session = await createEnrollmentSession(ctx, org.id);
    await ctx.sql`update enrollment_sessions set expires_at = now() - interval '1 second' where id = ${session.id}`;
    const before = await snapshot();
    const res = await activate({ code: session.id, serial: newSerial() });
    expect(res.status).toBe(403);
    expect(res.body.error).toBe('invalid_activation_code');
    expect(await snapshot()).toEqual(before);
  });

  it('quota exhausted: invalid_activation_code, nothing written', async () => {
    const org = await createOrganization(ctx);
    const session = await createEnrollmentSession(ctx, org.id, { max_devices: 2 });
    expect((await activate({ code: session.id, serial: newSerial() })).status).toBe(200);
    expect((await activate({ code: session.id, serial: newSerial() })).status).toBe(200);
    const before = await snapshot();
    const res = await activate({ code: session.id, serial: newSerial() });
    expect(res.status).toBe(403);
    expect(res.body.error).toBe('invalid_activation_code');
    expect(await snapshot()).toEqual(before);
    expect(await sessionUsed(session.id)).toBe(2);
  });

  it('valid and within quota: succeeds with only its template as the default, devices_used + 1', async () => {
    const org = await createOrganization(ctx);
    const session = await createEnrollmentSession(ctx, org.id, {
      template_id: TEMPLATES.debianEncrypted,
      max_devices: 3,
    });
    const res = await activate({ code: session.id.toUpperCase(), serial: newSerial(), hostname: 'rollout-1' });
    expect(res.status).toBe(200);
    expect(res.body.organization_id).toBe(org.id);
    expect(res.body.default_template_id).toBe(TEMPLATES.debianEncrypted);
    expect(res.body.templates).toEqual([
      {
        id: TEMPLATES.debianEncrypted,
        name: 'Debian Verschlüsselt',
        backend: 'debian',
        workspace: 'standard',
        partitioning: { scheme: 'luks-lvm', root_filesystem: 'ext4', encryption: { type: 'luks2', unlock: 'tpm2' } },
        installation: expect.objectContaining({ encryption: true }),
        is_default: true,
      },
    ]);
    expect(await sessionUsed(session.id)).toBe(1);
    expect(await deviceRow(res.body.device_id)).toMatchObject({
      organization_id: org.id,
      oe_id: org.default_oe_id,
      enrollment_session_id: session.id,
      hostname: 'rollout-1',
    });
    const read = await ctx.request('GET', `/api/v1/enrollment-sessions/${session.id}`);
    expect(read.body.devices_used).toBe(1);
  });

  it('counts every successful activation, also of a device it activated before', async () => {
    const org = await createOrganization(ctx);
    const session = await createEnrollmentSession(ctx, org.id, { max_devices: 2 });
    const first = await activate({ code: session.id, serial: 'AGAIN-1' });
    const second = await activate({ code: session.id, serial: 'AGAIN-1' });
    expect(second.body.device_id).toBe(first.body.device_id);
    expect(await sessionUsed(session.id)).toBe(2);
    expect((await activate({ code: session.id, serial: 'AGAIN-1' })).status).toBe(403);
  });

  it('with max_devices 5 and 50 concurrent activations, exactly 5 succeed and devices_used is 5', async () => {
    const org = await createOrganization(ctx);
    const session = await createEnrollmentSession(ctx, org.id, { max_devices: 5 });
    const devicesBefore = await countRows(ctx.sql, 'devices');
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => activate({ code: session.id, serial: `BULK-${i}`, hardware: { slot: i } })),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(5);
    expect(statuses.filter((s) => s === 403)).toHaveLength(45);
    for (const r of results.filter((r) => r.status === 403)) expect(r.body.error).toBe('invalid_activation_code');
    expect(await sessionUsed(session.id)).toBe(5);
    const devices = await ctx.sql<{ id: string }[]>`select id from devices where enrollment_session_id = ${session.id}`;
    expect(devices.map((d) => d.id).sort()).toEqual(
      results
        .filter((r) => r.status === 200)
        .map((r) => r.body.device_id)
        .sort(),
    );
    expect(await countRows(ctx.sql, 'devices')).toBe(devicesBefore + 5);
  });

  it('rolls the quota back when the device cannot be written', async () => {
    const org = await createOrganization(ctx);
    const session = await createEnrollmentSession(ctx, org.id);
    // Break the organization so the device insert fails after the session was claimed.
    await ctx.sql`update org_units set protected = false where id = ${org.default_oe_id}`;
    try {
      const before = await snapshot();
      const res = await activate({ code: session.id, serial: newSerial(), hardware: { cpu: 'x' } });
      expect(res.status).toBe(500);
      expect(res.body.error).toBe('internal_error');
      expect(await snapshot()).toEqual(before);
      expect(await sessionUsed(session.id)).toBe(0);
    } finally {
      await ctx.sql`update org_units set protected = true where id = ${org.default_oe_id}`;
    }
  });
});

describe('POST /api/v1/activate bad input', () => {
  const big = { blob: 'x'.repeat(64 * 1024) };
  it.each([
    ['missing code', { code: undefined, serial: 'S1' }],
    ['empty code', { code: '', serial: 'S1' }],
    ['blank code', { code: '   ', serial: 'S1' }],
    ['over-long code', { code: 'A'.repeat(65), serial: 'S1' }],
    ['code not a string', { code: 12345, serial: 'S1' }],
    ['missing serial', {}],
    ['empty serial', { serial: '' }],
    ['blank serial', { serial: '   ' }],
    ['over-long serial', { serial: 'S'.repeat(129) }],
    ['serial with a control character', { serial: 'AB\u0000CD' }],
    ['serial with a newline', { serial: 'AB\nCD' }],
    ['serial not a string', { serial: 42 }],
    ['hostname with a space', { serial: 'S1', hostname: 'my host' }],
    ['over-long hostname', { serial: 'S1', hostname: `${'a'.repeat(63)}.`.repeat(4) + 'abc' }],
    ['empty hostname', { serial: 'S1', hostname: '' }],
    ['hardware an array', { serial: 'S1', hardware: [1, 2] }],
    ['hardware a string', { serial: 'S1', hardware: 'dell' }],
    ['hardware over 64 KiB', { serial: 'S1', hardware: big }],
    ['an unknown field', { serial: 'S1', organization_id: crypto.randomUUID() }],
  ])('rejects %s with 400 invalid_request and writes nothing', async (_case, fields) => {
    const org = await createOrganization(ctx);
    const code = await activationCodeOf(ctx, org.id);
    const before = await snapshot();
    const res = await activate({ code, ...fields });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request');
    expect(await snapshot()).toEqual(before);
  });

  it('accepts a 128-character serial, trims surrounding blanks, and accepts hostname and hardware as null', async () => {
    const org = await createOrganization(ctx);
    const code = await activationCodeOf(ctx, org.id);
    const long = await activate({ code, serial: 'S'.repeat(128) });
    expect(long.status).toBe(200);
    const padded = await activate({ code, serial: '  PADDED-1  ', hostname: null, hardware: null });
    expect(padded.status).toBe(200);
    expect((await deviceRow(padded.body.device_id)).serial).toBe('PADDED-1');
    // The document says so too (found by fuzzing: it named the Hardware object alone).
    const doc = (await ctx.request('GET', '/api/v1/openapi.json', { token: null })).body;
    expect(doc.components.schemas.ActivateRequest.properties.hardware).toEqual({
      anyOf: [{ $ref: '#/components/schemas/Hardware' }, { type: 'null' }],
    });
  });

  it('needs no admin token and ignores a wrong one', async () => {
    const org = await createOrganization(ctx);
    const code = await activationCodeOf(ctx, org.id);
    const res = await ctx.request('POST', '/api/v1/activate', { token: 'wrong', body: { code, serial: newSerial() } });
    expect(res.status).toBe(200);
  });
});
