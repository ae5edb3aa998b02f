import { describe, expect, it } from 'vitest';
import { createApiKey } from '../support/access.ts';
import { useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { countRows } from '../support/db.ts';
import { insertDevice } from '../support/devices.ts';

const ctx = useTestApp();

async function createUnit(orgId: string, name: string, parentId?: string | null) {
  const res = await ctx.request('POST', `/api/v1/organizations/${orgId}/org-units`, {
    body: parentId === undefined ? { name } : { name, parent_id: parentId },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as {
    id: string;
    organization_id: string;
    parent_id: string | null;
    name: string;
    protected: boolean;
    archive_stale_after_days: number | null;
    created_at: string;
  };
}

async function snapshot(orgId: string) {
  return ctx.sql`select id, parent_id, name, protected from org_units where organization_id = ${orgId} order by id`;
}

describe('POST /api/v1/organizations/{id}/org-units', () => {
  it('creates top-level and nested units with the contract fields', async () => {
    const org = await createOrganization(ctx);
    const top = await createUnit(org.id, 'Schule Nord');
    expect(Object.keys(top).sort()).toEqual([
      'archive_stale_after_days',
      'created_at',
      'devices',
      'devices_total',
      'id',
      'name',
      'organization_id',
      'parent_id',
      'protected',
    ]);
    expect(top).toMatchObject({
      organization_id: org.id,
      parent_id: null,
      name: 'Schule Nord',
      protected: false,
      archive_stale_after_days: null,
      devices: 0,
      devices_total: 0,
    });
    const explicitTop = await createUnit(org.id, 'Rathaus', null);
    expect(explicitTop.parent_id).toBeNull();
    const child = await createUnit(org.id, 'Lehrerzimmer', top.id);
    expect(child.parent_id).toBe(top.id);
    const underProtected = await createUnit(org.id, 'Eingang', org.default_oe_id);
    expect(underProtected.parent_id).toBe(org.default_oe_id);
  });

  it('answers 404 for an unknown organization or parent, and writes nothing', async () => {
    const org = await createOrganization(ctx);
    const before = await countRows(ctx.sql, 'org_units');
    const unknownOrg = await ctx.request('POST', `/api/v1/organizations/${crypto.randomUUID()}/org-units`, {
      body: { name: 'x' },
    });
    expect(unknownOrg.status).toBe(404);
    expect(unknownOrg.body.error).toBe('not_found');
    const unknownParent = await ctx.request('POST', `/api/v1/organizations/${org.id}/org-units`, {
      body: { name: 'x', parent_id: crypto.randomUUID() },
    });
    expect(unknownParent.status).toBe(404);
    expect(unknownParent.body.error).toBe('not_found');
    expect(await countRows(ctx.sql, 'org_units')).toBe(before);
  });

  it('answers 422 organization_mismatch for a parent of another organization', async () => {
    const org = await createOrganization(ctx);
    const other = await createOrganization(ctx);
    const foreign = await createUnit(other.id, 'Fremd');
    const before = await countRows(ctx.sql, 'org_units');
    for (const parent of [foreign.id, other.default_oe_id]) {
      const res = await ctx.request('POST', `/api/v1/organizations/${org.id}/org-units`, {
        body: { name: 'x', parent_id: parent },
      });
      expect(res.status).toBe(422);
      expect(res.body.error).toBe('organization_mismatch');
    }
    expect(await countRows(ctx.sql, 'org_units')).toBe(before);
  });

  it.each([
    ['missing name', {}],
    ['blank name', { name: '  ' }],
    ['over-long name', { name: 'x'.repeat(201) }],
    ['parent not a UUID', { name: 'x', parent_id: 'abc' }],
    ['mass-assigned protected', { name: 'x', protected: true }],
    ['mass-assigned organization', { name: 'x', organization_id: crypto.randomUUID() }],
  ])('rejects %s with 400 and writes nothing', async (_case, body) => {
    const org = await createOrganization(ctx);
    const before = await countRows(ctx.sql, 'org_units');
    const res = await ctx.request('POST', `/api/v1/organizations/${org.id}/org-units`, { body });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request');
    expect(await countRows(ctx.sql, 'org_units')).toBe(before);
  });
});

describe('GET /api/v1/organizations/{id}/org-units and /org-units/{id}', () => {
  it('lists the whole tree flat, with paging, only of that organization', async () => {
    const org = await createOrganization(ctx);
    const other = await createOrganization(ctx);
    await createUnit(other.id, 'Fremd');
    const a = await createUnit(org.id, 'A');
    const b = await createUnit(org.id, 'B', a.id);
    const c = await createUnit(org.id, 'C', b.id);
    const all = await ctx.request('GET', `/api/v1/organizations/${org.id}/org-units`);
    expect(all.status).toBe(200);
    expect(all.body.next_cursor).toBeNull();
    const items = all.body.items as Array<{ id: string; created_at: string }>;
    expect(items.map((u) => u.id).sort()).toEqual([org.default_oe_id, a.id, b.id, c.id].sort());
    const ordered = [...items].sort((x, y) => x.created_at.localeCompare(y.created_at) || x.id.localeCompare(y.id));
    expect(items).toEqual(ordered);
    expect(items.find((u) => u.id === org.default_oe_id)).toMatchObject({
      name: 'Neue Geräte',
      protected: true,
      parent_id: null,
    });
    expect(items.find((u) => u.id === c.id)).toEqual(c);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: any = await ctx.request(
        'GET',
        `/api/v1/organizations/${org.id}/org-units?limit=3${cursor ? `&cursor=${cursor}` : ''}`,
      );
      expect(page.status).toBe(200);
      seen.push(...page.body.items.map((u: { id: string }) => u.id));
      cursor = page.body.next_cursor;
    } while (cursor);
    expect(seen).toEqual(all.body.items.map((u: { id: string }) => u.id));
  });

  it('reads one unit', async () => {
    const org = await createOrganization(ctx);
    const a = await createUnit(org.id, 'A');
    const res = await ctx.request('GET', `/api/v1/org-units/${a.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual(a);
  });

  it('answers 404 for unknown ids and 400 for a bad limit', async () => {
    for (const path of [
      `/api/v1/organizations/${crypto.randomUUID()}/org-units`,
      `/api/v1/org-units/${crypto.randomUUID()}`,
      '/api/v1/org-units/nope',
    ]) {
      const res = await ctx.request('GET', path);
      expect(res.status).toBe(404);
      expect(res.body.error).toBe('not_found');
    }
    const org = await createOrganization(ctx);
    expect((await ctx.request('GET', `/api/v1/organizations/${org.id}/org-units?limit=0`)).status).toBe(400);
  });
});

describe('PATCH /api/v1/org-units/{id}', () => {
  it('renames and moves a unit (to another parent and back to the top)', async () => {
    const org = await createOrganization(ctx);
    const a = await createUnit(org.id, 'A');
    const b = await createUnit(org.id, 'B');
    const renamed = await ctx.request('PATCH', `/api/v1/org-units/${a.id}`, { body: { name: 'A neu' } });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toEqual({ ...a, name: 'A neu' });
    const moved = await ctx.request('PATCH', `/api/v1/org-units/${a.id}`, { body: { parent_id: b.id } });
    expect(moved.body).toEqual({ ...a, name: 'A neu', parent_id: b.id });
    const top = await ctx.request('PATCH', `/api/v1/org-units/${a.id}`, { body: { parent_id: null, name: 'A' } });
    expect(top.body).toEqual(a);
    const noop = await ctx.request('PATCH', `/api/v1/org-units/${a.id}`, { body: {} });
    expect(noop.status).toBe(200);
    expect(noop.body).toEqual(a);
  });

  it('refuses to rename or move "Neue Geräte" with 409 protected_org_unit', async () => {
    const org = await createOrganization(ctx);
    const a = await createUnit(org.id, 'A');
    const before = await snapshot(org.id);
    for (const body of [{ name: 'Anders' }, { name: 'Neue Geräte' }, { parent_id: a.id }, { parent_id: null }]) {
      const res = await ctx.request('PATCH', `/api/v1/org-units/${org.default_oe_id}`, { body });
      expect(res.status, JSON.stringify(body)).toBe(409);
      expect(res.body.error).toBe('protected_org_unit');
    }
    expect(await snapshot(org.id)).toEqual(before);
  });

  it('refuses a move under the unit itself or any descendant with 409 org_unit_cycle', async () => {
    const org = await createOrganization(ctx);
    const a = await createUnit(org.id, 'A');
    const b = await createUnit(org.id, 'B', a.id);
    const c = await createUnit(org.id, 'C', b.id);
    const d = await createUnit(org.id, 'D', c.id);
    const before = await snapshot(org.id);
    for (const [unit, parent] of [
      [a, a],
      [a, b],
      [a, d],
      [b, d],
      [c, d],
    ] as const) {
      const res = await ctx.request('PATCH', `/api/v1/org-units/${unit.id}`, { body: { parent_id: parent.id } });
      expect(res.status, `${unit.name} under ${parent.name}`).toBe(409);
      expect(res.body.error).toBe('org_unit_cycle');
    }
    expect(await snapshot(org.id)).toEqual(before);
    // Moving a descendant up, or a unit under a sibling branch, is fine.
    const up = await ctx.request('PATCH', `/api/v1/org-units/${d.id}`, { body: { parent_id: a.id } });
    expect(up.status).toBe(200);
  });

  it('never lets two concurrent crossing moves build a cycle', async () => {
    const org = await createOrganization(ctx);
    for (let round = 0; round < 5; round++) {
      const x = await createUnit(org.id, `X${round}`);
      const y = await createUnit(org.id, `Y${round}`);
      const [r1, r2] = await Promise.all([
        ctx.request('PATCH', `/api/v1/org-units/${x.id}`, { body: { parent_id: y.id } }),
        ctx.request('PATCH', `/api/v1/org-units/${y.id}`, { body: { parent_id: x.id } }),
      ]);
      expect([r1.status, r2.status].sort()).toEqual([200, 409]);
      const rows = await ctx.sql<
        { id: string; parent_id: string | null }[]
      >`select id, parent_id from org_units where id in (${x.id}, ${y.id})`;
      expect(rows.filter((r) => r.parent_id === null)).toHaveLength(1);
    }
  });

  it('answers 422 organization_mismatch for a parent of another organization and 404 for an unknown one', async () => {
    const org = await createOrganization(ctx);
    const other = await createOrganization(ctx);
    const a = await createUnit(org.id, 'A');
    const foreign = await createUnit(other.id, 'Fremd');
    const mismatch = await ctx.request('PATCH', `/api/v1/org-units/${a.id}`, {
      body: { parent_id: foreign.id, name: 'nicht' },
    });
    expect(mismatch.status).toBe(422);
    expect(mismatch.body.error).toBe('organization_mismatch');
    const unknown = await ctx.request('PATCH', `/api/v1/org-units/${a.id}`, {
      body: { parent_id: crypto.randomUUID() },
    });
    expect(unknown.status).toBe(404);
    const unknownUnit = await ctx.request('PATCH', `/api/v1/org-units/${crypto.randomUUID()}`, { body: { name: 'x' } });
    expect(unknownUnit.status).toBe(404);
    expect((await ctx.request('GET', `/api/v1/org-units/${a.id}`)).body).toEqual(a);
  });

  it.each([
    ['blank name', { name: '' }],
    ['null name', { name: null }],
    ['parent not a UUID', { parent_id: 7 }],
    ['unknown field', { protected: false }],
  ])('rejects %s with 400', async (_case, body) => {
    const org = await createOrganization(ctx);
    const a = await createUnit(org.id, 'A');
    const res = await ctx.request('PATCH', `/api/v1/org-units/${a.id}`, { body });
    expect(res.status).toBe(400);
    expect((await ctx.request('GET', `/api/v1/org-units/${a.id}`)).body).toEqual(a);
  });
});

describe('org unit names', () => {
  it('refuses a second unit of the same name (ignoring case) among siblings with 409 name_taken, and writes nothing', async () => {
    const org = await createOrganization(ctx);
    const parent = await createUnit(org.id, 'Schule Nord');
    await createUnit(org.id, 'GIS', parent.id);
    const before = await snapshot(org.id);
    for (const [name, parentId] of [
      ['gis', parent.id],
      ['Schule Nord', null],
      ['SCHULE NORD', undefined],
      ['neue geräte', null],
    ] as const) {
      const res = await ctx.request('POST', `/api/v1/organizations/${org.id}/org-units`, {
        body: parentId === undefined ? { name } : { name, parent_id: parentId },
      });
      expect(res.status, name).toBe(409);
      expect(res.body.error).toBe('name_taken');
      expect(res.body.message).toContain(`"${name}"`);
    }
    expect(await snapshot(org.id)).toEqual(before);
  });

  it('allows the same name under another parent and in another organization', async () => {
    const org = await createOrganization(ctx);
    const nord = await createUnit(org.id, 'Nord');
    const sued = await createUnit(org.id, 'Süd');
    await createUnit(org.id, 'GIS', nord.id);
    await createUnit(org.id, 'GIS', sued.id);
    await createUnit(org.id, 'GIS');
    const other = await createOrganization(ctx);
    await createUnit(other.id, 'Nord');
  });

  it("refuses a rename or a move onto a sibling's name with 409 name_taken", async () => {
    const org = await createOrganization(ctx);
    const nord = await createUnit(org.id, 'Nord');
    const gis = await createUnit(org.id, 'GIS', nord.id);
    const cad = await createUnit(org.id, 'CAD', nord.id);
    const topGis = await createUnit(org.id, 'gis');
    const before = await snapshot(org.id);
    const rename = await ctx.request('PATCH', `/api/v1/org-units/${cad.id}`, { body: { name: 'Gis' } });
    expect(rename.status).toBe(409);
    expect(rename.body.error).toBe('name_taken');
    const move = await ctx.request('PATCH', `/api/v1/org-units/${topGis.id}`, { body: { parent_id: nord.id } });
    expect(move.status).toBe(409);
    expect(move.body.error).toBe('name_taken');
    expect(move.body.message).toContain('"gis"');
    const up = await ctx.request('PATCH', `/api/v1/org-units/${gis.id}`, { body: { parent_id: null } });
    expect(up.status).toBe(409);
    expect(await snapshot(org.id)).toEqual(before);
    // Moving and renaming at once to a free name is fine.
    const both = await ctx.request('PATCH', `/api/v1/org-units/${gis.id}`, {
      body: { parent_id: null, name: 'GIS Nord' },
    });
    expect(both.status).toBe(200);
  });

  it('lets exactly one of two concurrent creates of one name succeed', async () => {
    const org = await createOrganization(ctx);
    for (const parentId of [null, (await createUnit(org.id, 'Eltern')).id]) {
      const results = await Promise.all(
        [0, 1].map(() =>
          ctx.request('POST', `/api/v1/organizations/${org.id}/org-units`, {
            body: { name: 'Gleichzeitig', parent_id: parentId },
          }),
        ),
      );
      expect(results.map((r) => r.status).sort()).toEqual([201, 409]);
      expect(results.find((r) => r.status === 409)!.body.error).toBe('name_taken');
    }
  });
});

describe('DELETE /api/v1/org-units/{id}', () => {
  it('deletes an empty unit with its overrides', async () => {
    const org = await createOrganization(ctx);
    const a = await createUnit(org.id, 'A');
    expect((await ctx.request('POST', `/api/v1/org-units/${a.id}/catalog/qgis/select`)).status).toBe(200);
    const res = await ctx.request('DELETE', `/api/v1/org-units/${a.id}`);
    expect(res.status).toBe(204);
    expect((await ctx.request('GET', `/api/v1/org-units/${a.id}`)).status).toBe(404);
    expect(await ctx.sql`select 1 from org_unit_merkmale where org_unit_id = ${a.id}`).toHaveLength(0);
    expect((await ctx.request('DELETE', `/api/v1/org-units/${a.id}`)).status).toBe(404);
  });

  it('refuses "Neue Geräte" with 409 protected_org_unit', async () => {
    const org = await createOrganization(ctx);
    const res = await ctx.request('DELETE', `/api/v1/org-units/${org.default_oe_id}`);
    expect(res.status).toBe(409);
    expect(res.body.error).toBe('protected_org_unit');
    expect(await snapshot(org.id)).toHaveLength(1);
  });

  it('refuses a unit with children or devices with 409 org_unit_not_empty', async () => {
    const org = await createOrganization(ctx);
    const parent = await createUnit(org.id, 'Eltern');
    await createUnit(org.id, 'Kind', parent.id);
    const withDevice = await createUnit(org.id, 'Mit Gerät');
    await insertDevice(ctx.sql, { organizationId: org.id, oeId: withDevice.id, deprovisioned: true });
    const before = await snapshot(org.id);
    for (const unit of [parent, withDevice]) {
      const res = await ctx.request('DELETE', `/api/v1/org-units/${unit.id}`);
      expect(res.status).toBe(409);
      expect(res.body.error).toBe('org_unit_not_empty');
    }
    expect(await snapshot(org.id)).toEqual(before);
  });

  it('files archived devices of a deleted unit under "Neue Geräte"', async () => {
    const org = await createOrganization(ctx);
    const unit = await createUnit(org.id, 'Alt');
    const device = await insertDevice(ctx.sql, { organizationId: org.id, oeId: unit.id, archived: true });
    expect((await ctx.request('DELETE', `/api/v1/org-units/${unit.id}`)).status).toBe(204);
    const res = await ctx.request('GET', `/api/v1/devices/${device.id}`);
    expect(res.body.oe_id).toBe(org.default_oe_id);
  });
});

describe('archive_stale_after_days', () => {
  it('is set by PATCH (also on "Neue Geräte"), cleared with null, taken on create, and shown by GET and the list', async () => {
    const org = await createOrganization(ctx);
    const a = await createUnit(org.id, 'A');
    const set = await ctx.request('PATCH', `/api/v1/org-units/${a.id}`, { body: { archive_stale_after_days: 90 } });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    expect(set.body).toEqual({ ...a, archive_stale_after_days: 90 });
    expect((await ctx.request('GET', `/api/v1/org-units/${a.id}`)).body.archive_stale_after_days).toBe(90);
    const list = await ctx.request('GET', `/api/v1/organizations/${org.id}/org-units`);
    expect(list.body.items.find((u: { id: string }) => u.id === a.id).archive_stale_after_days).toBe(90);
    const audit = await ctx.request('GET', `/api/v1/organizations/${org.id}/audit-events?action=org_unit.update`);
    expect(audit.body.items[0].details).toEqual({ archive_stale_after_days: 90 });

    for (const days of [1, 3650]) {
      const res = await ctx.request('PATCH', `/api/v1/org-units/${org.default_oe_id}`, {
        body: { archive_stale_after_days: days },
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body).toMatchObject({ protected: true, archive_stale_after_days: days });
    }
    const cleared = await ctx.request('PATCH', `/api/v1/org-units/${a.id}`, {
      body: { archive_stale_after_days: null },
    });
    expect(cleared.status).toBe(200);
    expect(cleared.body).toEqual(a);

    const created = await ctx.request('POST', `/api/v1/organizations/${org.id}/org-units`, {
      body: { name: 'B', parent_id: a.id, archive_stale_after_days: 30 },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.archive_stale_after_days).toBe(30);
  });

  it.each([
    ['0', 0],
    ['3651', 3651],
    ['a string', '90'],
    ['a fraction', 1.5],
    ['a negative', -1],
  ])('answers 400 invalid_request to %s, on PATCH and on create, and changes nothing', async (_case, value) => {
    const org = await createOrganization(ctx);
    const a = await createUnit(org.id, 'A');
    const before = await snapshot(org.id);
    const patch = await ctx.request('PATCH', `/api/v1/org-units/${a.id}`, {
      body: { archive_stale_after_days: value },
    });
    expect(patch.status).toBe(400);
    expect(patch.body.error).toBe('invalid_request');
    expect(JSON.stringify(patch.body.details)).toContain('archive_stale_after_days');
    const create = await ctx.request('POST', `/api/v1/organizations/${org.id}/org-units`, {
      body: { name: 'x', archive_stale_after_days: value },
    });
    expect(create.status).toBe(400);
    expect(await snapshot(org.id)).toEqual(before);
    const [row] = await ctx.sql`select archive_stale_after_days from org_units where id = ${a.id}`;
    expect(row!.archive_stale_after_days).toBeNull();
  });

  it("answers 404 to another organization's admin key and changes nothing", async () => {
    const org = await createOrganization(ctx);
    const other = await createOrganization(ctx);
    const a = await createUnit(org.id, 'A');
    const otherKey = await createApiKey(ctx, other.id, 'admin');
    const res = await ctx.request('PATCH', `/api/v1/org-units/${a.id}`, {
      token: otherKey.key,
      body: { archive_stale_after_days: 30 },
    });
    expect(res.status).toBe(404);
    expect(res.body.error).toBe('not_found');
    const own = await ctx.request('PATCH', `/api/v1/org-units/${a.id}`, {
      token: (await createApiKey(ctx, org.id, 'admin')).key,
      body: { archive_stale_after_days: 30 },
    });
    expect(own.status).toBe(200);
    const [row] = await ctx.sql`select archive_stale_after_days from org_units where id = ${a.id}`;
    expect(row!.archive_stale_after_days).toBe(30);
  });

  it('is held by the database too: 0 and 3651 are refused', async () => {
    const org = await createOrganization(ctx);
    for (const days of [0, 3651]) {
      await expect(
        ctx.sql`update org_units set archive_stale_after_days = ${days} where id = ${org.default_oe_id}`,
      ).rejects.toThrow(/check constraint/);
    }
  });
});

describe('org units: authentication', () => {
  it('answers 401 without the admin token and changes nothing', async () => {
    const org = await createOrganization(ctx);
    const a = await createUnit(org.id, 'A');
    const before = await snapshot(org.id);
    for (const [method, path, body] of [
      ['POST', `/api/v1/organizations/${org.id}/org-units`, { name: 'x' }],
      ['GET', `/api/v1/organizations/${org.id}/org-units`, undefined],
      ['GET', `/api/v1/org-units/${a.id}`, undefined],
      ['PATCH', `/api/v1/org-units/${a.id}`, { name: 'y' }],
      ['DELETE', `/api/v1/org-units/${a.id}`, undefined],
    ] as const) {
      for (const token of [null, 'wrong']) {
        const res = await ctx.request(method, path, { body, token });
        expect(res.status).toBe(401);
        expect(res.body.error).toBe('unauthorized');
      }
    }
    expect(await snapshot(org.id)).toEqual(before);
  });
});
