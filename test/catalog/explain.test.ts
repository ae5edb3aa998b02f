/**
 * GET /devices/{id}/catalog/{merkmal}/explain (api/catalog/README.md): the steps and the decision
 * for each row of the vote table and for a device override, 404s, roles and tenant
 * isolation, and a property test over generated fleets: for every device and every
 * Merkmal, the explanation's decision is the catalog listing's.
 */
import { describe, expect, it } from 'vitest';
import { createApiKey } from '../support/access.ts';
import { useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { addToGroup, insertDevice, insertGroup, insertOrgUnit, TEMPLATE_IDS } from '../support/devices.ts';

const ctx = useTestApp();

type State = 'present' | 'absent';

async function explain(deviceId: string, merkmal: string, token?: string) {
  const res = await ctx.request('GET', `/api/v1/devices/${deviceId}/catalog/${merkmal}/explain`, { token });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

const setOe = (unit: string, merkmal: string, state: State, optionen = {}) =>
  ctx.sql`insert into org_unit_merkmale (org_unit_id, merkmal, state, optionen)
          values (${unit}, ${merkmal}, ${state}, ${ctx.sql.json(optionen)})`;
const setGroup = (group: string, merkmal: string, state: State, optionen = {}) =>
  ctx.sql`insert into group_merkmale (group_id, merkmal, state, optionen)
          values (${group}, ${merkmal}, ${state}, ${ctx.sql.json(optionen)})`;
const setDevice = (device: string, merkmal: string, state: State, optionen = {}) =>
  ctx.sql`insert into device_merkmale (device_id, merkmal, state, optionen)
          values (${device}, ${merkmal}, ${state}, ${ctx.sql.json(optionen)})`;

/** A device in Schule > Klasse 5 (debian standard: firefox in the workspace, qgis not). */
async function schoolDevice() {
  const org = await createOrganization(ctx);
  const schule = await insertOrgUnit(ctx.sql, org.id, 'Schule');
  const klasse = await insertOrgUnit(ctx.sql, org.id, 'Klasse 5', schule);
  const device = await insertDevice(ctx.sql, {
    organizationId: org.id,
    oeId: klasse,
    templateId: TEMPLATE_IDS.debianStandard,
  });
  const group = async (name: string, merkmal: string, state: State) => {
    const g = await insertGroup(ctx.sql, org.id, name);
    await addToGroup(ctx.sql, g, device.id);
    await setGroup(g, merkmal, state);
    return g;
  };
  return { org, schule, klasse, device, group };
}

describe('explain: the vote table of api/catalog/README.md, row by row', () => {
  it('absent (workspace), groups 1:0 -> present, gruppe', async () => {
    const f = await schoolDevice();
    const g = await f.group('Lehrer', 'qgis', 'present');
    expect(await explain(f.device.id, 'qgis')).toEqual({
      merkmal: 'qgis',
      state: 'present',
      origin: 'gruppe',
      optionen: {},
      steps: [
        { step: 'workspace', state: 'absent' },
        { step: 'oe', org_unit_id: f.klasse, name: 'Klasse 5', state: null },
        { step: 'oe', org_unit_id: f.schule, name: 'Schule', state: null },
        { step: 'gruppe', present: 1, absent: 0, groups: [{ group_id: g, name: 'Lehrer', state: 'present' }] },
        { step: 'geraet', state: null },
      ],
    });
  });

  it('present (oe), groups 1:1 -> present, oe (the nearest unit with an override decides)', async () => {
    const f = await schoolDevice();
    await setOe(f.schule, 'qgis', 'present', { von: 'schule' });
    const a = await f.group('A', 'qgis', 'present');
    const b = await f.group('B', 'qgis', 'absent');
    expect(await explain(f.device.id, 'qgis')).toEqual({
      merkmal: 'qgis',
      state: 'present',
      origin: 'oe',
      optionen: { von: 'schule' },
      steps: [
        { step: 'workspace', state: 'absent' },
        { step: 'oe', org_unit_id: f.klasse, name: 'Klasse 5', state: null },
        { step: 'oe', org_unit_id: f.schule, name: 'Schule', state: 'present' },
        {
          step: 'gruppe',
          present: 1,
          absent: 1,
          groups: [
            { group_id: a, name: 'A', state: 'present' },
            { group_id: b, name: 'B', state: 'absent' },
          ],
        },
        { step: 'geraet', state: null },
      ],
    });
  });

  it('absent (oe), groups 2:1 -> present, gruppe; the own unit beats its parent', async () => {
    const f = await schoolDevice();
    await setOe(f.schule, 'firefox', 'present');
    await setOe(f.klasse, 'firefox', 'absent');
    await f.group('A', 'firefox', 'present');
    await f.group('B', 'firefox', 'present');
    await f.group('C', 'firefox', 'absent');
    const e = await explain(f.device.id, 'firefox');
    expect(e).toMatchObject({ merkmal: 'firefox', state: 'present', origin: 'gruppe' });
    expect(e.steps.map((s: { step: string; state?: string }) => [s.step, s.state])).toEqual([
      ['workspace', 'present'],
      ['oe', 'absent'],
      ['oe', 'present'],
      ['gruppe', undefined],
      ['geraet', null],
    ]);
    expect(e.steps[3]).toMatchObject({ present: 2, absent: 1 });
  });

  it('present (workspace), groups 0:2 -> absent, gruppe', async () => {
    const f = await schoolDevice();
    await f.group('A', 'firefox', 'absent');
    await f.group('B', 'firefox', 'absent');
    const e = await explain(f.device.id, 'firefox');
    expect(e).toMatchObject({ state: 'absent', origin: 'gruppe' });
    expect(e.steps[0]).toEqual({ step: 'workspace', state: 'present' });
    expect(e.steps[3]).toMatchObject({ step: 'gruppe', present: 0, absent: 2 });
  });

  it('any inherited state, any votes: the device override decides, geraet, with its optionen', async () => {
    const f = await schoolDevice();
    await setOe(f.klasse, 'qgis', 'present');
    await f.group('A', 'qgis', 'present');
    await f.group('B', 'qgis', 'present');
    await setDevice(f.device.id, 'qgis', 'absent', { grund: 'kiosk' });
    const e = await explain(f.device.id, 'qgis');
    expect(e).toMatchObject({ state: 'absent', origin: 'geraet', optionen: { grund: 'kiosk' } });
    expect(e.steps.at(-1)).toEqual({ step: 'geraet', state: 'absent' });
    expect(e.steps[1]).toMatchObject({ step: 'oe', state: 'present' });
    expect(e.steps[3]).toMatchObject({ step: 'gruppe', present: 2, absent: 0 });
  });

  it('lists only the groups that override this Merkmal', async () => {
    const f = await schoolDevice();
    await f.group('Anderes', 'libreoffice', 'present');
    const e = await explain(f.device.id, 'qgis');
    expect(e.steps[3]).toEqual({ step: 'gruppe', present: 0, absent: 0, groups: [] });
    expect(e).toMatchObject({ state: 'absent', origin: 'workspace', optionen: {} });
  });
});

describe('explain: errors, roles, tenants', () => {
  it('404 for an unknown device, a non-UUID id, an unknown Merkmal and one outside the catalog', async () => {
    const f = await schoolDevice();
    for (const path of [
      `/api/v1/devices/${crypto.randomUUID()}/catalog/qgis/explain`,
      '/api/v1/devices/nope/catalog/qgis/explain',
      `/api/v1/devices/${f.device.id}/catalog/gibt-es-nicht/explain`,
      `/api/v1/devices/${f.device.id}/catalog/basis/explain`,
      `/api/v1/devices/${f.device.id}/catalog/provisioning-agent/explain`,
    ]) {
      const res = await ctx.request('GET', path);
      expect(res.status, path).toBe(404);
      expect(res.body.error).toBe('not_found');
    }
  });

  it("a viewer may read it; another organization's key gets 404 as for an unknown device", async () => {
    const f = await schoolDevice();
    const viewer = await createApiKey(ctx, f.org.id, 'viewer');
    expect((await explain(f.device.id, 'qgis', viewer.key)).merkmal).toBe('qgis');
    const other = await createOrganization(ctx);
    const stranger = await createApiKey(ctx, other.id, 'admin');
    const res = await ctx.request('GET', `/api/v1/devices/${f.device.id}/catalog/qgis/explain`, {
      token: stranger.key,
    });
    expect(res.status).toBe(404);
    expect(res.body.error).toBe('not_found');
    const none = await ctx.request('GET', `/api/v1/devices/${f.device.id}/catalog/qgis/explain`, { token: null });
    expect(none.status).toBe(401);
  });
});

/** A small deterministic PRNG (mulberry32), so a failing fleet can be reproduced by its seed. */
function prng(seed: number) {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('explain agrees with the catalog listing (property over generated fleets)', () => {
  const merkmale = ['firefox', 'libreoffice', 'onlyoffice', 'qgis', 'gastsitzung'];

  it.each([1, 2, 3, 4, 5, 6])('fleet with seed %i: overrides at every level', async (seed) => {
    const rnd = prng(seed);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
    const maybeState = (p: number): State | null => (rnd() < p ? pick(['present', 'absent'] as const) : null);
    const org = await createOrganization(ctx);
    const units: string[] = [];
    for (let i = 0; i < 6; i++) {
      units.push(await insertOrgUnit(ctx.sql, org.id, `OE ${i}`, units.length > 0 && rnd() < 0.8 ? pick(units) : null));
    }
    const groups: string[] = [];
    for (let i = 0; i < 5; i++) groups.push(await insertGroup(ctx.sql, org.id, `G ${i}`));
    for (const unit of units)
      for (const m of merkmale) {
        const s = maybeState(0.3);
        if (s) await setOe(unit, m, s, { unit });
      }
    for (const g of groups)
      for (const m of merkmale) {
        const s = maybeState(0.4);
        if (s) await setGroup(g, m, s, { g });
      }
    const templates = [TEMPLATE_IDS.debianStandard, TEMPLATE_IDS.ubuntuStandard, TEMPLATE_IDS.debianEncrypted];
    for (let i = 0; i < 6; i++) {
      const device = await insertDevice(ctx.sql, {
        organizationId: org.id,
        oeId: pick(units),
        templateId: pick(templates),
      });
      for (const g of groups) if (rnd() < 0.5) await addToGroup(ctx.sql, g, device.id);
      for (const m of merkmale) {
        const s = maybeState(0.15);
        if (s) await setDevice(device.id, m, s, { device: device.id });
      }
      const listing = await ctx.request('GET', `/api/v1/devices/${device.id}/catalog`);
      expect(listing.status).toBe(200);
      expect(listing.body.items.length).toBeGreaterThan(0);
      for (const item of listing.body.items) {
        const e = await explain(device.id, item.merkmal);
        expect({ state: e.state, origin: e.origin, optionen: e.optionen }, `${device.id} ${item.merkmal}`).toEqual({
          state: item.state,
          origin: item.origin,
          optionen: item.optionen,
        });
        // The steps tell the same story: the decisive step carries the decided state.
        const decisive =
          e.origin === 'geraet'
            ? e.steps.at(-1).state
            : e.origin === 'gruppe'
              ? e.steps.at(-2).present > e.steps.at(-2).absent
                ? 'present'
                : 'absent'
              : e.origin === 'oe'
                ? e.steps.find((s: { step: string; state: string | null }) => s.step === 'oe' && s.state !== null).state
                : e.steps[0].state;
        expect(decisive).toBe(e.state);
      }
    }
  });
});
