import { describe, expect, it } from 'vitest';
import { waitForLockWaiter } from '../support/agent.ts';
import { type TestResponse, useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { countRows } from '../support/db.ts';
import { insertDevice } from '../support/devices.ts';

const ctx = useTestApp();

async function createGroup(orgId: string, name = 'Lehrerzimmer') {
  const res = await ctx.request('POST', `/api/v1/organizations/${orgId}/groups`, { body: { name } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as { id: string; organization_id: string; name: string; created_at: string };
}

async function memberIds(groupId: string): Promise<string[]> {
  const rows = await ctx.sql<
    { device_id: string }[]
  >`select device_id from group_members where group_id = ${groupId} order by device_id`;
  return rows.map((r) => r.device_id);
}

describe('group CRUD', () => {
  it('creates, lists, reads, renames and deletes a group', async () => {
    const org = await createOrganization(ctx);
    const other = await createOrganization(ctx);
    await createGroup(other.id, 'Fremd');
    const g1 = await createGroup(org.id, 'Lehrer');
    expect(Object.keys(g1).sort()).toEqual(['created_at', 'id', 'name', 'organization_id']);
    expect(g1).toMatchObject({ organization_id: org.id, name: 'Lehrer' });
    const g2 = await createGroup(org.id, 'Schüler');
    const g3 = await createGroup(org.id, 'Verwaltung');

    const list = await ctx.request('GET', `/api/v1/organizations/${org.id}/groups`);
    expect(list.status).toBe(200);
    // Creation order: (created_at, id).
    const ordered = [g1, g2, g3].sort((x, y) => x.created_at.localeCompare(y.created_at) || x.id.localeCompare(y.id));
    expect(list.body).toEqual({ items: ordered, next_cursor: null });
    const page1 = await ctx.request('GET', `/api/v1/organizations/${org.id}/groups?limit=2`);
    expect(page1.body.items).toEqual(ordered.slice(0, 2));
    const page2 = await ctx.request(
      'GET',
      `/api/v1/organizations/${org.id}/groups?limit=2&cursor=${page1.body.next_cursor}`,
    );
    expect(page2.body).toEqual({ items: ordered.slice(2), next_cursor: null });

    expect((await ctx.request('GET', `/api/v1/groups/${g1.id}`)).body).toEqual(g1);
    const renamed = await ctx.request('PATCH', `/api/v1/groups/${g1.id}`, { body: { name: 'Lehrkräfte' } });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toEqual({ ...g1, name: 'Lehrkräfte' });
    expect((await ctx.request('PATCH', `/api/v1/groups/${g1.id}`, { body: {} })).body).toEqual({
      ...g1,
      name: 'Lehrkräfte',
    });

    expect((await ctx.request('DELETE', `/api/v1/groups/${g2.id}`)).status).toBe(204);
    expect((await ctx.request('GET', `/api/v1/groups/${g2.id}`)).status).toBe(404);
    expect((await ctx.request('DELETE', `/api/v1/groups/${g2.id}`)).status).toBe(404);
  });

  it('deletes memberships and overrides with the group, but not the devices', async () => {
    const org = await createOrganization(ctx);
    const group = await createGroup(org.id);
    const device = await insertDevice(ctx.sql, { organizationId: org.id });
    expect((await ctx.request('PUT', `/api/v1/groups/${group.id}/devices/${device.id}`)).status).toBe(204);
    expect((await ctx.request('POST', `/api/v1/groups/${group.id}/catalog/libreoffice/select`)).status).toBe(200);
    expect((await ctx.request('DELETE', `/api/v1/groups/${group.id}`)).status).toBe(204);
    expect(await ctx.sql`select 1 from group_members where group_id = ${group.id}`).toHaveLength(0);
    expect(await ctx.sql`select 1 from group_merkmale where group_id = ${group.id}`).toHaveLength(0);
    const read = await ctx.request('GET', `/api/v1/devices/${device.id}`);
    expect(read.status).toBe(200);
    expect(read.body.group_ids).toEqual([]);
  });

  it.each([
    ['missing name', {}],
    ['blank name', { name: ' ' }],
    ['unknown field', { name: 'x', organization_id: crypto.randomUUID() }],
    ['name not a string', { name: ['x'] }],
  ])('rejects %s with 400 and writes nothing', async (_case, body) => {
    const org = await createOrganization(ctx);
    const before = await countRows(ctx.sql, 'groups');
    const res = await ctx.request('POST', `/api/v1/organizations/${org.id}/groups`, { body });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request');
    expect(await countRows(ctx.sql, 'groups')).toBe(before);
  });

  it('answers 404 for unknown organizations and groups', async () => {
    const before = await countRows(ctx.sql, 'groups');
    const id = crypto.randomUUID();
    for (const [method, path, body] of [
      ['POST', `/api/v1/organizations/${id}/groups`, { name: 'x' }],
      ['GET', `/api/v1/organizations/${id}/groups`, undefined],
      ['GET', `/api/v1/groups/${id}`, undefined],
      ['GET', '/api/v1/groups/not-a-uuid', undefined],
      ['PATCH', `/api/v1/groups/${id}`, { name: 'x' }],
      ['DELETE', `/api/v1/groups/${id}`, undefined],
      ['GET', `/api/v1/groups/${id}/devices`, undefined],
    ] as const) {
      const res = await ctx.request(method, path, { body });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.body.error).toBe('not_found');
    }
    expect(await countRows(ctx.sql, 'groups')).toBe(before);
  });
});

describe('group names', () => {
  it('refuses a second group of the same name (ignoring case) with 409 name_taken, and writes nothing', async () => {
    const org = await createOrganization(ctx);
    await createGroup(org.id, 'GIS-Arbeitsplätze');
    const before = await countRows(ctx.sql, 'groups');
    for (const name of ['GIS-Arbeitsplätze', 'gis-arbeitsplätze', '  GIS-ARBEITSPLÄTZE ']) {
      const res = await ctx.request('POST', `/api/v1/organizations/${org.id}/groups`, { body: { name } });
      expect(res.status).toBe(409);
      expect(res.body.error).toBe('name_taken');
      expect(res.body.message).toContain(`"${name.trim()}"`);
    }
    expect(await countRows(ctx.sql, 'groups')).toBe(before);
  });

  it("refuses a rename onto another group's name with 409, and renames onto its own name", async () => {
    const org = await createOrganization(ctx);
    await createGroup(org.id, 'Lehrer');
    const other = await createGroup(org.id, 'Schüler');
    const res = await ctx.request('PATCH', `/api/v1/groups/${other.id}`, { body: { name: 'LEHRER' } });
    expect(res.status).toBe(409);
    expect(res.body.error).toBe('name_taken');
    expect((await ctx.request('GET', `/api/v1/groups/${other.id}`)).body.name).toBe('Schüler');
    const recased = await ctx.request('PATCH', `/api/v1/groups/${other.id}`, { body: { name: 'SCHÜLER' } });
    expect(recased.status).toBe(200);
    expect(recased.body.name).toBe('SCHÜLER');
  });

  it('allows the same name in another organization', async () => {
    const [a, b] = [await createOrganization(ctx), await createOrganization(ctx)];
    await createGroup(a.id, 'Verwaltung');
    await createGroup(b.id, 'Verwaltung');
  });

  it('lets exactly one of two concurrent creates of one name succeed', async () => {
    const org = await createOrganization(ctx);
    for (let round = 0; round < 3; round++) {
      const name = `Gleichzeitig ${round}`;
      const results = await Promise.all(
        [0, 1].map(() => ctx.request('POST', `/api/v1/organizations/${org.id}/groups`, { body: { name } })),
      );
      expect(results.map((r) => r.status).sort()).toEqual([201, 409]);
      expect(results.find((r) => r.status === 409)!.body.error).toBe('name_taken');
      expect(await ctx.sql`select 1 from groups where organization_id = ${org.id} and name = ${name}`).toHaveLength(1);
    }
  });
});

describe('group membership', () => {
  it('adds and removes devices idempotently; a device can be in many groups', async () => {
    const org = await createOrganization(ctx);
    const g1 = await createGroup(org.id, 'A');
    const g2 = await createGroup(org.id, 'B');
    const d1 = await insertDevice(ctx.sql, { organizationId: org.id });
    const d2 = await insertDevice(ctx.sql, { organizationId: org.id, deprovisioned: true });
    for (let i = 0; i < 2; i++) {
      for (const [g, d] of [
        [g1, d1],
        [g1, d2],
        [g2, d1],
      ] as const) {
        const res = await ctx.request('PUT', `/api/v1/groups/${g.id}/devices/${d.id}`);
        expect(res.status).toBe(204);
        expect(res.body).toBe('');
      }
    }
    expect(await memberIds(g1.id)).toEqual([d1.id, d2.id].sort());
    const device = await ctx.request('GET', `/api/v1/devices/${d1.id}`);
    expect(device.body.group_ids).toEqual([g1.id, g2.id].sort());

    const listed = await ctx.request('GET', `/api/v1/groups/${g1.id}/devices`);
    expect(listed.status).toBe(200);
    expect(listed.body.items.map((d: { id: string }) => d.id)).toEqual([d1.id, d2.id]);
    expect(listed.body.items[1].deprovisioned_at).not.toBeNull();
    const page = await ctx.request('GET', `/api/v1/groups/${g1.id}/devices?limit=1`);
    expect(page.body.items).toHaveLength(1);
    const rest = await ctx.request('GET', `/api/v1/groups/${g1.id}/devices?limit=1&cursor=${page.body.next_cursor}`);
    expect(rest.body.items.map((d: { id: string }) => d.id)).toEqual([d2.id]);
    expect(rest.body.next_cursor).toBeNull();
    // Both device collections walk back: the first page has no prev_cursor, the second leads to it.
    expect(page.body.prev_cursor).toBeNull();
    expect(rest.body.prev_cursor).not.toBeNull();
    const back = await ctx.request('GET', `/api/v1/groups/${g1.id}/devices?limit=1&cursor=${rest.body.prev_cursor}`);
    expect(back.body).toEqual(page.body);
    for (const bad of ['nope', rest.body.prev_cursor.slice(0, -2)]) {
      const refused = await ctx.request('GET', `/api/v1/groups/${g1.id}/devices?cursor=${bad}`);
      expect(refused.status, bad).toBe(400);
      expect(refused.body.error).toBe('invalid_request');
    }

    for (let i = 0; i < 2; i++) {
      expect((await ctx.request('DELETE', `/api/v1/groups/${g1.id}/devices/${d1.id}`)).status).toBe(204);
    }
    expect(await memberIds(g1.id)).toEqual([d2.id]);
    expect(await memberIds(g2.id)).toEqual([d1.id]);
  });

  it("omits archived members from the group's device list", async () => {
    const org = await createOrganization(ctx);
    const g = await createGroup(org.id);
    const live = await insertDevice(ctx.sql, { organizationId: org.id });
    const gone = await insertDevice(ctx.sql, { organizationId: org.id });
    await ctx.request('PUT', `/api/v1/groups/${g.id}/devices/${live.id}`);
    await ctx.request('PUT', `/api/v1/groups/${g.id}/devices/${gone.id}`);
    await ctx.sql`update devices set archived_at = now() where id = ${gone.id}`;
    const listed = await ctx.request('GET', `/api/v1/groups/${g.id}/devices`);
    expect(listed.body.items.map((d: { id: string }) => d.id)).toEqual([live.id]);
  });

  it('answers 422 organization_mismatch for a device of another organization, and writes nothing', async () => {
    const org = await createOrganization(ctx);
    const other = await createOrganization(ctx);
    const g = await createGroup(org.id);
    const foreign = await insertDevice(ctx.sql, { organizationId: other.id });
    for (const method of ['PUT', 'DELETE']) {
      const res = await ctx.request(method, `/api/v1/groups/${g.id}/devices/${foreign.id}`);
      expect(res.status).toBe(422);
      expect(res.body.error).toBe('organization_mismatch');
    }
    expect(await memberIds(g.id)).toEqual([]);
  });

  it('answers 404 for an unknown group or device', async () => {
    const org = await createOrganization(ctx);
    const g = await createGroup(org.id);
    const d = await insertDevice(ctx.sql, { organizationId: org.id });
    for (const method of ['PUT', 'DELETE']) {
      for (const path of [
        `/api/v1/groups/${crypto.randomUUID()}/devices/${d.id}`,
        `/api/v1/groups/${g.id}/devices/${crypto.randomUUID()}`,
        `/api/v1/groups/${g.id}/devices/not-a-uuid`,
      ]) {
        const res = await ctx.request(method, path);
        expect(res.status, `${method} ${path}`).toBe(404);
        expect(res.body.error).toBe('not_found');
      }
    }
    expect(await memberIds(g.id)).toEqual([]);
  });

  /** What a refused membership change must leave alone: memberships, audit and webhook events. */
  async function written(organizationId: string, deviceId: string) {
    const [row] = await ctx.sql<{ groups: string[]; audit: number; webhook: number }[]>`
      select array(select group_id from group_members where device_id = ${deviceId} order by group_id) as groups,
             (select count(*)::int from audit_events where organization_id = ${organizationId}) as audit,
             (select count(*)::int from webhook_events where organization_id = ${organizationId}) as webhook`;
    return row!;
  }

  it('answers 409 device_archived to adding or removing an archived device and changes nothing', async () => {
    const org = await createOrganization(ctx);
    const g = await createGroup(org.id);
    const d = await insertDevice(ctx.sql, { organizationId: org.id });
    expect((await ctx.request('PUT', `/api/v1/groups/${g.id}/devices/${d.id}`)).status).toBe(204);
    await ctx.sql`update devices set archived_at = now() where id = ${d.id}`;
    const g2 = await createGroup(org.id, 'B');
    const before = await written(org.id, d.id);
    expect(before.groups).toEqual([g.id]);
    for (const [method, path] of [
      ['PUT', `/api/v1/groups/${g2.id}/devices/${d.id}`],
      ['PUT', `/api/v1/groups/${g.id}/devices/${d.id}`],
      ['DELETE', `/api/v1/groups/${g.id}/devices/${d.id}`],
      ['DELETE', `/api/v1/groups/${g2.id}/devices/${d.id}`],
    ] as const) {
      const res = await ctx.request(method, path);
      expect(res.status, `${method} ${path}`).toBe(409);
      expect(res.body).toEqual({
        error: 'device_archived',
        message: `device ${d.id} is archived: it cannot join or leave a group`,
      });
    }
    expect(await written(org.id, d.id)).toEqual(before);
  });

  it('an add racing an archive waits for it and is refused: the device row is locked, not read then written', async () => {
    const org = await createOrganization(ctx);
    const g = await createGroup(org.id);
    const d = await insertDevice(ctx.sql, { organizationId: org.id });
    let res: Promise<TestResponse> | undefined;
    await ctx.sql.begin(async (tx) => {
      await tx`update devices set archived_at = now() where id = ${d.id}`;
      res = ctx.request('PUT', `/api/v1/groups/${g.id}/devices/${d.id}`);
      await waitForLockWaiter(ctx.sql, 'archived_at is not null as archived from devices');
    });
    const answer = await res!;
    expect(answer.status).toBe(409);
    expect(answer.body.error).toBe('device_archived');
    expect(await memberIds(g.id)).toEqual([]);
  });

  it('adds and removes a deprovisioned (not archived) device as any other', async () => {
    const org = await createOrganization(ctx);
    const g = await createGroup(org.id);
    const d = await insertDevice(ctx.sql, { organizationId: org.id, deprovisioned: true });
    expect((await ctx.request('PUT', `/api/v1/groups/${g.id}/devices/${d.id}`)).status).toBe(204);
    expect(await memberIds(g.id)).toEqual([d.id]);
    expect((await ctx.request('DELETE', `/api/v1/groups/${g.id}/devices/${d.id}`)).status).toBe(204);
    expect(await memberIds(g.id)).toEqual([]);
  });

  it("deleting a group ends an archived member's membership too; the device is not changed", async () => {
    const org = await createOrganization(ctx);
    const g = await createGroup(org.id);
    const d = await insertDevice(ctx.sql, { organizationId: org.id });
    expect((await ctx.request('PUT', `/api/v1/groups/${g.id}/devices/${d.id}`)).status).toBe(204);
    await ctx.sql`update devices set archived_at = now() where id = ${d.id}`;
    const [before] = await ctx.sql`select oe_id, archived_at from devices where id = ${d.id}`;
    expect((await ctx.request('DELETE', `/api/v1/groups/${g.id}`)).status).toBe(204);
    expect(await memberIds(g.id)).toEqual([]);
    expect((await ctx.sql`select oe_id, archived_at from devices where id = ${d.id}`)[0]).toEqual(before);
  });
});

describe('groups: authentication', () => {
  it('answers 401 without the admin token and changes nothing', async () => {
    const org = await createOrganization(ctx);
    const g = await createGroup(org.id);
    const d = await insertDevice(ctx.sql, { organizationId: org.id });
    const before = await countRows(ctx.sql, 'groups');
    for (const [method, path, body] of [
      ['POST', `/api/v1/organizations/${org.id}/groups`, { name: 'x' }],
      ['GET', `/api/v1/organizations/${org.id}/groups`, undefined],
      ['GET', `/api/v1/groups/${g.id}`, undefined],
      ['PATCH', `/api/v1/groups/${g.id}`, { name: 'y' }],
      ['DELETE', `/api/v1/groups/${g.id}`, undefined],
      ['GET', `/api/v1/groups/${g.id}/devices`, undefined],
      ['PUT', `/api/v1/groups/${g.id}/devices/${d.id}`, undefined],
      ['DELETE', `/api/v1/groups/${g.id}/devices/${d.id}`, undefined],
    ] as const) {
      const res = await ctx.request(method, path, { body, token: null });
      expect(res.status, `${method} ${path}`).toBe(401);
    }
    expect(await countRows(ctx.sql, 'groups')).toBe(before);
    expect(await memberIds(g.id)).toEqual([]);
    expect((await ctx.request('GET', `/api/v1/groups/${g.id}`)).body).toEqual(g);
  });
});
