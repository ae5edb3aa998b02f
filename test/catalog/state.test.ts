/**
 * loadCatalogStates, the hot path of the agent's check-in: the same answer as the HTTP
 * listing, one SQL round trip however deep the tree and however many groups once the
 * organization's overrides are cached (test/catalog/override_cache.test.ts), index probes only.
 */
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadCatalogStates } from '../../api/catalog/state.ts';
import { useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { planOnBigTables } from '../support/db.ts';
import { addToGroup, insertDevice, insertGroup, insertOrgUnitChain, TEMPLATE_IDS } from '../support/devices.ts';

const ctx = useTestApp();
let counted: postgres.Sql;
const queries: string[] = [];
let lastParameters: unknown[] = [];

beforeAll(async () => {
  counted = postgres(ctx.db.url, {
    max: 1,
    onnotice: () => {},
    debug: (_connection, query, parameters) => {
      queries.push(query);
      lastParameters = parameters;
    },
  });
  await counted`select 1`; // the connection's own start-up queries are not the loader's
});
afterAll(async () => {
  await counted?.end({ timeout: 5 });
});

/** A device 60 units deep, in 30 groups, with overrides at every level. */
async function busyDevice() {
  const org = await createOrganization(ctx);
  const chain = await insertOrgUnitChain(ctx.sql, org.id, 60);
  const device = await insertDevice(ctx.sql, {
    organizationId: org.id,
    oeId: chain[59],
    templateId: TEMPLATE_IDS.ubuntuStandard,
  });
  await ctx.sql`insert into org_unit_merkmale (org_unit_id, merkmal, state, optionen)
    values (${chain[0]!}, 'libreoffice', 'present', '{"ebene": 1}'), (${chain[30]!}, 'libreoffice', 'absent', '{}'),
           (${chain[50]!}, 'gastsitzung', 'present', '{"ebene": 51}'), (${chain[10]!}, 'basis', 'absent', '{}')`;
  const groups: string[] = [];
  for (let i = 0; i < 30; i++) {
    const g = await insertGroup(ctx.sql, org.id);
    groups.push(g);
    await addToGroup(ctx.sql, g, device.id);
  }
  // qgis: 20 present : 10 absent -> gruppe present; onlyoffice 15 : 15 -> inherited (workspace absent)
  for (const [i, g] of groups.entries()) {
    await ctx.sql`insert into group_merkmale (group_id, merkmal, state, optionen, updated_at)
      values (${g}, 'qgis', ${i < 20 ? 'present' : 'absent'}, ${ctx.sql.json({ gruppe: i })}, now() + ${`${i} seconds`}::interval),
             (${g}, 'onlyoffice', ${i % 2 === 0 ? 'present' : 'absent'}, '{}', now())`;
  }
  await ctx.sql`insert into device_merkmale (device_id, merkmal, state, optionen) values (${device.id}, 'firefox', 'absent', '{"grund": "kiosk"}')`;
  return { org, chain, groups, device };
}

describe('loadCatalogStates', () => {
  it("resolves a deep tree with many groups in ONE query, matching the contract's rule", async () => {
    const { device } = await busyDevice();
    await loadCatalogStates(counted, device.id); // loads the seed catalog and the organization's overrides once per client
    queries.length = 0;
    const states = await loadCatalogStates(counted, device.id);
    expect(queries).toHaveLength(1);
    expect(states).toEqual([
      {
        merkmal: 'firefox',
        name: 'Firefox',
        kategorie: 'app-store',
        state: 'absent',
        origin: 'geraet',
        optionen: { grund: 'kiosk' },
      },
      {
        merkmal: 'gastsitzung',
        name: 'Gastsitzung',
        kategorie: 'individuelle-systemkonfiguration',
        state: 'present',
        origin: 'oe',
        optionen: { ebene: 51 },
      },
      {
        merkmal: 'libreoffice',
        name: 'LibreOffice',
        kategorie: 'app-store',
        state: 'absent',
        origin: 'oe',
        optionen: {},
      },
      {
        merkmal: 'onlyoffice',
        name: 'ONLYOFFICE',
        kategorie: 'app-store',
        state: 'absent',
        origin: 'workspace',
        optionen: {},
      },
      {
        merkmal: 'qgis',
        name: 'QGIS',
        kategorie: 'app-store',
        state: 'present',
        origin: 'gruppe',
        optionen: { gruppe: 19 },
      },
    ]);
    // The HTTP listing is the same rule (with each Merkmal's report and convergence beside it).
    const res = await ctx.request('GET', `/api/v1/devices/${device.id}/catalog`);
    expect(res.body.items).toEqual(states!.map((s) => ({ ...s, reported: null, convergence: 'pending' })));
  });

  it('costs one query for a device without any override too, and null for an unknown device', async () => {
    const org = await createOrganization(ctx);
    const device = await insertDevice(ctx.sql, { organizationId: org.id });
    await loadCatalogStates(counted, device.id); // loads the seed catalog and the organization's overrides once per client
    queries.length = 0;
    const states = await loadCatalogStates(counted, device.id);
    expect(queries).toHaveLength(1);
    expect(states!.map((s) => [s.merkmal, s.state, s.origin])).toEqual([
      ['firefox', 'present', 'workspace'],
      ['gastsitzung', 'absent', 'workspace'],
      ['libreoffice', 'absent', 'workspace'],
      ['onlyoffice', 'absent', 'workspace'],
      ['qgis', 'absent', 'workspace'],
    ]);
    queries.length = 0;
    expect(await loadCatalogStates(counted, crypto.randomUUID())).toBeNull();
    expect(queries).toHaveLength(1);
    expect(await loadCatalogStates(counted, 'not-a-uuid')).toBeNull();
    expect(queries).toHaveLength(1);
  });

  it("reads the device's row and the override counter by index probes, no membership or override table at all", async () => {
    const { device } = await busyDevice();
    // Capture the statement the loader sends, then explain it with the same parameter.
    await loadCatalogStates(counted, device.id); // loads the seed catalog and the organization's overrides once per client
    queries.length = 0;
    await loadCatalogStates(counted, device.id);
    const text = queries[0]!;
    const parameters = lastParameters;
    const lines = await planOnBigTables(counted, text, parameters as unknown[]);
    for (const table of [
      'org_unit_merkmale',
      'group_merkmale',
      'device_merkmale',
      'group_members',
      'org_units',
      'devices',
    ]) {
      expect(lines, lines).not.toMatch(new RegExp(`Seq Scan on ${table}\\b`));
    }
    // The device's groups and own overrides are texts on its row (state_texts.test.ts).
    expect(lines, lines).not.toMatch(/\b(group_members|device_merkmale)\b/);
  });
});
