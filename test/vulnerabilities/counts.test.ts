/**
 * The organization's CVE counts (stored, and counted per request for an org unit's subtree
 * or a group) and every device's list, against a brute-force count made here from the feed
 * and the packages themselves: random package sets and a random tracker, several source
 * packages per CVE, binaries of one source at different versions, archived devices, and a
 * feed change read before its rematch (the old bitmaps still decode with their old list).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compareDebianVersions } from '../../api/vulnerabilities/dpkg_version.ts';
import { refreshFeed } from '../../api/vulnerabilities/feeds.ts';
import { matchOutdated } from '../../api/vulnerabilities/matching.ts';
import { useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { addToGroup, insertDevice, insertGroup, insertOrgUnit } from '../support/devices.ts';
import { BOOKWORM, insertInventory, insertPackageSet, type TestPackage, TRIXIE } from '../support/vulnerabilities.ts';

const ctx = useTestApp();

const URGENCIES = ['critical', 'high', 'medium', 'low', 'unknown', 'unimportant'];
const SOURCES = Array.from({ length: 24 }, (_, i) => `src${i}`);
const RELEASES = ['bookworm', 'trixie'];

/** A seeded generator: the same data on every run. */
function random(seed: number) {
  let state = seed;
  const next = () => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state / 2147483648;
  };
  return { next, pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]! };
}

function version(r: ReturnType<typeof random>): string {
  const epoch = r.next() < 0.1 ? '1:' : '';
  const tilde = r.next() < 0.15 ? '~rc1' : '';
  return `${epoch}1.${Math.floor(r.next() * 4)}${tilde}-${1 + Math.floor(r.next() * 3)}`;
}

interface Entry {
  cve: string;
  source: string;
  release: string;
  fixed: string | null;
  urgency: string;
}

/** A tracker of 60 CVEs (a fifth on two source packages) and the entries it means. */
function tracker(seed: number): { json: string; entries: Entry[] } {
  const r = random(seed);
  const data: Record<string, Record<string, { releases: Record<string, unknown> }>> = {};
  const entries: Entry[] = [];
  const urgencies: Array<[string, string]> = [
    ['critical', 'critical'],
    ['high', 'high'],
    ['medium', 'medium'],
    ['low', 'low'],
    ['not yet assigned', 'unknown'],
    ['unimportant', 'unimportant'],
  ];
  for (let i = 0; i < 60; i++) {
    const cve = `CVE-2098-${String(1000 + i)}`;
    const sources = new Set([r.pick(SOURCES)]);
    if (r.next() < 0.2) sources.add(r.pick(SOURCES));
    for (const source of sources) {
      const releases: Record<string, unknown> = {};
      for (const release of RELEASES) {
        if (r.next() < 0.2) continue;
        const [raw, urgency] = r.pick(urgencies);
        const open = r.next() < 0.3;
        const fixed = open ? null : version(r);
        releases[release] = {
          status: open ? 'open' : 'resolved',
          ...(fixed ? { fixed_version: fixed } : {}),
          urgency: raw,
        };
        entries.push({ cve, source, release, fixed, urgency });
      }
      data[source] ??= {};
      data[source][cve] = { releases };
    }
  }
  return { json: JSON.stringify(data), entries };
}

/** Six sets: about two thirds of the sources each, a library binary sometimes at an older source version. */
function packageSets(): TestPackage[][] {
  const r = random(11);
  return Array.from({ length: 6 }, () => {
    const packages: TestPackage[] = [{ name: 'unrelated', version: '1.0-1' }];
    for (const source of SOURCES) {
      if (r.next() < 0.35) continue;
      const at = version(r);
      packages.push({ name: source, version: at, source });
      if (r.next() < 0.5) {
        packages.push({ name: `lib${source}`, version: r.next() < 0.4 ? version(r) : at, source });
      }
    }
    return packages;
  });
}

interface Row {
  cve: string;
  urgency: string;
  status: 'fixed_available' | 'no_fix';
  source: string;
  installed_version: string;
  fixed_version: string | null;
  binaries: string[];
}

/** A device's rows, counted here: the oldest installed version of each source, then every entry of its release. */
function rowsOf(packages: TestPackage[], release: string, entries: Entry[]): Row[] {
  const installed = new Map<string, { version: string; binaries: string[] }>();
  for (const p of packages) {
    const source = p.source ?? p.name;
    const at = p.source_version ?? p.version;
    const known = installed.get(source);
    if (!known) installed.set(source, { version: at, binaries: [p.name] });
    else {
      if (compareDebianVersions(at, known.version) < 0) known.version = at;
      known.binaries.push(p.name);
    }
  }
  const rows: Row[] = [];
  for (const e of entries) {
    const mine = installed.get(e.source);
    if (e.release !== release || !mine) continue;
    if (e.fixed !== null && compareDebianVersions(mine.version, e.fixed) >= 0) continue;
    rows.push({
      cve: e.cve,
      urgency: e.urgency,
      status: e.fixed === null ? 'no_fix' : 'fixed_available',
      source: e.source,
      installed_version: mine.version,
      fixed_version: e.fixed,
      binaries: [...mine.binaries].sort(),
    });
  }
  const rank = (u: string) => URGENCIES.indexOf(u);
  return rows.sort(
    (a, b) =>
      rank(a.urgency) - rank(b.urgency) ||
      (a.cve < b.cve ? -1 : a.cve > b.cve ? 1 : 0) ||
      (a.source < b.source ? -1 : 1),
  );
}

interface Device {
  id: string;
  set: number;
  release: string;
  unit: string | null;
  group: boolean;
  archived: boolean;
}

/** Per CVE over these devices' rows: the organization's list, most devices first, then by CVE. */
function countsOf(devices: Device[], rows: (d: Device) => Row[]) {
  const byCve = new Map<string, { urgency: number; sources: Set<string>; all: number; fix: number; none: number }>();
  for (const d of devices) {
    const mine = rows(d);
    for (const cve of new Set(mine.map((r) => r.cve))) {
      const of = mine.filter((r) => r.cve === cve);
      const c = byCve.get(cve) ?? { urgency: 9, sources: new Set<string>(), all: 0, fix: 0, none: 0 };
      c.all++;
      if (of.some((r) => r.status === 'fixed_available')) c.fix++;
      if (of.some((r) => r.status === 'no_fix')) c.none++;
      for (const r of of) {
        c.urgency = Math.min(c.urgency, URGENCIES.indexOf(r.urgency));
        c.sources.add(r.source);
      }
      byCve.set(cve, c);
    }
  }
  return [...byCve]
    .map(([cve, c]) => ({
      cve,
      urgency: URGENCIES[c.urgency]!,
      sources: [...c.sources].sort(),
      devices_affected: c.all,
      devices_fix_available: c.fix,
      no_fix: c.none,
    }))
    .sort((a, b) => b.devices_affected - a.devices_affected || (a.cve < b.cve ? -1 : 1));
}

let dir: string;
let org: string;
let unitA: string;
let unitB: string;
let unitC: string;
let group: string;
const devices: Device[] = [];
const sets: TestPackage[][] = packageSets();
const setIds: number[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'fleet-counts-'));
  org = (await createOrganization(ctx)).id;
  unitA = await insertOrgUnit(ctx.sql, org, 'Schule A');
  unitB = await insertOrgUnit(ctx.sql, org, 'Klasse B', unitA);
  unitC = await insertOrgUnit(ctx.sql, org, 'Schule C');
  group = await insertGroup(ctx.sql, org);
  for (const packages of sets) setIds.push(await insertPackageSet(ctx.sql, packages));
  const r = random(5);
  for (let i = 0; i < 48; i++) {
    const unit = r.pick([unitA, unitB, unitC, null]);
    const archived = r.next() < 0.1;
    const device = await insertDevice(ctx.sql, { organizationId: org, archived, ...(unit ? { oeId: unit } : {}) });
    const set = Math.floor(r.next() * sets.length);
    const release = r.next() < 0.75 ? 'bookworm' : 'trixie';
    await insertInventory(ctx.sql, device, setIds[set]!, release === 'bookworm' ? BOOKWORM : TRIXIE);
    const inGroup = r.next() < 0.3;
    if (inGroup) await addToGroup(ctx.sql, group, device.id);
    devices.push({ id: device.id, set, release, unit, group: inGroup, archived });
  }
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function readFeed(round: number): Promise<Entry[]> {
  const { json, entries } = tracker(round);
  const file = join(dir, `tracker-${round}.json`);
  await writeFile(file, json);
  expect((await refreshFeed(ctx.sql, 'debian', pathToFileURL(file).href)).outcome).toBe('changed');
  return entries;
}

/** Every page of the organization's list (7 a page: the cursor is followed). */
async function organizationList(query: string) {
  const items: Array<Record<string, unknown>> = [];
  let cursor: string | null = null;
  do {
    const res: { status: number; body: { items: Array<Record<string, unknown>>; next_cursor: string | null } } =
      await ctx.request(
        'GET',
        `/api/v1/organizations/${org}/vulnerabilities?limit=7${query}${cursor ? `&cursor=${cursor}` : ''}`,
      );
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    items.push(...res.body.items);
    cursor = res.body.next_cursor;
  } while (cursor !== null);
  return items.map(({ first_seen_at: _seen, ...item }) => item);
}

const scopes: Array<[string, string, (d: Device) => boolean]> = [
  ['all devices (stored counts)', '', () => true],
  ["an org unit's subtree", 'oe_id=A', (d) => d.unit === unitA || d.unit === unitB],
  ['an org unit without children', 'oe_id=C', (d) => d.unit === unitC],
  ['a group', 'group_id', (d) => d.group],
  ['a group within a subtree', 'oe_id=A&group_id', (d) => d.group && (d.unit === unitA || d.unit === unitB)],
];

function scopeQuery(scope: string): string {
  return scope
    .replace('oe_id=A', `&oe_id=${unitA}`)
    .replace('oe_id=C', `&oe_id=${unitC}`)
    .replace('group_id', `&group_id=${group}`);
}

async function expectCountsOf(entries: Entry[]) {
  const rows = (d: Device) => rowsOf(sets[d.set]!, d.release, entries);
  for (const [name, scope, member] of scopes) {
    const expected = countsOf(
      devices.filter((d) => !d.archived && member(d)),
      rows,
    );
    expect(expected.length, name).toBeGreaterThan(3);
    const q = scopeQuery(scope);
    const all = await organizationList(`&include_unimportant=true${q}`);
    expect(all, name).toEqual(expected.map(({ no_fix: _n, ...c }) => c));
    // The filters apply to those counts: the worst urgency, a device in that status.
    expect(
      (await organizationList(q)).map((c) => c.cve),
      `${name}, default`,
    ).toEqual(expected.filter((c) => c.urgency !== 'unimportant').map((c) => c.cve));
    expect(
      (await organizationList(`&status=no_fix&urgency=critical,high,unknown${q}`)).map((c) => c.cve),
      name,
    ).toEqual(
      expected.filter((c) => c.no_fix > 0 && ['critical', 'high', 'unknown'].includes(c.urgency)).map((c) => c.cve),
    );
  }
}

describe("the organization's counts and the devices' lists against a count made here", () => {
  let first: Entry[];

  it('agree after the first feed read and match, in every scope and with every filter', async () => {
    first = await readFeed(1);
    await matchOutdated(ctx.sql);
    await expectCountsOf(first);
  });

  it("list every device's rows: oldest installed version of the source, binaries, fixes", async () => {
    for (const d of devices) {
      const res = await ctx.request(
        'GET',
        `/api/v1/devices/${d.id}/vulnerabilities?include_unimportant=true&limit=500`,
      );
      expect(res.status).toBe(200);
      expect(res.body.items).toEqual(rowsOf(sets[d.set]!, d.release, first));
    }
  });

  it('read during a rematch: the old matches count with their own entries until the sets are matched again', async () => {
    const second = await readFeed(2);
    // Not matched yet: the counted scopes decode the old bitmaps with the old entry list.
    const rows = (d: Device) => rowsOf(sets[d.set]!, d.release, first);
    const inC = countsOf(
      devices.filter((d) => !d.archived && d.unit === unitC),
      rows,
    );
    expect(await organizationList(`&include_unimportant=true&oe_id=${unitC}`)).toEqual(
      inC.map(({ no_fix: _n, ...c }) => c),
    );
    const summary = await matchOutdated(ctx.sql);
    expect(summary.pairs).toBe(new Set(devices.map((d) => `${d.set}:${d.release}`)).size);
    await expectCountsOf(second);
    // The old version's lists went with their last set.
    const [lists] = await ctx.sql<{ old: number; current: number }[]>`
      select count(*) filter (where l.version < f.version)::int as old, count(*) filter (where l.version = f.version)::int as current
        from vulnerability_entry_lists l join vulnerability_feeds f on f.name = l.feed`;
    expect(lists).toEqual({ old: 0, current: 2 });
  });

  it('follow a device that moves to another set or release, or is deleted', async () => {
    const second = tracker(2).entries;
    const [mover, other, gone] = devices.filter((d) => !d.archived && d.unit === unitC);
    mover!.set = (mover!.set + 1) % sets.length;
    mover!.release = mover!.release === 'bookworm' ? 'trixie' : 'bookworm';
    await insertInventory(
      ctx.sql,
      { id: mover!.id, organization_id: org },
      setIds[mover!.set]!,
      mover!.release === 'bookworm' ? BOOKWORM : TRIXIE,
    );
    other!.set = (other!.set + 2) % sets.length;
    await insertInventory(
      ctx.sql,
      { id: other!.id, organization_id: org },
      setIds[other!.set]!,
      other!.release === 'bookworm' ? BOOKWORM : TRIXIE,
    );
    await ctx.sql`delete from devices where id = ${gone!.id}`;
    devices.splice(devices.indexOf(gone!), 1);
    await matchOutdated(ctx.sql, { organizations: [org] });
    await expectCountsOf(second);
  });
});
