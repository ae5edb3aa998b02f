/**
 * An org unit means its subtree (CONTRACT §26): the device list's `oe_id` selects the unit
 * and every unit below it, paged like any list; another organization's unit is 404 for its
 * key and 422 for the operator (§24), an unknown one 404.
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
