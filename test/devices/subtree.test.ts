/**
 * An org unit means its subtree (CONTRACT §26): the device list's `oe_id` selects the unit
 * and every unit below it, paged like any list; another organization's unit is 404 for its
 * key and 422 for the operator (§24), an unknown one 404; the org unit object counts its
 * devices directly (`devices`) and in its subtree (`devices_total`), archived ones not,
 * on every answer that returns one, after moves of devices and of units and after archiving.
 */
import { describe, expect, it } from 'vitest';
import { createApiKey } from '../support/access.ts';
import { type TestResponse, useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { insertDevice, insertOrgUnit } from '../support/devices.ts';

const ctx = useTestApp();

/** A school with a class and a course in the class, devices in each and beside them, an archived one in the course. */
async function tree() {
  const org = await createOrganization(ctx);
  const school = await insertOrgUnit(ctx.sql, org.id, 'Schule');
  const klasse = await insertOrgUnit(ctx.sql, org.id, 'Klasse 5a', school);
  const kurs = await insertOrgUnit(ctx.sql, org.id, 'Kurs Informatik', klasse);
  const beside = await insertOrgUnit(ctx.sql, org.id, 'Verwaltung');
  const device = (oeId: string, serial: string, archived = false) =>
    insertDevice(ctx.sql, { organizationId: org.id, oeId, serial, archived });
  const inSchool = [await device(school, 'ST-S1'), await device(school, 'ST-S2')];
  const inKlasse = [await device(klasse, 'ST-K1'), await device(klasse, 'ST-K2'), await device(klasse, 'ST-K3')];
  const inKurs = [await device(kurs, 'ST-C1'), await device(kurs, 'ST-C2')];
  const archived = await device(kurs, 'ST-C3-ARCHIVED', true);
  await device(beside, 'ST-V1');
  await device(org.default_oe_id, 'ST-N1');
  return { org, school, klasse, kurs, beside, inSchool, inKlasse, inKurs, archived };
}

const serialsOf = (body: { items: { serial: string }[] }) => body.items.map((d) => d.serial);

/** Every page of the list with this query, `limit` at a time; the serials in the order served. */
async function walk(orgId: string, query: string, limit: number, token?: string): Promise<string[]> {
  const seen: string[] = [];
  let cursor: string | null = null;
  do {
    const res: TestResponse = await ctx.request(
      'GET',
      `/api/v1/organizations/${orgId}/devices?${query}&sort=serial&limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`,
      { token },
    );
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.items.length).toBeLessThanOrEqual(limit);
    seen.push(...serialsOf(res.body));
    cursor = res.body.next_cursor;
  } while (cursor);
  return seen;
}

describe('GET /organizations/{id}/devices?oe_id=: the subtree', () => {
  it('lists the unit and every unit below it, archived devices not, page by page', async () => {
    const t = await tree();
    const all = ['ST-C1', 'ST-C2', 'ST-K1', 'ST-K2', 'ST-K3', 'ST-S1', 'ST-S2'];
    expect(await walk(t.org.id, `oe_id=${t.school}`, 2)).toEqual(all);
    expect(await walk(t.org.id, `oe_id=${t.school}`, 500)).toEqual(all);
    expect(await walk(t.org.id, `oe_id=${t.klasse}`, 3)).toEqual(['ST-C1', 'ST-C2', 'ST-K1', 'ST-K2', 'ST-K3']);
    expect(await walk(t.org.id, `oe_id=${t.kurs}`, 1)).toEqual(['ST-C1', 'ST-C2']);
    expect(await walk(t.org.id, `oe_id=${t.beside}`, 2)).toEqual(['ST-V1']);
    // Walking back from the last page of the subtree ends where a walk forward starts.
    const first = await ctx.request(
      'GET',
      `/api/v1/organizations/${t.org.id}/devices?oe_id=${t.school}&sort=serial&limit=3`,
    );
    const second = await ctx.request(
      'GET',
      `/api/v1/organizations/${t.org.id}/devices?oe_id=${t.school}&sort=serial&limit=3&cursor=${first.body.next_cursor}`,
    );
    expect(serialsOf(second.body)).toEqual(['ST-K2', 'ST-K3', 'ST-S1']);
    const back = await ctx.request(
      'GET',
      `/api/v1/organizations/${t.org.id}/devices?oe_id=${t.school}&sort=serial&limit=3&cursor=${second.body.prev_cursor}`,
    );
    expect(serialsOf(back.body)).toEqual(['ST-C1', 'ST-C2', 'ST-K1']);
    expect(back.body.prev_cursor).toBeNull();
  });

  it('combines with the other filters, and follows a unit moved under another', async () => {
    const t = await tree();
    const base = `/api/v1/organizations/${t.org.id}/devices`;
    expect(serialsOf((await ctx.request('GET', `${base}?oe_id=${t.school}&q=st-k&sort=serial`)).body)).toEqual([
      'ST-K1',
      'ST-K2',
      'ST-K3',
    ]);
    const moved = await ctx.request('PATCH', `/api/v1/org-units/${t.beside}`, { body: { parent_id: t.kurs } });
    expect(moved.status, JSON.stringify(moved.body)).toBe(200);
    expect(await walk(t.org.id, `oe_id=${t.kurs}`, 2)).toEqual(['ST-C1', 'ST-C2', 'ST-V1']);
    expect(await walk(t.org.id, `oe_id=${t.school}`, 4)).toHaveLength(8);
  });

  it("is 404 for an unknown unit; another organization's is 404 for an organization key, 422 for the operator", async () => {
    const t = await tree();
    const other = await tree();
    const key = (await createApiKey(ctx, t.org.id, 'viewer')).key;
    const base = `/api/v1/organizations/${t.org.id}/devices`;
    for (const token of [key, undefined]) {
      const unknown = await ctx.request('GET', `${base}?oe_id=${crypto.randomUUID()}`, { token });
      expect(unknown.status).toBe(404);
      expect(unknown.body.error).toBe('not_found');
    }
    const foreign = await ctx.request('GET', `${base}?oe_id=${other.school}`, { token: key });
    expect(foreign.status).toBe(404);
    expect(foreign.body.error).toBe('not_found');
    const operator = await ctx.request('GET', `${base}?oe_id=${other.school}`);
    expect(operator.status).toBe(422);
    expect(operator.body.error).toBe('organization_mismatch');
  });
});

describe('the org unit object: devices and devices_total', () => {
  const counts = (u: { devices: number; devices_total: number }) => [u.devices, u.devices_total];

  it('counts directly and over the subtree on GET, on the list, after moves and archiving', async () => {
    const t = await tree();
    const get = async (id: string) => {
      const res = await ctx.request('GET', `/api/v1/org-units/${id}`);
      expect(res.status).toBe(200);
      return counts(res.body);
    };
    const listed = async () => {
      const res = await ctx.request('GET', `/api/v1/organizations/${t.org.id}/org-units?limit=2`);
      expect(res.status).toBe(200);
      const page2 = await ctx.request(
        'GET',
        `/api/v1/organizations/${t.org.id}/org-units?limit=500&cursor=${res.body.next_cursor}`,
      );
      const map = new Map<string, number[]>();
      for (const u of [...res.body.items, ...page2.body.items]) map.set(u.id, counts(u));
      return map;
    };
    expect(await get(t.school)).toEqual([2, 7]);
    expect(await get(t.klasse)).toEqual([3, 5]);
    expect(await get(t.kurs)).toEqual([2, 2]); // the archived one not
    expect(await get(t.org.default_oe_id)).toEqual([1, 1]);
    let list = await listed();
    expect(list.get(t.school)).toEqual([2, 7]);
    expect(list.get(t.klasse)).toEqual([3, 5]);
    expect(list.get(t.kurs)).toEqual([2, 2]);
    expect(list.get(t.beside)).toEqual([1, 1]);

    // A device moved from the course to the school, one archived in the class.
    const move = await ctx.request('PUT', `/api/v1/devices/${t.inKurs[0]!.id}/org-unit`, { body: { oe_id: t.school } });
    expect(move.status).toBe(200);
    const archive = await ctx.request('POST', `/api/v1/devices/${t.inKlasse[0]!.id}/archive`);
    expect(archive.status).toBe(200);
    expect(await get(t.school)).toEqual([3, 6]);
    expect(await get(t.klasse)).toEqual([2, 3]);
    expect(await get(t.kurs)).toEqual([1, 1]);

    // The course, with its device, moved to the administration: the PATCH answers its counts.
    const moved = await ctx.request('PATCH', `/api/v1/org-units/${t.kurs}`, { body: { parent_id: t.beside } });
    expect(moved.status).toBe(200);
    expect(counts(moved.body)).toEqual([1, 1]);
    list = await listed();
    expect(list.get(t.school)).toEqual([3, 5]);
    expect(list.get(t.klasse)).toEqual([2, 2]);
    expect(list.get(t.beside)).toEqual([1, 2]);
    expect(await walk(t.org.id, `oe_id=${t.beside}`, 500)).toEqual(['ST-C2', 'ST-V1']);

    // A new unit has none; a rename keeps the counts.
    const created = await ctx.request('POST', `/api/v1/organizations/${t.org.id}/org-units`, {
      body: { name: 'Neu', parent_id: t.school },
    });
    expect(created.status).toBe(201);
    expect(counts(created.body)).toEqual([0, 0]);
    const renamed = await ctx.request('PATCH', `/api/v1/org-units/${t.school}`, { body: { name: 'Schule Nord' } });
    expect(counts(renamed.body)).toEqual([3, 5]);
  });

  it('is declared in the OpenAPI document', async () => {
    const doc = await ctx.request('GET', '/api/v1/openapi.json');
    const props = doc.body.components.schemas.OrgUnit.properties;
    expect(props.devices_total.description).toMatch(/subtree/);
    expect(props.devices.description).toMatch(/directly/);
    expect(doc.body.components.schemas.OrgUnit.required).toEqual(expect.arrayContaining(['devices', 'devices_total']));
  });
});
