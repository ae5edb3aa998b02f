/** The order catalog over HTTP: effective states at all three scopes, selections, events, errors. */
import { beforeAll, describe, expect, it } from 'vitest';
import { waitForLockWaiter } from '../support/agent.ts';
import { type TestResponse, useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { countRows } from '../support/db.ts';
import {
  addToGroup,
  insertDevice,
  insertGroup,
  insertOrgUnit,
  insertOrgUnitChain,
  TEMPLATE_IDS,
} from '../support/devices.ts';

const ctx = useTestApp();

// Test-only Merkmale, in this file's own database: one with a blueprint for ubuntu only,
// one in the catalog without any blueprint.
beforeAll(async () => {
  await ctx.sql`insert into merkmale (key, name, kategorie, im_auftragskatalog) values
    ('nur-ubuntu', 'Nur Ubuntu', 'app-store', true),
    ('ohne-blueprint', 'Ohne Blueprint', 'app-store', true)`;
  await ctx.sql`insert into blueprints (merkmal, backend, ansible_role) values ('nur-ubuntu', 'ubuntu', 'only_ubuntu')`;
});

type Item = {
  merkmal: string;
  name: string;
  kategorie: string;
  state: string;
  origin: string;
  optionen: Record<string, unknown>;
};

async function catalog(deviceId: string): Promise<Record<string, Item>> {
  const res = await ctx.request('GET', `/api/v1/devices/${deviceId}/catalog`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return Object.fromEntries((res.body.items as Item[]).map((i) => [i.merkmal, i]));
}

async function effective(deviceId: string, merkmal: string) {
  const item = (await catalog(deviceId))[merkmal]!;
  return { state: item.state, origin: item.origin, optionen: item.optionen };
}

async function call(method: string, path: string, body?: unknown, expected = method === 'DELETE' ? 204 : 200) {
  const res = await ctx.request(method, `/api/v1${path}`, { body });
  expect(res.status, `${method} ${path}: ${JSON.stringify(res.body)}`).toBe(expected);
  return res.body;
}

const select = (scope: string, id: string, merkmal: string, optionen?: Record<string, unknown>) =>
  call('POST', `/${scope}/${id}/catalog/${merkmal}/select`, optionen === undefined ? undefined : { optionen });
const deselect = (scope: string, id: string, merkmal: string) =>
  call('POST', `/${scope}/${id}/catalog/${merkmal}/deselect`);
const unset = (scope: string, id: string, merkmal: string) => call('DELETE', `/${scope}/${id}/catalog/${merkmal}`);

/** Selection events name who made the change; these tests use the operator token. */
const operator = { type: 'operator' };

async function events(deviceId: string) {
  return ctx.sql<{ merkmal: string; type: string; payload: Record<string, unknown> }[]>`
    select merkmal, type, payload from device_merkmal_events where device_id = ${deviceId}
    order by seq`;
}

async function overrideCounts() {
  return {
    device: await countRows(ctx.sql, 'device_merkmale'),
    oe: await countRows(ctx.sql, 'org_unit_merkmale'),
    group: await countRows(ctx.sql, 'group_merkmale'),
    events: await countRows(ctx.sql, 'device_merkmal_events'),
  };
}

describe('GET /api/v1/devices/{id}/catalog: defaults', () => {
  it.each([
    ['debian (unassigned: the preferred default)', null],
    ['debian (assigned)', TEMPLATE_IDS.debianEncrypted],
    ['ubuntu', TEMPLATE_IDS.ubuntuStandard],
  ])(
    'on %s: firefox present, office suites, qgis and the guest session absent, all from the workspace',
    async (_case, templateId) => {
      const org = await createOrganization(ctx);
      const d = await insertDevice(ctx.sql, { organizationId: org.id, templateId });
      const res = await ctx.request('GET', `/api/v1/devices/${d.id}/catalog`);
      expect(res.status).toBe(200);
      // Never bootstrapped, so nothing reported: every order is pending.
      const unreported = { reported: null, convergence: 'pending' };
      const seeded = [
        {
          merkmal: 'firefox',
          name: 'Firefox',
          kategorie: 'app-store',
          state: 'present',
          origin: 'workspace',
          optionen: {},
          ...unreported,
        },
        {
          merkmal: 'gastsitzung',
          name: 'Gastsitzung',
          kategorie: 'individuelle-systemkonfiguration',
          state: 'absent',
          origin: 'workspace',
          optionen: {},
          ...unreported,
        },
        {
          merkmal: 'libreoffice',
          name: 'LibreOffice',
          kategorie: 'app-store',
          state: 'absent',
          origin: 'workspace',
          optionen: {},
          ...unreported,
        },
        {
          merkmal: 'onlyoffice',
          name: 'ONLYOFFICE',
          kategorie: 'app-store',
          state: 'absent',
          origin: 'workspace',
          optionen: {},
          ...unreported,
        },
        {
          merkmal: 'qgis',
          name: 'QGIS',
          kategorie: 'app-store',
          state: 'absent',
          origin: 'workspace',
          optionen: {},
          ...unreported,
        },
      ];
      // The ubuntu-only test Merkmal is in the catalog of ubuntu devices only; system Merkmale never.
      const expected =
        templateId === TEMPLATE_IDS.ubuntuStandard
          ? [
              ...seeded.slice(0, 3),
              {
                merkmal: 'nur-ubuntu',
                name: 'Nur Ubuntu',
                kategorie: 'app-store',
                state: 'absent',
                origin: 'workspace',
                optionen: {},
                ...unreported,
              },
              ...seeded.slice(3),
            ]
          : seeded;
      expect(res.body).toEqual({ items: expected, next_cursor: null });
    },
  );

  it('answers 404 for an unknown or malformed device id, and shows archived devices', async () => {
    for (const id of [crypto.randomUUID(), 'nope']) {
      const res = await ctx.request('GET', `/api/v1/devices/${id}/catalog`);
      expect(res.status).toBe(404);
      expect(res.body.error).toBe('not_found');
    }
    const org = await createOrganization(ctx);
    const d = await insertDevice(ctx.sql, { organizationId: org.id, archived: true });
    expect((await catalog(d.id)).firefox!.state).toBe('present');
  });
});

describe('resolution through the API: nested org units, conflicting groups, device overrides', () => {
  it('the nearest org unit with an override decides, with its optionen', async () => {
    const org = await createOrganization(ctx);
    const [top, middle, leaf] = await insertOrgUnitChain(ctx.sql, org.id, 3);
    const d = await insertDevice(ctx.sql, { organizationId: org.id, oeId: leaf });
    await select('org-units', top!, 'libreoffice', { quelle: 'top' });
    expect(await effective(d.id, 'libreoffice')).toEqual({
      state: 'present',
      origin: 'oe',
      optionen: { quelle: 'top' },
    });
    await deselect('org-units', middle!, 'libreoffice');
    expect(await effective(d.id, 'libreoffice')).toEqual({ state: 'absent', origin: 'oe', optionen: {} });
    await select('org-units', leaf!, 'libreoffice', { quelle: 'leaf' });
    expect(await effective(d.id, 'libreoffice')).toEqual({
      state: 'present',
      origin: 'oe',
      optionen: { quelle: 'leaf' },
    });
    await unset('org-units', leaf!, 'libreoffice');
    await unset('org-units', middle!, 'libreoffice');
    expect(await effective(d.id, 'libreoffice')).toEqual({
      state: 'present',
      origin: 'oe',
      optionen: { quelle: 'top' },
    });
    // An org unit can also take away a workspace Merkmal.
    await deselect('org-units', top!, 'firefox');
    expect(await effective(d.id, 'firefox')).toEqual({ state: 'absent', origin: 'oe', optionen: {} });
  });

  it('resolves through a deep tree (40 levels)', async () => {
    const org = await createOrganization(ctx);
    const chain = await insertOrgUnitChain(ctx.sql, org.id, 40);
    const d = await insertDevice(ctx.sql, { organizationId: org.id, oeId: chain[39] });
    await select('org-units', chain[0]!, 'qgis', { ebene: 1 });
    await deselect('org-units', chain[4]!, 'qgis');
    await select('org-units', chain[9]!, 'qgis', { ebene: 10 });
    expect(await effective(d.id, 'qgis')).toEqual({ state: 'present', origin: 'oe', optionen: { ebene: 10 } });
  });

  it("follows the contract's vote table with several groups in conflict", async () => {
    const org = await createOrganization(ctx);
    const unit = await insertOrgUnit(ctx.sql, org.id, 'Schule');
    const d = await insertDevice(ctx.sql, { organizationId: org.id, oeId: unit });
    const [g1, g2, g3] = [
      await insertGroup(ctx.sql, org.id),
      await insertGroup(ctx.sql, org.id),
      await insertGroup(ctx.sql, org.id),
    ];
    for (const g of [g1!, g2!, g3!]) await call('PUT', `/groups/${g}/devices/${d.id}`, undefined, 204);

    // absent (workspace), 1:0 -> present, gruppe
    await select('groups', g1!, 'onlyoffice', { von: 'g1' });
    expect(await effective(d.id, 'onlyoffice')).toEqual({
      state: 'present',
      origin: 'gruppe',
      optionen: { von: 'g1' },
    });
    // present (oe), 1:1 -> present, oe
    await select('org-units', unit, 'onlyoffice', { von: 'oe' });
    await deselect('groups', g2!, 'onlyoffice');
    expect(await effective(d.id, 'onlyoffice')).toEqual({ state: 'present', origin: 'oe', optionen: { von: 'oe' } });
    // absent (oe), 2:1 -> present, gruppe; optionen from the most recently changed winning group
    await deselect('org-units', unit, 'onlyoffice');
    await select('groups', g3!, 'onlyoffice', { von: 'g3' });
    expect(await effective(d.id, 'onlyoffice')).toEqual({
      state: 'present',
      origin: 'gruppe',
      optionen: { von: 'g3' },
    });
    await select('groups', g1!, 'onlyoffice', { von: 'g1 neu' });
    expect(await effective(d.id, 'onlyoffice')).toEqual({
      state: 'present',
      origin: 'gruppe',
      optionen: { von: 'g1 neu' },
    });
    // present (workspace), 0:2 -> absent, gruppe
    await deselect('groups', g1!, 'firefox');
    await deselect('groups', g2!, 'firefox');
    expect(await effective(d.id, 'firefox')).toMatchObject({ state: 'absent', origin: 'gruppe' });
    // a device override beats everything
    await select('devices', d.id, 'firefox', { von: 'gerät' });
    expect(await effective(d.id, 'firefox')).toEqual({
      state: 'present',
      origin: 'geraet',
      optionen: { von: 'gerät' },
    });
    await deselect('devices', d.id, 'onlyoffice');
    expect(await effective(d.id, 'onlyoffice')).toEqual({ state: 'absent', origin: 'geraet', optionen: {} });
    // unset falls back to the groups
    await unset('devices', d.id, 'onlyoffice');
    expect(await effective(d.id, 'onlyoffice')).toMatchObject({ state: 'present', origin: 'gruppe' });
    // leaving groups changes the vote: 1 present (g3) : 1 absent (g2) -> the org unit's absent stands
    await call('DELETE', `/groups/${g1}/devices/${d.id}`, undefined, 204);
    expect(await effective(d.id, 'onlyoffice')).toEqual({ state: 'absent', origin: 'oe', optionen: {} });
    // moving the device out of the unit: 1:1 split -> the workspace default
    await call('PUT', `/devices/${d.id}/org-unit`, { oe_id: org.default_oe_id });
    expect(await effective(d.id, 'onlyoffice')).toEqual({ state: 'absent', origin: 'workspace', optionen: {} });
  });
});

describe('select, deselect, unset: bodies', () => {
  it('returns the override now set at the scope; optionen default to {} and are replaced on re-select', async () => {
    const org = await createOrganization(ctx);
    const d = await insertDevice(ctx.sql, { organizationId: org.id });
    const unit = await insertOrgUnit(ctx.sql, org.id, 'A');
    const group = await insertGroup(ctx.sql, org.id);
    for (const [scope, id] of [
      ['devices', d.id],
      ['org-units', unit],
      ['groups', group],
    ] as const) {
      expect(await select(scope, id, 'libreoffice')).toEqual({
        merkmal: 'libreoffice',
        state: 'present',
        optionen: {},
      });
      expect(await select(scope, id, 'libreoffice', { sprache: 'de', erweiterungen: ['x'] })).toEqual({
        merkmal: 'libreoffice',
        state: 'present',
        optionen: { sprache: 'de', erweiterungen: ['x'] },
      });
      expect(await deselect(scope, id, 'libreoffice')).toEqual({
        merkmal: 'libreoffice',
        state: 'absent',
        optionen: {},
      });
      expect(
        await call('POST', `/${scope}/${id}/catalog/gastsitzung/deselect`, { optionen: { aufräumen: true } }),
      ).toEqual({ merkmal: 'gastsitzung', state: 'absent', optionen: { aufräumen: true } });
      expect(await call('POST', `/${scope}/${id}/catalog/qgis/select`, {})).toEqual({
        merkmal: 'qgis',
        state: 'present',
        optionen: {},
      });
    }
    expect(await call('GET', `/org-units/${unit}/catalog`)).toEqual({
      items: [
        { merkmal: 'gastsitzung', state: 'absent', optionen: { aufräumen: true } },
        { merkmal: 'libreoffice', state: 'absent', optionen: {} },
        { merkmal: 'qgis', state: 'present', optionen: {} },
      ],
      next_cursor: null,
    });
    expect((await call('GET', `/groups/${group}/catalog`)).items).toHaveLength(3);
    // The catalog listings page by limit and cursor as every collection.
    for (const path of [`/org-units/${unit}/catalog`, `/groups/${group}/catalog`, `/devices/${d.id}/catalog`]) {
      const whole = await call('GET', path);
      const first = await call('GET', `${path}?limit=2`);
      expect(first.items, path).toEqual(whole.items.slice(0, 2));
      expect(first.next_cursor, path).not.toBeNull();
      const second = await call('GET', `${path}?limit=2&cursor=${first.next_cursor}`);
      expect(second.items, path).toEqual(whole.items.slice(2, 4));
      for (const query of ['limit=0', 'limit=501', 'cursor=nope', 'sort=key']) {
        const refused = await ctx.request('GET', `/api/v1${path}?${query}`);
        expect(refused.status, `${path}?${query}`).toBe(400);
        expect(refused.body.error).toBe('invalid_request');
      }
    }
    for (const [scope, id] of [
      ['devices', d.id],
      ['org-units', unit],
      ['groups', group],
    ] as const) {
      await unset(scope, id, 'libreoffice');
      await unset(scope, id, 'libreoffice'); // idempotent
    }
    expect((await call('GET', `/org-units/${unit}/catalog`)).items.map((i: Item) => i.merkmal)).toEqual([
      'gastsitzung',
      'qgis',
    ]);
    expect((await call('GET', `/groups/${group}/catalog`)).items.map((i: Item) => i.merkmal)).toEqual([
      'gastsitzung',
      'qgis',
    ]);
    expect(await effective(d.id, 'libreoffice')).toEqual({ state: 'absent', origin: 'workspace', optionen: {} });
  });

  it('accepts an empty body sent as application/json', async () => {
    const org = await createOrganization(ctx);
    const d = await insertDevice(ctx.sql, { organizationId: org.id });
    const res = await ctx.request('POST', `/api/v1/devices/${d.id}/catalog/qgis/select`, {
      rawBody: '',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ merkmal: 'qgis', state: 'present', optionen: {} });
  });

  it.each([
    ['optionen an array', { optionen: [1, 2] }],
    ['optionen a string', { optionen: 'de' }],
    ['optionen null', { optionen: null }],
    ['optionen a number', { optionen: 3 }],
    ['an unknown field', { optionen: {}, state: 'absent' }],
    ['a non-object body', [1]],
  ])('rejects %s with 400 and changes nothing', async (_case, body) => {
    const org = await createOrganization(ctx);
    const d = await insertDevice(ctx.sql, { organizationId: org.id });
    const unit = await insertOrgUnit(ctx.sql, org.id, 'A');
    const before = await overrideCounts();
    for (const path of [`/devices/${d.id}/catalog/qgis/select`, `/org-units/${unit}/catalog/qgis/deselect`]) {
      const res = await ctx.request('POST', `/api/v1${path}`, { body });
      expect(res.status, path).toBe(400);
      expect(res.body.error).toBe('invalid_request');
    }
    const malformed = await ctx.request('POST', `/api/v1/devices/${d.id}/catalog/qgis/select`, {
      rawBody: '{"optionen":',
      headers: { 'content-type': 'application/json' },
    });
    expect(malformed.status).toBe(400);
    expect(await overrideCounts()).toEqual(before);
  });
});

describe('selection errors', () => {
  async function fixtures() {
    const org = await createOrganization(ctx);
    const debian = await insertDevice(ctx.sql, { organizationId: org.id });
    const ubuntu = await insertDevice(ctx.sql, { organizationId: org.id, templateId: TEMPLATE_IDS.ubuntuStandard });
    const unit = await insertOrgUnit(ctx.sql, org.id, 'A');
    const group = await insertGroup(ctx.sql, org.id);
    await addToGroup(ctx.sql, group, debian.id);
    return {
      org,
      debian,
      ubuntu,
      unit,
      group,
      targets: [
        ['devices', debian.id],
        ['org-units', unit],
        ['groups', group],
      ] as const,
    };
  }

  const verbs = [
    ['POST', 'select'],
    ['POST', 'deselect'],
    ['DELETE', ''],
  ] as const;

  function path(scope: string, id: string, merkmal: string, verb: string) {
    return `/api/v1/${scope}/${id}/catalog/${encodeURIComponent(merkmal)}${verb ? `/${verb}` : ''}`;
  }

  it('answers 422 unknown_merkmal for a Merkmal that does not exist, at every scope and verb', async () => {
    const f = await fixtures();
    const before = await overrideCounts();
    for (const [scope, id] of f.targets) {
      for (const [method, verb] of verbs) {
        for (const merkmal of ['gibt-es-nicht', 'LibreOffice', ' ']) {
          const res = await ctx.request(method, path(scope, id, merkmal, verb));
          expect(res.status, `${method} ${scope} ${verb} ${merkmal}`).toBe(422);
          expect(res.body.error).toBe('unknown_merkmal');
        }
      }
    }
    expect(await overrideCounts()).toEqual(before);
  });

  it('answers 422 not_in_catalog for Merkmale outside the order catalog, at every scope and verb', async () => {
    const f = await fixtures();
    const before = await overrideCounts();
    const cases: Array<[string, string, string]> = [];
    for (const [scope, id] of f.targets) {
      for (const merkmal of ['basis', 'desktop', 'provisioning-agent', 'ohne-blueprint'])
        cases.push([scope, id, merkmal]);
    }
    cases.push(['devices', f.debian.id, 'nur-ubuntu']); // no blueprint for the device's backend
    for (const [scope, id, merkmal] of cases) {
      for (const [method, verb] of verbs) {
        const res = await ctx.request(method, path(scope, id, merkmal, verb));
        expect(res.status, `${method} ${scope} ${verb} ${merkmal}`).toBe(422);
        expect(res.body.error).toBe('not_in_catalog');
      }
    }
    expect(await overrideCounts()).toEqual(before);
  });

  it("accepts a Merkmal with a blueprint for the device's backend, or for any backend at org units and groups", async () => {
    const f = await fixtures();
    expect(await select('devices', f.ubuntu.id, 'nur-ubuntu')).toMatchObject({ state: 'present' });
    expect(await select('org-units', f.unit, 'nur-ubuntu')).toMatchObject({ state: 'present' });
    expect(await select('groups', f.group, 'nur-ubuntu')).toMatchObject({ state: 'present' });
    expect((await catalog(f.ubuntu.id))['nur-ubuntu']).toMatchObject({ state: 'present', origin: 'geraet' });
    // Not in the debian device's catalog, whatever its groups say.
    expect((await catalog(f.debian.id))['nur-ubuntu']).toBeUndefined();
  });

  it('answers 404 for unknown, malformed and wrong-scope ids, and changes nothing', async () => {
    const f = await fixtures();
    const before = await overrideCounts();
    const wrongScope: Array<[string, string]> = [
      ['devices', f.unit],
      ['org-units', f.group],
      ['groups', f.debian.id],
    ];
    for (const [scope, id] of [
      ['devices', crypto.randomUUID()],
      ['org-units', crypto.randomUUID()],
      ['groups', crypto.randomUUID()],
      ['groups', 'nope'],
      ...wrongScope,
    ]) {
      for (const [method, verb] of verbs) {
        const res = await ctx.request(method, path(scope!, id!, 'qgis', verb));
        expect(res.status, `${method} ${scope} ${verb}`).toBe(404);
        expect(res.body.error).toBe('not_found');
      }
    }
    for (const p of [
      `/api/v1/org-units/${crypto.randomUUID()}/catalog`,
      `/api/v1/groups/${crypto.randomUUID()}/catalog`,
      `/api/v1/groups/${f.unit}/catalog`,
    ]) {
      expect((await ctx.request('GET', p)).status).toBe(404);
    }
    expect(await overrideCounts()).toEqual(before);
  });

  it('answers 401 without the admin token and changes nothing', async () => {
    const f = await fixtures();
    const before = await overrideCounts();
    for (const [scope, id] of f.targets) {
      for (const [method, verb] of verbs) {
        for (const token of [null, 'wrong']) {
          const res = await ctx.request(method, path(scope, id, 'qgis', verb), { token });
          expect(res.status).toBe(401);
          expect(res.body.error).toBe('unauthorized');
        }
      }
    }
    for (const p of [
      `/api/v1/devices/${f.debian.id}/catalog`,
      `/api/v1/org-units/${f.unit}/catalog`,
      `/api/v1/groups/${f.group}/catalog`,
    ]) {
      expect((await ctx.request('GET', p, { token: null })).status).toBe(401);
    }
    expect(await overrideCounts()).toEqual(before);
  });
});

describe('an archived device changes no more', () => {
  /** What a refused change must leave alone: overrides, events, audit and webhook events. */
  async function written(organizationId: string, deviceId: string) {
    const [row] = await ctx.sql<{ overrides: string; events: number; audit: number; webhook: number }[]>`
      select (select coalesce(json_agg(json_build_object('merkmal', merkmal, 'state', state, 'optionen', optionen)
                                       order by merkmal), '[]')::text
                from device_merkmale where device_id = ${deviceId}) as overrides,
             (select count(*)::int from device_merkmal_events where device_id = ${deviceId}) as events,
             (select count(*)::int from audit_events where organization_id = ${organizationId}) as audit,
             (select count(*)::int from webhook_events where organization_id = ${organizationId}) as webhook`;
    return row!;
  }

  it('answers 409 device_archived to select, deselect and unset at the device and writes nothing', async () => {
    const org = await createOrganization(ctx);
    const d = await insertDevice(ctx.sql, { organizationId: org.id, archived: true });
    // An override from before the archive: unset must not remove it, select must not replace it.
    await ctx.sql`insert into device_merkmale (device_id, merkmal, state, optionen)
                  values (${d.id}, 'libreoffice', 'absent', '{"vorher": true}')`;
    const before = await written(org.id, d.id);
    for (const [method, path] of [
      ['POST', `/devices/${d.id}/catalog/libreoffice/select`],
      ['POST', `/devices/${d.id}/catalog/libreoffice/deselect`],
      ['POST', `/devices/${d.id}/catalog/firefox/select`],
      ['DELETE', `/devices/${d.id}/catalog/libreoffice`],
    ] as const) {
      const body = await call(method, path, undefined, 409);
      expect(body.error, path).toBe('device_archived');
      expect(body.message).toBe(`device ${d.id} is archived: its catalog selections cannot be changed`);
    }
    expect(await written(org.id, d.id)).toEqual(before);
  });

  it('a selection racing an archive waits for it and is refused: the device row is locked, not read then written', async () => {
    const org = await createOrganization(ctx);
    const d = await insertDevice(ctx.sql, { organizationId: org.id });
    let res: Promise<TestResponse> | undefined;
    await ctx.sql.begin(async (tx) => {
      await tx`update devices set archived_at = now() where id = ${d.id}`;
      res = ctx.request('POST', `/api/v1/devices/${d.id}/catalog/libreoffice/select`);
      await waitForLockWaiter(ctx.sql, 'for no key update of d');
    });
    const answer = await res!;
    expect(answer.status).toBe(409);
    expect(answer.body.error).toBe('device_archived');
    expect(await ctx.sql`select 1 from device_merkmale where device_id = ${d.id}`).toHaveLength(0);
  });

  it('an unknown device is still 404, an archived one 409 before its Merkmal is looked at', async () => {
    const org = await createOrganization(ctx);
    const d = await insertDevice(ctx.sql, { organizationId: org.id, archived: true });
    expect(
      (await call('POST', `/devices/${crypto.randomUUID()}/catalog/libreoffice/select`, undefined, 404)).error,
    ).toBe('not_found');
    expect((await call('POST', `/devices/${d.id}/catalog/gibt-es-nicht/select`, undefined, 409)).error).toBe(
      'device_archived',
    );
  });

  it('a deprovisioned (not archived) device is still changed, with its events and audit', async () => {
    const org = await createOrganization(ctx);
    const d = await insertDevice(ctx.sql, { organizationId: org.id, deprovisioned: true });
    const before = await written(org.id, d.id);
    expect(await select('devices', d.id, 'libreoffice')).toEqual({
      merkmal: 'libreoffice',
      state: 'present',
      optionen: {},
    });
    await deselect('devices', d.id, 'libreoffice');
    await unset('devices', d.id, 'libreoffice');
    const after = await written(org.id, d.id);
    expect(after.overrides).toBe('[]');
    // The unset leaves the Merkmal absent as the deselect did: no event for it.
    expect(after.events).toBe(before.events + 2);
    expect(after.audit).toBe(before.audit + 3);
  });
});

describe('selection events', () => {
  it('a device selection writes selected / deselected for that device every time', async () => {
    const org = await createOrganization(ctx);
    const d = await insertDevice(ctx.sql, { organizationId: org.id });
    const other = await insertDevice(ctx.sql, { organizationId: org.id });
    await select('devices', d.id, 'libreoffice', { sprache: 'de' });
    await select('devices', d.id, 'libreoffice', { sprache: 'de' });
    await deselect('devices', d.id, 'firefox');
    await unset('devices', d.id, 'qgis'); // no override, no change: no event
    expect(await events(d.id)).toEqual([
      {
        merkmal: 'libreoffice',
        type: 'selected',
        payload: { cause: 'device', origin: 'geraet', source_id: d.id, optionen: { sprache: 'de' }, actor: operator },
      },
      {
        merkmal: 'libreoffice',
        type: 'selected',
        payload: { cause: 'device', origin: 'geraet', source_id: d.id, optionen: { sprache: 'de' }, actor: operator },
      },
      {
        merkmal: 'firefox',
        type: 'deselected',
        payload: { cause: 'device', origin: 'geraet', source_id: d.id, optionen: {}, actor: operator },
      },
    ]);
    // Unsetting a device override that decided writes the change back to the inherited state.
    await unset('devices', d.id, 'firefox');
    expect((await events(d.id)).at(-1)).toEqual({
      merkmal: 'firefox',
      type: 'selected',
      payload: { cause: 'device', origin: 'geraet', source_id: d.id, unset: true, actor: operator },
    });
    expect(await events(other.id)).toEqual([]);
  });

  it("an org-unit selection writes events for the subtree's devices whose effective state changes", async () => {
    const org = await createOrganization(ctx);
    const [top, child, grandchild] = await insertOrgUnitChain(ctx.sql, org.id, 3);
    const sibling = await insertOrgUnit(ctx.sql, org.id, 'Nebenan');
    const inTop = await insertDevice(ctx.sql, { organizationId: org.id, oeId: top });
    const inGrandchild = await insertDevice(ctx.sql, { organizationId: org.id, oeId: grandchild, deprovisioned: true });
    const deviceOverride = await insertDevice(ctx.sql, { organizationId: org.id, oeId: child });
    const groupMajority = await insertDevice(ctx.sql, { organizationId: org.id, oeId: child });
    const ownUnitOverride = await insertDevice(ctx.sql, { organizationId: org.id, oeId: grandchild });
    const archived = await insertDevice(ctx.sql, { organizationId: org.id, oeId: top, archived: true });
    const outside = await insertDevice(ctx.sql, { organizationId: org.id, oeId: sibling });
    await ctx.sql`insert into device_merkmale (device_id, merkmal, state) values (${deviceOverride.id}, 'libreoffice', 'absent')`;
    const g = await insertGroup(ctx.sql, org.id);
    await addToGroup(ctx.sql, g, groupMajority.id);
    await ctx.sql`insert into group_merkmale (group_id, merkmal, state) values (${g}, 'libreoffice', 'absent')`;
    const unitOfOwn = await insertOrgUnit(ctx.sql, org.id, 'Eigen', grandchild);
    await ctx.request('PUT', `/api/v1/devices/${ownUnitOverride.id}/org-unit`, { body: { oe_id: unitOfOwn } });
    await deselect('org-units', unitOfOwn, 'libreoffice');

    await select('org-units', top!, 'libreoffice', { v: 1 });
    const payload = { cause: 'oe', origin: 'oe', source_id: top, optionen: { v: 1 }, actor: operator };
    expect(await events(inTop.id)).toEqual([{ merkmal: 'libreoffice', type: 'selected', payload }]);
    expect(await events(inGrandchild.id)).toEqual([{ merkmal: 'libreoffice', type: 'selected', payload }]);
    for (const d of [deviceOverride, groupMajority, ownUnitOverride, archived, outside])
      expect(await events(d.id)).toEqual([]);

    // Re-selecting with the same optionen changes nothing: no events.
    await select('org-units', top!, 'libreoffice', { v: 1 });
    expect(await events(inTop.id)).toHaveLength(1);
    // New optionen change no state, but what the devices get: an event for each.
    await select('org-units', top!, 'libreoffice', { v: 2 });
    const v2 = { merkmal: 'libreoffice', type: 'selected', payload: { ...payload, optionen: { v: 2 } } };
    expect((await events(inTop.id)).at(-1)).toEqual(v2);
    expect((await events(inGrandchild.id)).at(-1)).toEqual(v2);
    for (const d of [deviceOverride, groupMajority, ownUnitOverride, archived, outside])
      expect(await events(d.id)).toEqual([]);
    // A nearer unit taking it away again: only the devices under it.
    await deselect('org-units', grandchild!, 'libreoffice');
    expect(await events(inTop.id)).toHaveLength(2);
    expect((await events(inGrandchild.id)).at(-1)).toEqual({
      merkmal: 'libreoffice',
      type: 'deselected',
      payload: { cause: 'oe', origin: 'oe', source_id: grandchild, optionen: {}, actor: operator },
    });
    // Unset at the top: back to the workspace default for the top's own device.
    await unset('org-units', top!, 'libreoffice');
    expect((await events(inTop.id)).at(-1)).toEqual({
      merkmal: 'libreoffice',
      type: 'deselected',
      payload: { cause: 'oe', origin: 'oe', source_id: top, unset: true, actor: operator },
    });
    expect(await events(inGrandchild.id)).toHaveLength(3);
  });

  it('a group selection writes events for members whose effective state changes', async () => {
    const org = await createOrganization(ctx);
    const [g1, g2] = [await insertGroup(ctx.sql, org.id), await insertGroup(ctx.sql, org.id)];
    const onlyG1 = await insertDevice(ctx.sql, { organizationId: org.id });
    const both = await insertDevice(ctx.sql, { organizationId: org.id });
    const nonMember = await insertDevice(ctx.sql, { organizationId: org.id });
    const ubuntuMember = await insertDevice(ctx.sql, {
      organizationId: org.id,
      templateId: TEMPLATE_IDS.ubuntuStandard,
    });
    for (const d of [onlyG1, both, ubuntuMember]) await addToGroup(ctx.sql, g1!, d.id);
    await addToGroup(ctx.sql, g2!, both.id);
    await deselect('groups', g2!, 'qgis'); // no change for anyone (qgis absent by default)
    for (const d of [onlyG1, both, nonMember, ubuntuMember]) expect(await events(d.id)).toEqual([]);

    await select('groups', g1!, 'qgis');
    const payload = { cause: 'gruppe', origin: 'gruppe', source_id: g1, optionen: {}, actor: operator };
    expect(await events(onlyG1.id)).toEqual([{ merkmal: 'qgis', type: 'selected', payload }]);
    expect(await events(ubuntuMember.id)).toEqual([{ merkmal: 'qgis', type: 'selected', payload }]);
    expect(await events(both.id)).toEqual([]); // 1:1 split: the workspace default stands
    expect(await events(nonMember.id)).toEqual([]);

    // A Merkmal outside a member's catalog writes nothing for it.
    await select('groups', g1!, 'nur-ubuntu');
    expect(await events(onlyG1.id)).toHaveLength(1);
    expect((await events(ubuntuMember.id)).map((e) => e.merkmal)).toEqual(['qgis', 'nur-ubuntu']);

    await unset('groups', g2!, 'qgis'); // now 1:0 for `both`
    expect(await events(both.id)).toEqual([
      {
        merkmal: 'qgis',
        type: 'selected',
        payload: { cause: 'gruppe', origin: 'gruppe', source_id: g2, unset: true, actor: operator },
      },
    ]);
  });
});
