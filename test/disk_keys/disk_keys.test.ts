import { describe, expect, it } from 'vitest';
import { verifyDiskKeys } from '../../api/disk_keys/service.ts';
import { testApp, request, type TestContext, useTestApp } from '../support/app.ts';
import { activateDevice, resolveDevice, TEMPLATES } from '../support/activation.ts';
import { bootstrapAgent, checkin, enrollAgent, insertBootstrapToken, unknownSecret } from '../support/agent.ts';
import { createApiKey } from '../support/access.ts';
import { createOrganization } from '../support/builders.ts';

const ctx = useTestApp();

const ALPHABET = 'cbdefghijklnrtuv';
function recoveryKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  const chars = [...bytes].map((b) => ALPHABET[b >> 4]! + ALPHABET[b & 15]!).join('');
  return chars.match(/.{8}/g)!.join('-');
}

function escrowBody(overrides: Record<string, unknown> = {}) {
  return {
    device_path: '/dev/nvme0n1p3',
    luks_uuid: crypto.randomUUID(),
    keyslot: 1,
    recovery_key: recoveryKey(),
    ...overrides,
  };
}

function escrow(c: TestContext, token: string | null, body: unknown) {
  return c.request('POST', '/api/v1/agent/disk-keys', { token, body });
}

/** A device resolved with the encrypted template (not bootstrapped): its bootstrap token and passphrase. */
async function installing(organizationId?: string) {
  const org = organizationId ?? (await createOrganization(ctx)).id;
  const activated = await activateDevice(ctx, org);
  const blueprint = await resolveDevice(ctx, {
    code: activated.code,
    device_id: activated.device_id,
    template_id: TEMPLATES.debianEncrypted,
  });
  return { organizationId: org, deviceId: activated.device_id, code: activated.code, blueprint };
}

async function keysOf(deviceId: string) {
  return ctx.sql<{ id: string; status: string; key_sealed: unknown }[]>`
    select id, status, key_sealed from disk_keys where device_id = ${deviceId} order by escrowed_at, id`;
}

describe('resolve of an encrypted template', () => {
  it('answers a one-time install passphrase of 43 base64url characters, a new one each time, stored nowhere', async () => {
    const device = await installing();
    expect(device.blueprint.partitioning).toEqual({
      scheme: 'luks-lvm',
      root_filesystem: 'ext4',
      encryption: { type: 'luks2', unlock: 'tpm2' },
    });
    const passphrase = device.blueprint.disk_encryption!.install_passphrase;
    expect(passphrase).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const again = await resolveDevice(ctx, {
      code: device.code,
      device_id: device.deviceId,
      template_id: TEMPLATES.debianEncrypted,
    });
    expect(again.disk_encryption!.install_passphrase).not.toBe(passphrase);
    const [dump] = await ctx.sql<{ found: boolean }[]>`
      select exists (
        select 1 from devices d where d.id = ${device.deviceId} and row_to_json(d)::text like ${`%${passphrase}%`}
      ) or exists (select 1 from audit_events where details::text like ${`%${passphrase}%`})
        or exists (select 1 from webhook_events where data::text like ${`%${passphrase}%`}) as found`;
    expect(dump!.found).toBe(false);
  });

  it('Ubuntu Verschlüsselt is seeded with the same encryption; other templates answer null', async () => {
    const org = (await createOrganization(ctx)).id;
    const ubuntu = await activateDevice(ctx, org);
    const blueprint = await resolveDevice(ctx, {
      code: ubuntu.code,
      device_id: ubuntu.device_id,
      template_id: TEMPLATES.ubuntuEncrypted,
    });
    expect(blueprint.template.name).toBe('Ubuntu Verschlüsselt');
    expect(blueprint.partitioning.encryption).toEqual({ type: 'luks2', unlock: 'tpm2' });
    expect(blueprint.disk_encryption!.install_passphrase).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const plain = await activateDevice(ctx, org);
    const standard = await resolveDevice(ctx, { code: plain.code, device_id: plain.device_id });
    expect(standard.partitioning.encryption).toBeNull();
    expect(standard.disk_encryption).toBeNull();
  });

  it('the templates hold encryption exactly when their scheme is luks-lvm (a constraint)', async () => {
    await expect(
      ctx.sql`update templates set partitioning = partitioning || '{"encryption": null}'
              where id = ${TEMPLATES.debianEncrypted}`,
    ).rejects.toThrow(/templates_partitioning_encryption/);
    await expect(
      ctx.sql`update templates set partitioning = partitioning || '{"encryption": {"type": "luks2", "unlock": "tpm2"}}'
              where id = ${TEMPLATES.debianStandard}`,
    ).rejects.toThrow(/templates_partitioning_encryption/);
  });
});

describe('without DISK_KEY_ENCRYPTION_KEY', () => {
  it('resolve of an encrypted template, escrow and reveal answer 422 disk_encryption_unavailable and write nothing', async () => {
    const plain = testApp(ctx.sql, { ...ctx.config, diskKeyEncryptionKey: undefined });
    const call = (method: string, path: string, options: Parameters<typeof request>[3] = {}) =>
      request(plain, method, path, options);
    const org = (await createOrganization(ctx)).id;
    const activated = await activateDevice(ctx, org);
    const res = await call('POST', `/api/v1/templates/${TEMPLATES.debianEncrypted}/resolve`, {
      token: null,
      body: { code: activated.code, device_id: activated.device_id },
    });
    expect(res.status).toBe(422);
    expect(res.body.error).toBe('disk_encryption_unavailable');
    const [device] = await ctx.sql`select template_id from devices where id = ${activated.device_id}`;
    expect(device!.template_id).toBeNull();
    expect(await ctx.sql`select 1 from bootstrap_tokens where device_id = ${activated.device_id}`).toHaveLength(0);
    // A template without encryption still resolves.
    const standard = await call('POST', `/api/v1/templates/${TEMPLATES.debianStandard}/resolve`, {
      token: null,
      body: { code: activated.code, device_id: activated.device_id },
    });
    expect(standard.status).toBe(200);
    const token = standard.body.agent.bootstrap_token;
    const escrowed = await call('POST', '/api/v1/agent/disk-keys', { token, body: escrowBody() });
    expect(escrowed.status).toBe(422);
    expect(escrowed.body.error).toBe('disk_encryption_unavailable');
    expect(await keysOf(activated.device_id)).toEqual([]);

    const stored = await escrow(ctx, token, escrowBody());
    expect(stored.status).toBe(201);
    const reveal = await call('POST', `/api/v1/disk-keys/${stored.body.id}/reveal`, { body: { reason: 'Ticket 1' } });
    expect(reveal.status).toBe(422);
    expect(reveal.body.error).toBe('disk_encryption_unavailable');
    const [row] = await ctx.sql`select revealed_at from disk_keys where id = ${stored.body.id}`;
    expect(row!.revealed_at).toBeNull();
  });
});

describe('POST /api/v1/agent/disk-keys', () => {
  it('escrows with the bootstrap token, which stays usable for the bootstrap, and stores the key sealed only', async () => {
    const device = await installing();
    const body = escrowBody({ luks_uuid: crypto.randomUUID().toUpperCase() });
    const res = await escrow(ctx, device.blueprint.agent.bootstrap_token, body);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      luks_uuid: body.luks_uuid.toLowerCase(),
      keyslot: 1,
      escrowed_at: expect.any(String),
      verified_at: null,
      revealed_at: null,
      status: 'escrowed',
    });
    const [stored] = await ctx.sql<
      { text: string }[]
    >`select row_to_json(k)::text as text from disk_keys k where id = ${res.body.id}`;
    expect(stored!.text).not.toContain(body.recovery_key);
    expect(stored!.text).not.toContain(body.recovery_key.replaceAll('-', ''));
    // The token was not used up.
    await bootstrapAgent(ctx, device.blueprint.agent);
  });

  it('escrows with the agent secret; a retry of the same slot replaces the key instead of adding one', async () => {
    const agent = await enrollAgent(ctx);
    const body = escrowBody();
    const first = await escrow(ctx, agent.secret, body);
    expect(first.status).toBe(201);
    const retry = await escrow(ctx, agent.secret, { ...body, recovery_key: recoveryKey() });
    expect(retry.status).toBe(201);
    expect(retry.body.id).toBe(first.body.id);
    expect(await keysOf(agent.device_id)).toHaveLength(1);
  });

  it.each([
    ['a key not in the 8 × 8 format', { recovery_key: 'cbdefghi-jklnrtuv' }],
    ['a key with letters outside the alphabet', { recovery_key: `a${recoveryKey().slice(1)}` }],
    ['a key in upper case', { recovery_key: recoveryKey().toUpperCase() }],
    ['a key slot past 31', { keyslot: 32 }],
    ['a relative device path', { device_path: 'sda3' }],
    ['a device path with blanks', { device_path: '/dev/sda 3' }],
    ['a LUKS UUID that is none', { luks_uuid: 'not-a-uuid' }],
    ['an unknown field', { passphrase: 'x' }],
  ])('refuses %s with 400 and stores nothing', async (_, overrides) => {
    const agent = await enrollAgent(ctx);
    const res = await escrow(ctx, agent.secret, escrowBody(overrides));
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request');
    expect(JSON.stringify(res.body)).not.toMatch(/[cbdefghijklnrtuv]{8}-[cbdefghijklnrtuv]{8}-/);
    expect(await keysOf(agent.device_id)).toEqual([]);
  });

  it('refuses unknown credentials with 401, an expired bootstrap token with invalid_bootstrap_token', async () => {
    for (const token of [null, 'short', unknownSecret()]) {
      const res = await escrow(ctx, token, escrowBody());
      expect(res.status).toBe(401);
      expect(res.body.error).toBe('invalid_agent_secret');
    }
    const device = await installing();
    const expired = await insertBootstrapToken(ctx, device.deviceId, new Date(Date.now() - 1000));
    const res = await escrow(ctx, expired, escrowBody());
    expect(res.status).toBe(401);
    expect(res.body.error).toBe('invalid_bootstrap_token');
    expect(await keysOf(device.deviceId)).toEqual([]);
  });

  it('refuses an archived device with 403 and a replaces of another device 400', async () => {
    const agent = await enrollAgent(ctx);
    const other = await enrollAgent(ctx, { organizationId: agent.organization_id });
    const theirs = await escrow(ctx, other.secret, escrowBody());
    const res = await escrow(ctx, agent.secret, escrowBody({ replaces: theirs.body.id }));
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual([{ path: ['replaces'], message: expect.any(String) }]);
    expect(await keysOf(agent.device_id)).toEqual([]);
    expect((await keysOf(other.device_id))[0]!.status).toBe('escrowed');
    expect((await ctx.request('POST', `/api/v1/devices/${agent.device_id}/archive`)).status).toBe(200);
    const archived = await escrow(ctx, agent.secret, escrowBody());
    expect(archived.status).toBe(403);
    expect(archived.body.error).toBe('device_archived');
  });
});

describe('reading and revealing keys', () => {
  it('lists a device’s keys without the key, for the operator and an admin; a viewer gets 403', async () => {
    const agent = await enrollAgent(ctx);
    const body = escrowBody();
    const stored = await escrow(ctx, agent.secret, body);
    const admin = await createApiKey(ctx, agent.organization_id, 'admin');
    const viewer = await createApiKey(ctx, agent.organization_id, 'viewer');
    for (const token of [undefined, admin.key]) {
      const res = await ctx.request('GET', `/api/v1/devices/${agent.device_id}/disk-keys`, { token });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ items: [stored.body], next_cursor: null });
      expect(JSON.stringify(res.body)).not.toContain(body.recovery_key);
    }
    const list = await ctx.request('GET', `/api/v1/devices/${agent.device_id}/disk-keys`, { token: viewer.key });
    expect(list.status).toBe(403);
    const reveal = await ctx.request('POST', `/api/v1/disk-keys/${stored.body.id}/reveal`, {
      token: viewer.key,
      body: { reason: 'curious' },
    });
    expect(reveal.status).toBe(403);
    const [row] = await ctx.sql`select revealed_at from disk_keys where id = ${stored.body.id}`;
    expect(row!.revealed_at).toBeNull();
  });

  it('pages the list', async () => {
    const agent = await enrollAgent(ctx);
    for (const slot of [1, 2, 3])
      expect((await escrow(ctx, agent.secret, escrowBody({ keyslot: slot }))).status).toBe(201);
    const first = await ctx.request('GET', `/api/v1/devices/${agent.device_id}/disk-keys?limit=2`);
    expect(first.body.items.map((k: { keyslot: number }) => k.keyslot)).toEqual([1, 2]);
    const second = await ctx.request(
      'GET',
      `/api/v1/devices/${agent.device_id}/disk-keys?limit=2&cursor=${first.body.next_cursor}`,
    );
    expect(second.body).toMatchObject({ items: [{ keyslot: 3 }], next_cursor: null });
  });

  it('another organization’s key or device is 404; an unknown one too', async () => {
    const agent = await enrollAgent(ctx);
    const stored = await escrow(ctx, agent.secret, escrowBody());
    const stranger = await createOrganization(ctx);
    const strangerAdmin = await createApiKey(ctx, stranger.id, 'admin');
    const reveal = await ctx.request('POST', `/api/v1/disk-keys/${stored.body.id}/reveal`, {
      token: strangerAdmin.key,
      body: { reason: 'not mine' },
    });
    expect(reveal.status).toBe(404);
    const list = await ctx.request('GET', `/api/v1/devices/${agent.device_id}/disk-keys`, { token: strangerAdmin.key });
    expect(list.status).toBe(404);
    const unknown = await ctx.request('POST', `/api/v1/disk-keys/${crypto.randomUUID()}/reveal`, {
      body: { reason: 'nothing' },
    });
    expect(unknown.status).toBe(404);
    expect((await ctx.request('GET', `/api/v1/devices/${crypto.randomUUID()}/disk-keys`)).status).toBe(404);
  });

  it.each([
    ['no reason', {}],
    ['a reason of 2 characters', { reason: 'ab' }],
    ['a reason of blanks', { reason: '     ' }],
    ['a reason of 501 characters', { reason: 'x'.repeat(501) }],
    ['an unknown field', { reason: 'Ticket 1', why: 'x' }],
  ])('a reveal with %s is 400 and changes nothing', async (_, body) => {
    const agent = await enrollAgent(ctx);
    const stored = await escrow(ctx, agent.secret, escrowBody());
    const res = await ctx.request('POST', `/api/v1/disk-keys/${stored.body.id}/reveal`, { body });
    expect(res.status).toBe(400);
    const [row] = await ctx.sql`select revealed_at from disk_keys where id = ${stored.body.id}`;
    expect(row!.revealed_at).toBeNull();
    expect(await ctx.sql`select 1 from audit_events where target_id = ${stored.body.id}`).toHaveLength(0);
  });

  it('a reveal returns the key, is audited with the reason and fires disk_key.revealed without the key', async () => {
    const agent = await enrollAgent(ctx);
    const webhook = await ctx.request('POST', `/api/v1/organizations/${agent.organization_id}/webhooks`, {
      body: { url: 'https://hooks.example.com/keys', events: ['disk_key.revealed'] },
    });
    expect(webhook.status).toBe(201);
    const body = escrowBody();
    const stored = await escrow(ctx, agent.secret, body);
    const admin = await createApiKey(ctx, agent.organization_id, 'admin');
    const reason = 'Ticket 4711: TPM no longer unlocks';
    const res = await ctx.request('POST', `/api/v1/disk-keys/${stored.body.id}/reveal`, {
      token: admin.key,
      body: { reason },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ recovery_key: body.recovery_key });
    expect(res.headers.get('cache-control')).toBe('no-store');
    const [audit] = await ctx.sql<{ action: string; details: Record<string, unknown>; target_type: string }[]>`
      select action, details, target_type from audit_events where target_id = ${stored.body.id}`;
    expect(audit).toMatchObject({ action: 'disk_key.reveal', target_type: 'disk_key', details: { reason } });
    const [event] = await ctx.sql<{ type: string; data: Record<string, unknown> }[]>`
      select type, data from webhook_events where organization_id = ${agent.organization_id} and type = 'disk_key.revealed'`;
    expect(event!.data).toEqual({ device_id: agent.device_id, key_id: stored.body.id, reason });
    const [leak] = await ctx.sql<{ found: boolean }[]>`
      select exists (select 1 from audit_events where details::text like ${`%${body.recovery_key}%`})
          or exists (select 1 from webhook_events where data::text like ${`%${body.recovery_key}%`}) as found`;
    expect(leak!.found).toBe(false);
    const listed = await ctx.request('GET', `/api/v1/devices/${agent.device_id}/disk-keys`);
    expect(listed.body.items[0].revealed_at).not.toBeNull();
  });
});

describe('rotation after a reveal', () => {
  it('the next check-in carries the key to rotate (a new ETag); the escrow with replaces rotates it', async () => {
    const agent = await enrollAgent(ctx);
    const body = escrowBody();
    const stored = await escrow(ctx, agent.secret, body);
    const before = await checkin(ctx, agent.secret);
    expect(before.status).toBe(200);
    expect(before.body.disk_key_rotation).toBeNull();
    const etag = before.headers.get('etag')!;
    const unchanged = await ctx.request('POST', '/api/v1/agent/checkin', {
      token: agent.secret,
      headers: { 'if-none-match': etag },
    });
    expect(unchanged.status).toBe(304);

    await ctx.request('POST', `/api/v1/disk-keys/${stored.body.id}/reveal`, { body: { reason: 'Ticket 1' } });
    const after = await ctx.request('POST', '/api/v1/agent/checkin', {
      token: agent.secret,
      headers: { 'if-none-match': etag },
    });
    expect(after.status).toBe(200);
    expect(after.headers.get('etag')).not.toBe(etag);
    expect(after.body.disk_key_rotation).toEqual({
      key_id: stored.body.id,
      luks_uuid: body.luks_uuid,
      recovery_key: body.recovery_key,
    });
    // Nowhere in a read.
    const device = await ctx.request('GET', `/api/v1/devices/${agent.device_id}`);
    expect(JSON.stringify(device.body)).not.toContain(body.recovery_key);

    const replacement = await escrow(
      ctx,
      agent.secret,
      escrowBody({ luks_uuid: body.luks_uuid, keyslot: 2, replaces: stored.body.id }),
    );
    expect(replacement.status).toBe(201);
    expect((await keysOf(agent.device_id)).map((k) => k.status)).toEqual(['rotated', 'escrowed']);
    const done = await ctx.request('POST', '/api/v1/agent/checkin', {
      token: agent.secret,
      headers: { 'if-none-match': after.headers.get('etag')! },
    });
    expect(done.status).toBe(200);
    expect(done.body.disk_key_rotation).toBeNull();
    expect(done.headers.get('etag')).toBe(etag);
  });
});

describe('verifyDiskKeys', () => {
  it('marks a key verified when the inventory shows its slot and missing when the slot is gone', async () => {
    const agent = await enrollAgent(ctx);
    const luksUuid = crypto.randomUUID();
    const one = await escrow(ctx, agent.secret, escrowBody({ luks_uuid: luksUuid, keyslot: 1 }));
    const two = await escrow(ctx, agent.secret, escrowBody({ luks_uuid: luksUuid, keyslot: 2 }));
    const changed = await verifyDiskKeys(ctx.sql, agent.device_id, [
      { device_path: '/dev/sda3', luks_uuid: luksUuid, keyslots: [1, 2, 3] },
    ]);
    expect(changed.map((k) => k.status)).toEqual(['verified', 'verified']);
    const listed = await ctx.request('GET', `/api/v1/devices/${agent.device_id}/disk-keys`);
    expect(listed.body.items.every((k: { verified_at: string | null }) => k.verified_at !== null)).toBe(true);

    await verifyDiskKeys(ctx.sql, agent.device_id, [{ device_path: '/dev/sda3', luks_uuid: luksUuid, keyslots: [1] }]);
    const rows = await ctx.sql<{ id: string; status: string }[]>`
      select id, status from disk_keys where device_id = ${agent.device_id}`;
    expect(Object.fromEntries(rows.map((r) => [r.id, r.status]))).toEqual({
      [one.body.id]: 'verified',
      [two.body.id]: 'missing',
    });
    // The volume gone altogether: every key of it is missing; another device's keys are untouched.
    const other = await enrollAgent(ctx, { organizationId: agent.organization_id });
    const theirs = await escrow(ctx, other.secret, escrowBody({ luks_uuid: luksUuid, keyslot: 1 }));
    await verifyDiskKeys(ctx.sql, agent.device_id, []);
    expect((await keysOf(agent.device_id)).map((k) => k.status)).toEqual(['missing', 'missing']);
    expect((await keysOf(other.device_id)).map((k) => k.id)).toEqual([theirs.body.id]);
    expect((await keysOf(other.device_id))[0]!.status).toBe('escrowed');
  });
});

describe('fleet status', () => {
  it('counts disk_encryption: encrypted, escrowed, missing, unencrypted', async () => {
    const org = (await createOrganization(ctx)).id;
    const held = await enrollAgent(ctx, { organizationId: org });
    const lost = await enrollAgent(ctx, { organizationId: org });
    await enrollAgent(ctx, { organizationId: org });
    const luksUuid = crypto.randomUUID();
    await escrow(ctx, held.secret, escrowBody());
    await escrow(ctx, lost.secret, escrowBody({ luks_uuid: luksUuid }));
    await verifyDiskKeys(ctx.sql, lost.device_id, [{ device_path: '/dev/sda3', luks_uuid: luksUuid, keyslots: [0] }]);
    const res = await ctx.request('GET', `/api/v1/organizations/${org}/fleet-status`);
    expect(res.status).toBe(200);
    expect(res.body.disk_encryption).toEqual({ encrypted: 2, escrowed: 1, missing: 1, unencrypted: 1 });
  });

  it('the device list filters by each count: the same devices the fleet status counts; an unknown state is 400', async () => {
    const org = (await createOrganization(ctx)).id;
    const held = await enrollAgent(ctx, { organizationId: org });
    const lost = await enrollAgent(ctx, { organizationId: org });
    const plain = await enrollAgent(ctx, { organizationId: org });
    const rotated = await enrollAgent(ctx, { organizationId: org });
    // Another organization's encrypted device is never listed.
    const theirs = await enrollAgent(ctx);
    const luksUuid = crypto.randomUUID();
    const heldUuid = crypto.randomUUID();
    await escrow(ctx, held.secret, escrowBody({ luks_uuid: heldUuid }));
    await escrow(ctx, theirs.secret, escrowBody());
    await escrow(ctx, lost.secret, escrowBody({ luks_uuid: luksUuid }));
    await verifyDiskKeys(ctx.sql, lost.device_id, [{ device_path: '/dev/sda3', luks_uuid: luksUuid, keyslots: [0] }]);
    // A held and a missing key of one device (two volumes): the device's disk key is held.
    await escrow(ctx, held.secret, escrowBody({ luks_uuid: luksUuid }));
    const heldKeys = await verifyDiskKeys(ctx.sql, held.device_id, [
      { device_path: '/dev/sda3', luks_uuid: heldUuid, keyslots: [1] },
      { device_path: '/dev/sdb1', luks_uuid: luksUuid, keyslots: [0] },
    ]);
    expect(heldKeys.map((k) => k.status).sort()).toEqual(['missing', 'verified']);
    // A device whose only key was rotated away (the row kept, as a rotation leaves it) counts as unencrypted.
    const old = await escrow(ctx, rotated.secret, escrowBody());
    await ctx.sql`update disk_keys set status = 'rotated', rotated_at = now() where id = ${old.body.id}`;

    const status = (await ctx.request('GET', `/api/v1/organizations/${org}/fleet-status`)).body.disk_encryption;
    expect(status).toEqual({ encrypted: 2, escrowed: 1, missing: 1, unencrypted: 2 });
    const listed = async (state: string) => {
      const res = await ctx.request('GET', `/api/v1/organizations/${org}/devices?disk_encryption=${state}&limit=100`);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return (res.body.items as Array<{ id: string }>).map((d) => d.id).sort();
    };
    expect(await listed('encrypted')).toEqual([held.device_id, lost.device_id].sort());
    expect(await listed('escrowed')).toEqual([held.device_id]);
    expect(await listed('missing')).toEqual([lost.device_id]);
    expect(await listed('unencrypted')).toEqual([plain.device_id, rotated.device_id].sort());
    for (const state of ['encrypted', 'escrowed', 'missing', 'unencrypted'] as const) {
      expect(await listed(state)).toHaveLength(status[state]);
    }
    // With another filter: all must hold.
    const serial = (await ctx.request('GET', `/api/v1/devices/${lost.device_id}`)).body.serial;
    expect(await listed(`encrypted&q=${serial}`)).toEqual([lost.device_id]);
    expect(await listed(`escrowed&q=${serial}`)).toEqual([]);

    for (const bad of ['rotated', 'ESCROWED', '']) {
      const res = await ctx.request('GET', `/api/v1/organizations/${org}/devices?disk_encryption=${bad}`);
      expect(res.status, bad).toBe(400);
      expect(res.body.error).toBe('invalid_request');
    }
  });
});
