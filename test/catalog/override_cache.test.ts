/**
 * The versioned cache of an organization's overrides (api/catalog/org_overrides.ts): the
 * triggers move `override_versions` with every change of org units, groups and their
 * overrides, and a client whose cache is warm sees each change written through ANOTHER
 * client (another API process) at its next read.
 */
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { orgOverrides } from '../../api/catalog/org_overrides.ts';
import { loadCatalogStates } from '../../api/catalog/state.ts';
import { useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { addToGroup, insertDevice, insertGroup, insertOrgUnit, TEMPLATE_IDS } from '../support/devices.ts';

const ctx = useTestApp();
/** The other API process: its own client, so its own cache. */
let other: postgres.Sql;

beforeAll(() => {
  other = postgres(ctx.db.url, { max: 2, onnotice: () => {} });
});
afterAll(async () => {
  await other?.end({ timeout: 5 });
});

async function versionOf(organizationId: string): Promise<number> {
  const [row] = await ctx.sql<{ version: number }[]>`
    select coalesce((select version from override_versions where organization_id = ${organizationId}), 0)::int8 as version`;
  return row!.version;
}

/** Runs `change` and returns how far it moved the organization's counter (and another's). */
async function bumps(
  organizationId: string,
  bystander: string,
  change: () => Promise<unknown>,
): Promise<[number, number]> {
  const [before, bystanderBefore] = [await versionOf(organizationId), await versionOf(bystander)];
  await change();
  return [(await versionOf(organizationId)) - before, (await versionOf(bystander)) - bystanderBefore];
}

describe('override_versions', () => {
  it('moves once per statement for every kind of change of units, groups and their overrides, for that organization only', async () => {
    const org = (await createOrganization(ctx)).id;
    const bystander = (await createOrganization(ctx)).id;
    const sql = ctx.sql;
    const unit = await insertOrgUnit(sql, org, 'Schule');
    const group = await insertGroup(sql, org);
    const cases: Array<[string, () => Promise<unknown>]> = [
      ['insert org unit', () => insertOrgUnit(sql, org, 'Neu')],
      ['rename org unit', () => sql`update org_units set name = 'Schule Süd' where id = ${unit}`],
      [
        'insert two unit overrides at once',
        () => sql`
        insert into org_unit_merkmale (org_unit_id, merkmal, state) values (${unit}, 'qgis', 'present'), (${unit}, 'firefox', 'absent')`,
      ],
      [
        'update unit override',
        () => sql`update org_unit_merkmale set state = 'absent' where org_unit_id = ${unit} and merkmal = 'qgis'`,
      ],
      [
        'delete unit override',
        () => sql`delete from org_unit_merkmale where org_unit_id = ${unit} and merkmal = 'qgis'`,
      ],
      ['insert group', () => insertGroup(sql, org)],
      [
        'insert group override',
        () => sql`insert into group_merkmale (group_id, merkmal, state) values (${group}, 'qgis', 'present')`,
      ],
      ['update group override', () => sql`update group_merkmale set optionen = '{"a": 1}' where group_id = ${group}`],
      ['delete group override', () => sql`delete from group_merkmale where group_id = ${group}`],
      ['rename group', () => sql`update groups set name = 'Umbenannt' where id = ${group}`],
      ['delete group', () => sql`delete from groups where id = ${group}`],
      ['delete org unit', () => sql`delete from org_units where id = ${unit}`],
    ];
    for (const [name, change] of cases) {
      expect([name, await bumps(org, bystander, change)]).toEqual([name, [1, 0]]);
    }
    const [idle] = await bumps(org, bystander, () => sql`select 1`);
    expect(idle).toBe(0);
  });

  it('leaves nothing behind when the organization is deleted', async () => {
    const org = (await createOrganization(ctx)).id;
    const unit = await insertOrgUnit(ctx.sql, org, 'Schule');
    await ctx.sql`insert into org_unit_merkmale (org_unit_id, merkmal, state) values (${unit}, 'qgis', 'present')`;
    expect(await versionOf(org)).toBeGreaterThan(0);
    await ctx.sql`delete from organizations where id = ${org}`;
    expect(await ctx.sql`select 1 from override_versions where organization_id = ${org}`).toHaveLength(0);
  });
});

describe('a warm cache in another client', () => {
  async function device() {
    const org = (await createOrganization(ctx)).id;
    const top = await insertOrgUnit(ctx.sql, org, 'Oben');
    const side = await insertOrgUnit(ctx.sql, org, 'Seite');
    const leaf = await insertOrgUnit(ctx.sql, org, 'Unten', top);
    const d = await insertDevice(ctx.sql, { organizationId: org, oeId: leaf, templateId: TEMPLATE_IDS.ubuntuStandard });
    return { org, top, side, leaf, device: d.id };
  }

  /** The state of `merkmal` as the other client resolves it. */
  async function stateSeenByOther(deviceId: string, merkmal: string) {
    const states = await loadCatalogStates(other, deviceId);
    const s = states!.find((x) => x.merkmal === merkmal)!;
    return { state: s.state, origin: s.origin, optionen: s.optionen };
  }

  it('sees org-unit overrides set, changed and unset, and a move of the unit', async () => {
    const { top, side, leaf, device: id } = await device();
    expect(await stateSeenByOther(id, 'qgis')).toEqual({ state: 'absent', origin: 'workspace', optionen: {} });
    await ctx.sql`insert into org_unit_merkmale (org_unit_id, merkmal, state, optionen) values (${top}, 'qgis', 'present', '{"v": 1}')`;
    expect(await stateSeenByOther(id, 'qgis')).toEqual({ state: 'present', origin: 'oe', optionen: { v: 1 } });
    await ctx.sql`update org_unit_merkmale set optionen = '{"v": 2}' where org_unit_id = ${top}`;
    expect(await stateSeenByOther(id, 'qgis')).toEqual({ state: 'present', origin: 'oe', optionen: { v: 2 } });
    // The device's unit moves from under "Oben" to under "Seite": the chain changes.
    await ctx.sql`insert into org_unit_merkmale (org_unit_id, merkmal, state) values (${side}, 'qgis', 'absent')`;
    expect(await stateSeenByOther(id, 'qgis')).toEqual({ state: 'present', origin: 'oe', optionen: { v: 2 } });
    await ctx.sql`update org_units set parent_id = ${side} where id = ${leaf}`;
    expect(await stateSeenByOther(id, 'qgis')).toEqual({ state: 'absent', origin: 'oe', optionen: {} });
    await ctx.sql`delete from org_unit_merkmale where org_unit_id = ${side}`;
    expect(await stateSeenByOther(id, 'qgis')).toEqual({ state: 'absent', origin: 'workspace', optionen: {} });
  });

  it('sees group overrides set, changed and unset, and a deleted group', async () => {
    const { org, device: id } = await device();
    const [a, b] = [await insertGroup(ctx.sql, org), await insertGroup(ctx.sql, org)];
    await addToGroup(ctx.sql, a, id);
    await addToGroup(ctx.sql, b, id);
    expect(await stateSeenByOther(id, 'qgis')).toEqual({ state: 'absent', origin: 'workspace', optionen: {} });
    await ctx.sql`insert into group_merkmale (group_id, merkmal, state, optionen) values (${a}, 'qgis', 'present', '{"g": "a"}')`;
    expect(await stateSeenByOther(id, 'qgis')).toEqual({ state: 'present', origin: 'gruppe', optionen: { g: 'a' } });
    await ctx.sql`update group_merkmale set optionen = '{"g": "a2"}' where group_id = ${a}`;
    expect(await stateSeenByOther(id, 'qgis')).toEqual({ state: 'present', origin: 'gruppe', optionen: { g: 'a2' } });
    await ctx.sql`insert into group_merkmale (group_id, merkmal, state) values (${b}, 'qgis', 'absent')`;
    expect(await stateSeenByOther(id, 'qgis')).toEqual({ state: 'absent', origin: 'workspace', optionen: {} }); // 1 : 1
    await ctx.sql`delete from groups where id = ${b}`;
    expect(await stateSeenByOther(id, 'qgis')).toEqual({ state: 'present', origin: 'gruppe', optionen: { g: 'a2' } });
    await ctx.sql`delete from group_merkmale where group_id = ${a}`;
    expect(await stateSeenByOther(id, 'qgis')).toEqual({ state: 'absent', origin: 'workspace', optionen: {} });
  });

  it('answers from memory while nothing changed, and reloads once per change', async () => {
    const { org, top, device: id } = await device();
    await ctx.sql`insert into org_unit_merkmale (org_unit_id, merkmal, state) values (${top}, 'qgis', 'present')`;
    const queries: string[] = [];
    const counted = postgres(ctx.db.url, {
      max: 1,
      onnotice: () => {},
      debug: (_c, query) => void queries.push(query),
    });
    try {
      await loadCatalogStates(counted, id); // loads the seed catalog and the organization
      queries.length = 0;
      for (let i = 0; i < 3; i++) await loadCatalogStates(counted, id);
      expect(queries).toHaveLength(3);
      await ctx.sql`update org_unit_merkmale set state = 'absent' where org_unit_id = ${top}`;
      queries.length = 0;
      const states = await loadCatalogStates(counted, id);
      expect(queries).toHaveLength(2); // the device's statement, then the organization's reload
      expect(states!.find((s) => s.merkmal === 'qgis')!.state).toBe('absent');
      // After the next change, ten concurrent callers that read the new counter share one reload.
      await ctx.sql`update org_unit_merkmale set state = 'present' where org_unit_id = ${top}`;
      const version = await versionOf(org);
      queries.length = 0;
      const all = await Promise.all(Array.from({ length: 10 }, () => orgOverrides(counted, org, version)));
      expect(queries).toHaveLength(1);
      for (const o of all) expect(o).toBe(all[0]);
      expect(all[0]!.version).toBe(version);
    } finally {
      await counted.end({ timeout: 5 });
    }
  });

  it('does not keep a failed load: the next caller loads again', async () => {
    const { org, top } = await device();
    await ctx.sql`insert into org_unit_merkmale (org_unit_id, merkmal, state) values (${top}, 'qgis', 'present')`;
    const version = await versionOf(org);
    const impatient = postgres(ctx.db.url, { max: 1, onnotice: () => {}, connection: { statement_timeout: 300 } });
    try {
      // Another transaction holds org_units exclusively: the load times out.
      await ctx.sql.begin(async (tx) => {
        await tx`lock table org_units in access exclusive mode`;
        await expect(orgOverrides(impatient, org, version)).rejects.toThrow(/statement timeout/);
      });
      const loaded = await orgOverrides(impatient, org, version);
      expect(loaded.version).toBe(version);
      expect([...loaded.units.values()].flatMap((u) => u.overrides.map((o) => o.merkmal))).toEqual(['qgis']);
    } finally {
      await impatient.end({ timeout: 5 });
    }
  });
});
