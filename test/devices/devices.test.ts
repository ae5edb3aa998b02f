import { describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { addToGroup, insertDevice, insertGroup, insertOrgUnit, TEMPLATE_IDS } from '../support/devices.ts';

const ctx = useTestApp();

const ids = (body: { items: Array<{ id: string }> }) => body.items.map((d) => d.id);

describe('GET /api/v1/devices/{id}', () => {
  it('returns the contract fields, never the secret hash', async () => {
    const org = await createOrganization(ctx);
    const d = await insertDevice(ctx.sql, { organizationId: org.id, serial: 'PF3XK2QZ', hostname: 'arbeitsplatz-017' });
    await ctx.sql`update devices set agent_secret_hash = ${new Uint8Array(32).fill(1)}, agent_secret_issued_at = now() where id = ${d.id}`;
    const res = await ctx.request('GET', `/api/v1/devices/${d.id}`);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual([
      'agent_last_checkin',
      'agent_secret_issued_at',
      'agent_version',
      'archived_at',
      'backend',
      'convergence',
      'created_at',
      'deprovisioned_at',
      'enrollment_session_id',
      'group_ids',
      'hostname',
      'id',
      'oe_id',
      'organization_id',
      'serial',
      'status',
      'template_id',
    ]);
    expect(res.body).toMatchObject({
      id: d.id,
      organization_id: org.id,
      serial: 'PF3XK2QZ',
      hostname: 'arbeitsplatz-017',
      oe_id: org.default_oe_id,
      group_ids: [],
      template_id: TEMPLATE_IDS.debianStandard,
      backend: 'debian',
      archived_at: null,
    });
    expect(JSON.stringify(res.body)).not.toContain('hash');
  });

  it('reads archived devices too; 404 for unknown and malformed ids', async () => {
    const org = await createOrganization(ctx);
    const d = await insertDevice(ctx.sql, {
      organizationId: org.id,
      archived: true,
      templateId: TEMPLATE_IDS.ubuntuStandard,
    });
    const res = await ctx.request('GET', `/api/v1/devices/${d.id}`);
    expect(res.status).toBe(200);
    expect(res.body.archived_at).not.toBeNull();
    expect(res.body.backend).toBe('ubuntu');
    for (const id of [crypto.randomUUID(), 'xyz']) {
      const missing = await ctx.request('GET', `/api/v1/devices/${id}`);
      expect(missing.status).toBe(404);
      expect(missing.body.error).toBe('not_found');
    }
  });
});

describe('GET /api/v1/organizations/{id}/devices', () => {
  it("lists live and deprovisioned devices of the organization, not archived ones or other organizations'", async () => {
    const org = await createOrganization(ctx);
    const other = await createOrganization(ctx);
    const live = await insertDevice(ctx.sql, { organizationId: org.id });
    const deprovisioned = await insertDevice(ctx.sql, { organizationId: org.id, deprovisioned: true });
    await insertDevice(ctx.sql, { organizationId: org.id, archived: true });
    await insertDevice(ctx.sql, { organizationId: other.id });
    const res = await ctx.request('GET', `/api/v1/organizations/${org.id}/devices`);
    expect(res.status).toBe(200);
    expect(ids(res.body)).toEqual([live.id, deprovisioned.id]);
    expect(res.body.items[1].deprovisioned_at).not.toBeNull();
    expect(res.body.next_cursor).toBeNull();
  });

  it('pages through every device exactly once', async () => {
    const org = await createOrganization(ctx);
    const created: string[] = [];
    for (let i = 0; i < 7; i++) created.push((await insertDevice(ctx.sql, { organizationId: org.id })).id);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: any = await ctx.request(
        'GET',
        `/api/v1/organizations/${org.id}/devices?sort=created_at&limit=3${cursor ? `&cursor=${cursor}` : ''}`,
      );
      expect(page.status).toBe(200);
      expect(page.body.items.length).toBeLessThanOrEqual(3);
      seen.push(...ids(page.body));
      cursor = page.body.next_cursor;
    } while (cursor);
    expect(seen).toEqual(created);
    expect(seen).toEqual(
      ids((await ctx.request('GET', `/api/v1/organizations/${org.id}/devices?sort=created_at&limit=500`)).body),
    );
  });

  it('filters by org unit (its subtree) and by group, also combined', async () => {
    const org = await createOrganization(ctx);
    const unit = await insertOrgUnit(ctx.sql, org.id, 'Schule');
    const child = await insertOrgUnit(ctx.sql, org.id, 'Klasse', unit);
    const inUnit = await insertDevice(ctx.sql, { organizationId: org.id, oeId: unit });
    const inChild = await insertDevice(ctx.sql, { organizationId: org.id, oeId: child });
    const inDefault = await insertDevice(ctx.sql, { organizationId: org.id });
    const group = await insertGroup(ctx.sql, org.id);
    await addToGroup(ctx.sql, group, inUnit.id);
    await addToGroup(ctx.sql, group, inDefault.id);
    const archived = await insertDevice(ctx.sql, { organizationId: org.id, oeId: unit, archived: true });
    await addToGroup(ctx.sql, group, archived.id);

    const base = `/api/v1/organizations/${org.id}/devices`;
    expect(ids((await ctx.request('GET', `${base}?oe_id=${unit}`)).body)).toEqual([inUnit.id, inChild.id]);
    expect(ids((await ctx.request('GET', `${base}?oe_id=${child}`)).body)).toEqual([inChild.id]);
    expect(ids((await ctx.request('GET', `${base}?oe_id=${org.default_oe_id}`)).body)).toEqual([inDefault.id]);
    expect(ids((await ctx.request('GET', `${base}?group_id=${group}`)).body)).toEqual([inUnit.id, inDefault.id]);
    expect(ids((await ctx.request('GET', `${base}?group_id=${group}&oe_id=${unit}`)).body)).toEqual([inUnit.id]);
    expect(ids((await ctx.request('GET', `${base}?group_id=${group}&oe_id=${child}`)).body)).toEqual([]);
  });

  it("answers 404 for an unknown organization, unit or group, 422 for another organization's, 400 for malformed filters", async () => {
    const org = await createOrganization(ctx);
    const other = await createOrganization(ctx);
    const foreignGroup = await insertGroup(ctx.sql, other.id);
    const base = `/api/v1/organizations/${org.id}/devices`;
    for (const path of [
      `/api/v1/organizations/${crypto.randomUUID()}/devices`,
      `${base}?oe_id=${crypto.randomUUID()}`,
      `${base}?group_id=${crypto.randomUUID()}`,
    ]) {
      const res = await ctx.request('GET', path);
      expect(res.status, path).toBe(404);
      expect(res.body.error).toBe('not_found');
    }
    for (const path of [`${base}?oe_id=${other.default_oe_id}`, `${base}?group_id=${foreignGroup}`]) {
      const res = await ctx.request('GET', path);
      expect(res.status, path).toBe(422);
      expect(res.body.error).toBe('organization_mismatch');
    }
    for (const path of [`${base}?oe_id=nope`, `${base}?group_id=1`, `${base}?limit=501`, `${base}?cursor=zzz`]) {
      const res = await ctx.request('GET', path);
      expect(res.status, path).toBe(400);
      expect(res.body.error).toBe('invalid_request');
    }
  });
});

describe('PUT /api/v1/devices/{id}/org-unit', () => {
  it('moves the device and returns it in its new unit', async () => {
    const org = await createOrganization(ctx);
    const unit = await insertOrgUnit(ctx.sql, org.id, 'Schule');
    const d = await insertDevice(ctx.sql, { organizationId: org.id, deprovisioned: true });
    const res = await ctx.request('PUT', `/api/v1/devices/${d.id}/org-unit`, { body: { oe_id: unit } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: d.id, oe_id: unit });
    expect((await ctx.request('GET', `/api/v1/devices/${d.id}`)).body.oe_id).toBe(unit);
    const back = await ctx.request('PUT', `/api/v1/devices/${d.id}/org-unit`, { body: { oe_id: org.default_oe_id } });
    expect(back.body.oe_id).toBe(org.default_oe_id);
  });

  async function oeOf(id: string) {
    const [row] = await ctx.sql<{ oe_id: string }[]>`select oe_id from devices where id = ${id}`;
    return row!.oe_id;
  }

  it('answers 409 device_archived for an archived device and does not move it, audit it or tell a webhook', async () => {
    const org = await createOrganization(ctx);
    const unit = await insertOrgUnit(ctx.sql, org.id, 'Schule');
    const d = await insertDevice(ctx.sql, { organizationId: org.id, archived: true });
    const written = () => ctx.sql`
      select (select count(*)::int from audit_events where organization_id = ${org.id}) as audit,
             (select count(*)::int from webhook_events where organization_id = ${org.id}) as webhook`;
    const before = await written();
    const res = await ctx.request('PUT', `/api/v1/devices/${d.id}/org-unit`, { body: { oe_id: unit } });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ error: 'device_archived', message: `device ${d.id} is archived: it cannot be moved` });
    expect(await oeOf(d.id)).toBe(org.default_oe_id);
    expect(await written()).toEqual(before);
  });

  it('answers 422 organization_mismatch for a unit of another organization and 404 for unknown ids', async () => {
    const org = await createOrganization(ctx);
    const other = await createOrganization(ctx);
    const d = await insertDevice(ctx.sql, { organizationId: org.id });
    const mismatch = await ctx.request('PUT', `/api/v1/devices/${d.id}/org-unit`, {
      body: { oe_id: other.default_oe_id },
    });
    expect(mismatch.status).toBe(422);
    expect(mismatch.body.error).toBe('organization_mismatch');
    const unknownUnit = await ctx.request('PUT', `/api/v1/devices/${d.id}/org-unit`, {
      body: { oe_id: crypto.randomUUID() },
    });
    expect(unknownUnit.status).toBe(404);
    expect(unknownUnit.body.error).toBe('not_found');
    const unknownDevice = await ctx.request('PUT', `/api/v1/devices/${crypto.randomUUID()}/org-unit`, {
      body: { oe_id: org.default_oe_id },
    });
    expect(unknownDevice.status).toBe(404);
    expect(await oeOf(d.id)).toBe(org.default_oe_id);
  });

  it.each([
    ['missing oe_id', {}],
    ['null oe_id', { oe_id: null }],
    ['malformed oe_id', { oe_id: 'abc' }],
    ['unknown field', { oe_id: crypto.randomUUID(), organization_id: crypto.randomUUID() }],
  ])('rejects %s with 400', async (_case, body) => {
    const org = await createOrganization(ctx);
    const d = await insertDevice(ctx.sql, { organizationId: org.id });
    const res = await ctx.request('PUT', `/api/v1/devices/${d.id}/org-unit`, { body });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request');
    expect(await oeOf(d.id)).toBe(org.default_oe_id);
  });
});

describe('devices: authentication', () => {
  it('answers 401 without the admin token and moves nothing', async () => {
    const org = await createOrganization(ctx);
    const unit = await insertOrgUnit(ctx.sql, org.id, 'Schule');
    const d = await insertDevice(ctx.sql, { organizationId: org.id });
    for (const [method, path, body] of [
      ['GET', `/api/v1/organizations/${org.id}/devices`, undefined],
      ['GET', `/api/v1/devices/${d.id}`, undefined],
      ['PUT', `/api/v1/devices/${d.id}/org-unit`, { oe_id: unit }],
    ] as const) {
      for (const token of [null, 'wrong']) {
        const res = await ctx.request(method, path, { body, token });
        expect(res.status).toBe(401);
        expect(res.body.error).toBe('unauthorized');
      }
    }
    const [row] = await ctx.sql`select oe_id from devices where id = ${d.id}`;
    expect(row!.oe_id).toBe(org.default_oe_id);
  });
});
