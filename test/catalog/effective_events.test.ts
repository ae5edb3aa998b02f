/**
 * Every change of a device's effective state or `optionen` writes one `selected` /
 * `deselected` event per device and Merkmal, with its cause, and none for the rest: moves,
 * memberships, deletions, unsets and selections that change only the `optionen`. And the
 * outcomes table (`device_merkmal_outcomes`) after real selections and agent reports.
 */
import { describe, expect, it } from 'vitest';
import { enrollAgent, report } from '../support/agent.ts';
import { useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { addToGroup, insertDevice, insertGroup, insertOrgUnit } from '../support/devices.ts';

const ctx = useTestApp();

/** The events these tests write name the operator, whose token ctx.request uses. */
const operator = { type: 'operator' };

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
const move = (deviceId: string, oeId: string) => call('PUT', `/devices/${deviceId}/org-unit`, { oe_id: oeId });

type Event = { merkmal: string; type: string; payload: Record<string, unknown> };

/** The device's events after `afterSeq`, in order. */
async function eventsOf(deviceId: string, afterSeq = 0): Promise<Event[]> {
  return ctx.sql<Event[]>`
    select merkmal, type, payload from device_merkmal_events
    where device_id = ${deviceId} and seq > ${afterSeq} order by seq`;
}

async function lastSeq(): Promise<number> {
  const [row] = await ctx.sql<{ seq: string | null }[]>`select max(seq)::text as seq from device_merkmal_events`;
  return Number(row!.seq ?? 0);
}

/** The events each device got after `afterSeq`, by device id (every device of `ids` listed). */
async function eventsSince(afterSeq: number, ids: string[]): Promise<Record<string, Event[]>> {
  return Object.fromEntries(await Promise.all(ids.map(async (id) => [id, await eventsOf(id, afterSeq)] as const)));
}

describe('moves write an event per device and Merkmal whose state or optionen change', () => {
  it('a device moved between org units with different overrides', async () => {
    const org = await createOrganization(ctx);
    const a = await insertOrgUnit(ctx.sql, org.id, 'A');
    const b = await insertOrgUnit(ctx.sql, org.id, 'B');
    const b1 = await insertOrgUnit(ctx.sql, org.id, 'B1', b);
    const d = await insertDevice(ctx.sql, { organizationId: org.id, oeId: a });
    const own = await insertDevice(ctx.sql, { organizationId: org.id, oeId: a });
    const bystander = await insertDevice(ctx.sql, { organizationId: org.id, oeId: a });
    await select('org-units', a, 'libreoffice', { v: 'a' });
    await select('org-units', a, 'qgis');
    // Quotes, backslashes, braces and commas survive the events' one insert (a text array).
    const tricky = { v: 'b "x" \\ {1,2} ä', n: [1, null] };
    await select('org-units', b, 'libreoffice', tricky);
    await select('org-units', b, 'firefox'); // as the workspace has it, but with the unit's optionen {}
    await select('devices', own.id, 'libreoffice', { v: 'own' });

    const since = await lastSeq();
    await move(d.id, b1);
    const move1 = { cause: 'move', source_id: b1, actor: operator };
    const got = await eventsSince(since, [d.id, own.id, bystander.id]);
    expect(got[d.id]).toEqual([
      // libreoffice stays present, but with B's optionen; firefox present either way with {}; qgis goes.
      { merkmal: 'libreoffice', type: 'selected', payload: { ...move1, origin: 'oe', optionen: tricky } },
      { merkmal: 'qgis', type: 'deselected', payload: { ...move1, origin: 'workspace', optionen: {} } },
    ]);
    expect(got[own.id]).toEqual([]);
    expect(got[bystander.id]).toEqual([]);

    // Up to B: the same overrides decide, nothing changes.
    const since2 = await lastSeq();
    await move(d.id, b);
    expect(await eventsOf(d.id, since2)).toEqual([]);

    // The device's own override keeps libreoffice: only qgis changes.
    await move(own.id, b);
    expect(await eventsOf(own.id, since2)).toEqual([
      {
        merkmal: 'qgis',
        type: 'deselected',
        payload: { cause: 'move', source_id: b, origin: 'workspace', optionen: {}, actor: operator },
      },
    ]);
    expect(await eventsOf(bystander.id, since)).toEqual([]);
  });

  it("an org unit moved under another: the devices of its subtree whose chain's decision changes", async () => {
    const org = await createOrganization(ctx);
    const a = await insertOrgUnit(ctx.sql, org.id, 'A');
    const b = await insertOrgUnit(ctx.sql, org.id, 'B');
    const b1 = await insertOrgUnit(ctx.sql, org.id, 'B1', b);
    const b11 = await insertOrgUnit(ctx.sql, org.id, 'B11', b1);
    await select('org-units', a, 'qgis', { from: 'a' });
    await select('org-units', b, 'qgis', { from: 'b' });
    await deselect('org-units', b11, 'qgis');
    const inB1 = await insertDevice(ctx.sql, { organizationId: org.id, oeId: b1 });
    const inB11 = await insertDevice(ctx.sql, { organizationId: org.id, oeId: b11 });
    const inB = await insertDevice(ctx.sql, { organizationId: org.id, oeId: b });

    const since = await lastSeq();
    await call('PATCH', `/org-units/${b1}`, { parent_id: a });
    const got = await eventsSince(since, [inB1.id, inB11.id, inB.id]);
    expect(got[inB1.id]).toEqual([
      {
        merkmal: 'qgis',
        type: 'selected',
        payload: { cause: 'move', source_id: b1, origin: 'oe', optionen: { from: 'a' }, actor: operator },
      },
    ]);
    expect(got[inB11.id]).toEqual([]); // its own unit decides
    expect(got[inB.id]).toEqual([]); // not moved

    // A rename moves nothing.
    const since2 = await lastSeq();
    await call('PATCH', `/org-units/${b1}`, { name: 'B1 neu' });
    expect(await lastSeq()).toBe(since2);
  });
});

describe('memberships and deletions', () => {
  it('a membership that tips a group vote writes one event for that device, none for the others', async () => {
    const org = await createOrganization(ctx);
    const g1 = await insertGroup(ctx.sql, org.id);
    const g2 = await insertGroup(ctx.sql, org.id);
    await select('groups', g1, 'qgis', { g: 1 });
    await select('groups', g1, 'libreoffice');
    await deselect('groups', g2, 'qgis');
    const d = await insertDevice(ctx.sql, { organizationId: org.id });
    const other = await insertDevice(ctx.sql, { organizationId: org.id });
    await call('PUT', `/groups/${g1}/devices/${other.id}`, undefined, 204);

    let since = await lastSeq();
    await call('PUT', `/groups/${g1}/devices/${d.id}`, undefined, 204);
    const joined = { cause: 'membership', source_id: g1, actor: operator };
    expect(await eventsOf(d.id, since)).toEqual([
      { merkmal: 'libreoffice', type: 'selected', payload: { ...joined, origin: 'gruppe', optionen: {} } },
      { merkmal: 'qgis', type: 'selected', payload: { ...joined, origin: 'gruppe', optionen: { g: 1 } } },
    ]);

    // Joining g2 ties qgis 1:1: the workspace default (absent) stands again; libreoffice stays.
    since = await lastSeq();
    await call('PUT', `/groups/${g2}/devices/${d.id}`, undefined, 204);
    expect(await eventsOf(d.id, since)).toEqual([
      {
        merkmal: 'qgis',
        type: 'deselected',
        payload: { cause: 'membership', source_id: g2, origin: 'workspace', optionen: {}, actor: operator },
      },
    ]);
    // Joining again changes nothing.
    since = await lastSeq();
    await call('PUT', `/groups/${g2}/devices/${d.id}`, undefined, 204);
    expect(await lastSeq()).toBe(since);

    // Leaving g1: qgis stays absent (now g2's 0:1, with the same optionen {}), libreoffice goes.
    await call('DELETE', `/groups/${g1}/devices/${d.id}`);
    expect(await eventsOf(d.id, since)).toEqual([
      {
        merkmal: 'libreoffice',
        type: 'deselected',
        payload: { cause: 'membership', source_id: g1, origin: 'workspace', optionen: {}, actor: operator },
      },
    ]);
    expect(await eventsOf(other.id, since)).toEqual([]);
  });

  it('a deleted group: an event for each member whose state it decided, none for the others', async () => {
    const org = await createOrganization(ctx);
    const g = await insertGroup(ctx.sql, org.id);
    const against = await insertGroup(ctx.sql, org.id);
    await select('groups', g, 'qgis', { x: 1 });
    await deselect('groups', against, 'qgis');
    const decided = await insertDevice(ctx.sql, { organizationId: org.id });
    const ownOverride = await insertDevice(ctx.sql, { organizationId: org.id });
    const tied = await insertDevice(ctx.sql, { organizationId: org.id });
    const outsider = await insertDevice(ctx.sql, { organizationId: org.id });
    for (const d of [decided, ownOverride, tied]) await addToGroup(ctx.sql, g, d.id);
    await addToGroup(ctx.sql, against, tied.id);
    await select('devices', ownOverride.id, 'qgis');

    const since = await lastSeq();
    await call('DELETE', `/groups/${g}`);
    const got = await eventsSince(since, [decided.id, ownOverride.id, tied.id, outsider.id]);
    expect(got[decided.id]).toEqual([
      {
        merkmal: 'qgis',
        type: 'deselected',
        payload: { cause: 'delete', source_id: g, origin: 'workspace', optionen: {}, actor: operator },
      },
    ]);
    expect(got[ownOverride.id]).toEqual([]);
    expect(got[tied.id]).toEqual([]); // 1:1 before, 0:1 after: absent with {} either way
    expect(got[outsider.id]).toEqual([]);
  });

  it('a deleted org unit (empty of live devices) changes no state: no events', async () => {
    const org = await createOrganization(ctx);
    const u = await insertOrgUnit(ctx.sql, org.id, 'Leer');
    await select('org-units', u, 'qgis');
    const archived = await insertDevice(ctx.sql, { organizationId: org.id, oeId: u, archived: true });
    const since = await lastSeq();
    await call('DELETE', `/org-units/${u}`);
    expect(await eventsOf(archived.id, since)).toEqual([]);
    expect(await lastSeq()).toBe(since);
  });
});

describe('selections', () => {
  it("an org unit's override unset: events for the devices it decided, none for the others", async () => {
    const org = await createOrganization(ctx);
    const u = await insertOrgUnit(ctx.sql, org.id, 'U');
    const child = await insertOrgUnit(ctx.sql, org.id, 'Kind', u);
    const inU = await insertDevice(ctx.sql, { organizationId: org.id, oeId: u });
    const inChild = await insertDevice(ctx.sql, { organizationId: org.id, oeId: child });
    const byGroup = await insertDevice(ctx.sql, { organizationId: org.id, oeId: u });
    const outside = await insertDevice(ctx.sql, { organizationId: org.id });
    const g = await insertGroup(ctx.sql, org.id);
    await addToGroup(ctx.sql, g, byGroup.id);
    await select('groups', g, 'libreoffice');
    await select('org-units', u, 'libreoffice');

    const since = await lastSeq();
    await unset('org-units', u, 'libreoffice');
    const got = await eventsSince(since, [inU.id, inChild.id, byGroup.id, outside.id]);
    const event = {
      merkmal: 'libreoffice',
      type: 'deselected',
      payload: { cause: 'oe', origin: 'oe', source_id: u, unset: true, actor: operator },
    };
    expect(got[inU.id]).toEqual([event]);
    expect(got[inChild.id]).toEqual([event]);
    expect(got[byGroup.id]).toEqual([]);
    expect(got[outside.id]).toEqual([]);
  });

  it('an org unit or group select that changes only the optionen writes an event per device it reaches', async () => {
    const org = await createOrganization(ctx);
    const u = await insertOrgUnit(ctx.sql, org.id, 'U');
    const g = await insertGroup(ctx.sql, org.id);
    const inU = await insertDevice(ctx.sql, { organizationId: org.id, oeId: u });
    const member = await insertDevice(ctx.sql, { organizationId: org.id, oeId: u });
    const ownOverride = await insertDevice(ctx.sql, { organizationId: org.id, oeId: u });
    await addToGroup(ctx.sql, g, member.id);
    await select('devices', ownOverride.id, 'qgis');
    await select('org-units', u, 'qgis', { a: 1, b: 2 });
    await select('groups', g, 'qgis', { a: 1 });

    let since = await lastSeq();
    await select('org-units', u, 'qgis', { a: 9, b: 2 });
    const oe = { cause: 'oe', origin: 'oe', source_id: u, optionen: { a: 9, b: 2 }, actor: operator };
    let got = await eventsSince(since, [inU.id, member.id, ownOverride.id]);
    expect(got[inU.id]).toEqual([{ merkmal: 'qgis', type: 'selected', payload: oe }]);
    expect(got[member.id]).toEqual([]); // the group decides its optionen
    expect(got[ownOverride.id]).toEqual([]);

    // The same optionen again, the keys in another order: nothing changes.
    since = await lastSeq();
    await select('org-units', u, 'qgis', { b: 2, a: 9 });
    expect(await lastSeq()).toBe(since);

    await select('groups', g, 'qgis', { a: 2 });
    const gruppe = { cause: 'gruppe', origin: 'gruppe', source_id: g, optionen: { a: 2 }, actor: operator };
    got = await eventsSince(since, [inU.id, member.id, ownOverride.id]);
    expect(got[member.id]).toEqual([{ merkmal: 'qgis', type: 'selected', payload: gruppe }]);
    expect(got[inU.id]).toEqual([]);
    expect(got[ownOverride.id]).toEqual([]);
  });
});

describe('concurrent changes of one device', () => {
  it('all succeed (no deadlock), and the last event of each Merkmal is the state the catalog shows', async () => {
    const org = await createOrganization(ctx);
    const a = await insertOrgUnit(ctx.sql, org.id, 'A');
    const [g1, g2, g3] = [
      await insertGroup(ctx.sql, org.id),
      await insertGroup(ctx.sql, org.id),
      await insertGroup(ctx.sql, org.id),
    ];
    await select('org-units', a, 'qgis', { oe: true });
    await select('groups', g1, 'libreoffice');
    await deselect('groups', g2, 'firefox');
    await select('groups', g3, 'onlyoffice');
    const d = await insertDevice(ctx.sql, { organizationId: org.id });
    await addToGroup(ctx.sql, g3, d.id);

    const answers = await Promise.all([
      ctx.request('PUT', `/api/v1/groups/${g1}/devices/${d.id}`),
      ctx.request('PUT', `/api/v1/groups/${g2}/devices/${d.id}`),
      ctx.request('POST', `/api/v1/devices/${d.id}/catalog/gastsitzung/select`),
      ctx.request('POST', `/api/v1/devices/${d.id}/catalog/onlyoffice/deselect`),
      ctx.request('PUT', `/api/v1/devices/${d.id}/org-unit`, { body: { oe_id: a } }),
      ctx.request('DELETE', `/api/v1/groups/${g3}`),
      ctx.request('POST', `/api/v1/groups/${g1}/catalog/libreoffice/select`, { body: { optionen: { n: 2 } } }),
    ]);
    expect(answers.map((r) => r.status)).toEqual([204, 204, 200, 200, 200, 204, 200]);

    const res = await ctx.request('GET', `/api/v1/devices/${d.id}/catalog`);
    const states = Object.fromEntries(
      (res.body.items as { merkmal: string; state: string }[]).map((i) => [i.merkmal, i.state]),
    );
    const rows = await ctx.sql<{ merkmal: string; desired: string | null }[]>`
      select merkmal, desired from device_merkmal_outcomes where device_id = ${d.id}`;
    const desired = Object.fromEntries(rows.map((r) => [r.merkmal, r.desired]));
    const workspaceDefault = (merkmal: string) => (merkmal === 'firefox' ? 'present' : 'absent');
    for (const [merkmal, state] of Object.entries(states)) {
      expect(desired[merkmal] ?? workspaceDefault(merkmal), merkmal).toBe(state);
    }
    expect(states).toMatchObject({
      qgis: 'present',
      libreoffice: 'present',
      firefox: 'absent',
      gastsitzung: 'present',
    });
  });
});

describe('device_merkmal_outcomes through real writes', () => {
  type Outcome = {
    desired: string | null;
    changed_seq: string | null;
    changed_at: Date | null;
    reported_event: string | null;
    reported_seq: string | null;
    reported_at: Date | null;
    reported_detail: unknown;
  };

  async function outcome(deviceId: string, merkmal: string): Promise<Outcome | undefined> {
    const [row] = await ctx.sql<Outcome[]>`
      select desired, changed_seq::text, changed_at, reported_event, reported_seq::text, reported_at, reported_detail
      from device_merkmal_outcomes where device_id = ${deviceId} and merkmal = ${merkmal}`;
    return row;
  }

  /** The device's last event of `types` for the Merkmal, as the outcome row should hold it. */
  async function last(deviceId: string, merkmal: string, types: string[]) {
    const [row] = await ctx.sql<{ type: string; seq: string; created_at: Date; detail: unknown }[]>`
      select type, seq::text, created_at, payload -> 'detail' as detail from device_merkmal_events
      where device_id = ${deviceId} and merkmal = ${merkmal} and type = any(${types}::text[])
      order by seq desc limit 1`;
    return row!;
  }

  const changes = ['selected', 'deselected'];
  const reports = ['applied', 'apply_failed', 'removed', 'remove_failed'];

  it('holds the last change after a selection and the last report after reports, each kept apart', async () => {
    const agent = await enrollAgent(ctx);
    const d = agent.device_id;
    expect(await outcome(d, 'libreoffice')).toBeUndefined();

    await select('devices', d, 'libreoffice', { sprache: 'de' });
    const selected = await last(d, 'libreoffice', changes);
    expect(await outcome(d, 'libreoffice')).toEqual({
      desired: 'present',
      changed_seq: selected.seq,
      changed_at: selected.created_at,
      reported_event: null,
      reported_seq: null,
      reported_at: null,
      reported_detail: null,
    });

    // Many entries in one report, the same Merkmal twice: the later entry is the last report.
    const res = await report(ctx, agent.secret, [
      { merkmal: 'libreoffice', event: 'apply_failed', detail: 'erst' },
      { merkmal: 'firefox', event: 'applied' },
      { merkmal: 'qgis', event: 'remove_failed', detail: { rc: 1 } },
      { merkmal: 'libreoffice', event: 'applied', detail: 'dann' },
    ]);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const reported = await last(d, 'libreoffice', reports);
    expect(reported.type).toBe('applied');
    expect(await outcome(d, 'libreoffice')).toEqual({
      desired: 'present',
      changed_seq: selected.seq,
      changed_at: selected.created_at,
      reported_event: 'applied',
      reported_seq: reported.seq,
      reported_at: reported.created_at,
      reported_detail: 'dann',
    });
    // A report without a change: the workspace default stands, desired stays null.
    const firefox = await last(d, 'firefox', reports);
    expect(await outcome(d, 'firefox')).toMatchObject({
      desired: null,
      changed_seq: null,
      reported_event: 'applied',
      reported_seq: firefox.seq,
      reported_detail: null,
    });
    expect(await outcome(d, 'qgis')).toMatchObject({
      desired: null,
      reported_event: 'remove_failed',
      reported_detail: { rc: 1 },
    });

    // A later change replaces the change and keeps the report.
    await deselect('devices', d, 'libreoffice');
    const deselected = await last(d, 'libreoffice', changes);
    expect(await outcome(d, 'libreoffice')).toEqual({
      desired: 'absent',
      changed_seq: deselected.seq,
      changed_at: deselected.created_at,
      reported_event: 'applied',
      reported_seq: reported.seq,
      reported_at: reported.created_at,
      reported_detail: 'dann',
    });

    // A change from a group reaches the row too, and a later report replaces the earlier.
    const g = await insertGroup(ctx.sql, agent.organization_id);
    await call('PUT', `/groups/${g}/devices/${d}`, undefined, 204);
    await select('groups', g, 'qgis');
    const byGroup = await last(d, 'qgis', changes);
    expect(byGroup.type).toBe('selected');
    await report(ctx, agent.secret, [{ merkmal: 'qgis', event: 'applied' }]);
    const qgisReport = await last(d, 'qgis', reports);
    expect(await outcome(d, 'qgis')).toMatchObject({
      desired: 'present',
      changed_seq: byGroup.seq,
      reported_event: 'applied',
      reported_seq: qgisReport.seq,
      reported_detail: null,
    });
  });
});
