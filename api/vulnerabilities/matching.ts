/**
 * Matching the security data against the package sets the devices run, on the server.
 * Matches are made per (package set, release), never per device: a fleet of 100,000
 * devices on 500 distinct sets is matched 500 times, and each match is stored as one
 * bitmap over the numbered entries of its feed version (entry_lists.ts). A device is affected when the data
 * names its source package for its release and gives no fix (`no_fix`) or a fix newer
 * than the installed source version (`fixed_available`), compared as dpkg compares.
 * After matching, the organizations concerned are recounted (organization_vulnerabilities)
 * and a CVE whose first device became affected is announced once (`vulnerability.detected`).
 */
import { Buffer } from 'node:buffer';
import type { Db, Sql } from '../db/client.ts';
import { countCves, devicesPerSet } from './counts.ts';
import { compareDebianVersions } from './dpkg_version.ts';
import { decodeList, newBitmap, setBit } from './entry_lists.ts';
import { type FeedName, URGENCIES, type Urgency } from './feed_parse.ts';

/** Sets matched per statement: their packages read and their bitmaps written at once. */
const SETS_PER_CHUNK = 50;
/** One matching at a time: a feed import's and a new set's must not interleave their writes. */
const MATCHING_LOCK = 5_127_000_051;

interface Entry {
  cve: string;
  introduced: string | null;
  fixed: string | null;
  urgency: Urgency;
}

/** The feed a device's OS is matched against (Ubuntu's OSV records, else Debian's tracker), over `device_inventories i`. */
function feedOfInventory(db: Db) {
  return db`(case when i.os_id = 'ubuntu' then 'ubuntu' else 'debian' end)`;
}

/**
 * Runs `fn` holding the matching lock (a session advisory lock on a connection of its own,
 * so `fn` may open transactions of its own on the pool). What deletes package sets holds
 * it too: a set is never deleted while it is being matched.
 */
export async function withMatchingLock<T>(sql: Sql, fn: () => Promise<T>): Promise<T> {
  const conn = await sql.reserve();
  try {
    await conn`select pg_advisory_lock(${MATCHING_LOCK})`;
    try {
      return await fn();
    } finally {
      await conn`select pg_advisory_unlock(${MATCHING_LOCK})`;
    }
  } finally {
    conn.release();
  }
}

/**
 * Whether an entry affects a source package installed at this version: from its
 * `introduced` version on (any, when none), up to its fix (excluded; always, when none).
 * `compare` may be a cache of compareDebianVersions.
 */
export function affects(
  installed: string,
  entry: Pick<Entry, 'introduced' | 'fixed'>,
  compare: (a: string, b: string) => number = compareDebianVersions,
): boolean {
  if (entry.introduced !== null && compare(installed, entry.introduced) < 0) return false;
  return entry.fixed === null || compare(installed, entry.fixed) < 0;
}

/** compareDebianVersions with a memory: sets of one fleet share most of their versions. */
function cachedCompare(): (a: string, b: string) => number {
  const cache = new Map<string, number>();
  return (a, b) => {
    const key = `${a}\n${b}`;
    let order = cache.get(key);
    if (order === undefined) {
      order = compareDebianVersions(a, b);
      cache.set(key, order);
    }
    return order;
  };
}

const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * The numbered list of the feed's entries on this release as they are now (its version
 * and entries read in one snapshot), written once per feed version and release; and per
 * source package, its entries with their numbers.
 */
async function currentList(sql: Sql, feed: FeedName, release: string) {
  const { version, entries } = await sql.begin('isolation level repeatable read read only', async (tx) => {
    const [row] = await tx<{ version: number }[]>`select version from vulnerability_feeds where name = ${feed}`;
    const rows = await tx<Array<Entry & { source: string }>>`
      select source, cve, introduced, fixed_version as fixed, urgency
        from vulnerability_entries where feed = ${feed} and release = ${release}`;
    return { version: row?.version ?? 0, entries: rows };
  });
  entries.sort((a, b) => byText(a.cve, b.cve) || byText(a.source, b.source));
  const [known] = await sql<{ id: string }[]>`
    select id from vulnerability_entry_lists where feed = ${feed} and version = ${version} and release = ${release}`;
  const columns = {
    cves: entries.map((e) => e.cve),
    sources: entries.map((e) => e.source),
    urgencies: entries.map((e) => e.urgency),
    fixed_versions: entries.map((e) => e.fixed),
  };
  const id =
    known?.id ??
    (
      await sql<{ id: string }[]>`
        insert into vulnerability_entry_lists (feed, version, release, cves, sources, urgencies, fixed_versions)
        values (${feed}, ${version}, ${release}, ${columns.cves}::text[], ${columns.sources}::text[],
                ${columns.urgencies}::text[], ${columns.fixed_versions}::text[])
        returning id`
    )[0]!.id;
  const list = decodeList({ id, ...columns });
  const bySource = new Map<string, Array<Entry & { ordinal: number }>>();
  entries.forEach(({ source, ...entry }, ordinal) => {
    const known = bySource.get(source);
    if (known) known.push({ ...entry, ordinal });
    else bySource.set(source, [{ ...entry, ordinal }]);
  });
  return { version, list, bySource };
}

/**
 * Matches these sets on one release against the feed's entries as they are now, replacing
 * their bitmaps. Returns the (set, CVE, source package) matches found.
 */
async function matchSets(sql: Sql, feed: FeedName, release: string, setIds: number[]): Promise<number> {
  const { version, list, bySource } = await currentList(sql, feed, release);
  const compare = cachedCompare();
  // Sets of one fleet share most (source, version) pairs: each is matched once.
  const bySourceVersion = new Map<string, { ordinals: number[]; worst: number }>();
  const matchOnce = (source: string, installed: string) => {
    const key = `${source}\n${installed}`;
    let found = bySourceVersion.get(key);
    if (!found) {
      const hits = (bySource.get(source) ?? []).filter((e) => affects(installed, e, compare));
      found = {
        ordinals: hits.map((e) => e.ordinal),
        worst: Math.min(URGENCIES.length, ...hits.map((e) => URGENCIES.indexOf(e.urgency))),
      };
      bySourceVersion.set(key, found);
    }
    return found;
  };
  let matches = 0;
  for (let i = 0; i < setIds.length; i += SETS_PER_CHUNK) {
    const chunk = setIds.slice(i, i + SETS_PER_CHUNK);
    const packages = await sql<{ set_id: number; source: string; source_version: string }[]>`
      select distinct set_id, source, source_version from package_set_packages where set_id = any(${chunk}::bigint[])`;
    // Per set and source, the oldest installed source version (binaries of one source may lag).
    const installed = new Map<number, Map<string, string>>(chunk.map((set) => [set, new Map()]));
    for (const p of packages) {
      if (!bySource.has(p.source)) continue;
      const sources = installed.get(p.set_id)!;
      const known = sources.get(p.source);
      if (known === undefined || compare(p.source_version, known) < 0) sources.set(p.source, p.source_version);
    }
    const rows = [...installed].map(([set, sources]) => {
      const affected = newBitmap(list.cves.length);
      let worst: number = URGENCIES.length;
      for (const [source, at] of sources) {
        const found = matchOnce(source, at);
        for (const ordinal of found.ordinals) setBit(affected, ordinal);
        matches += found.ordinals.length;
        worst = Math.min(worst, found.worst);
      }
      return {
        package_set_id: set,
        release,
        feed,
        feed_version: version,
        worst_urgency_rank: worst < URGENCIES.length ? worst : null,
        list_id: list.id,
        affected: Buffer.from(affected.buffer, affected.byteOffset, affected.byteLength),
      };
    });
    await sql`
      insert into vulnerability_matched_sets ${sql(rows)}
      on conflict (package_set_id, release) do update
        set feed = excluded.feed, feed_version = excluded.feed_version, worst_urgency_rank = excluded.worst_urgency_rank,
            list_id = excluded.list_id, affected = excluded.affected, matched_at = now_ms()`;
  }
  return matches;
}

export interface MatchSummary {
  /** (set, release) pairs matched. */
  pairs: number;
  /** (set, CVE, source package) matches found in them. */
  matches: number;
  /** Organizations recounted. */
  organizations: number;
  /** `vulnerability.detected` events emitted. */
  detected: number;
}

/**
 * Matches every (set, release) a device runs whose match is missing or older than its
 * feed (all of them after a feed change; `organizationId` limits it to that organization's
 * devices), then recounts the organizations concerned (`organizations`, or those of every
 * matched pair). Idempotent: a pair matched at its feed's version is not matched again.
 */
export async function matchOutdated(
  sql: Sql,
  options: { organizationId?: string; organizations?: string[] } = {},
): Promise<MatchSummary> {
  return withMatchingLock(sql, async () => {
    const only = options.organizationId;
    const outdated = await sql<{ package_set_id: number; release: string; feed: FeedName }[]>`
      select distinct i.package_set_id, i.release, ${feedOfInventory(sql)} as feed
        from device_inventories i
        join vulnerability_feeds f on f.name = ${feedOfInventory(sql)}
        left join vulnerability_matched_sets m on m.package_set_id = i.package_set_id and m.release = i.release
       where (m.feed_version is distinct from f.version or m.feed is distinct from f.name)
         and ${only === undefined ? sql`true` : sql`i.organization_id = ${only}`}`;
    const groups = new Map<string, { feed: FeedName; release: string; sets: number[] }>();
    for (const o of outdated) {
      const key = `${o.feed}\n${o.release}`;
      const group = groups.get(key) ?? { feed: o.feed, release: o.release, sets: [] };
      group.sets.push(o.package_set_id);
      groups.set(key, group);
    }
    let matches = 0;
    for (const g of groups.values()) matches += await matchSets(sql, g.feed, g.release, g.sets);
    // Lists no set refers to any more: an older feed version's once its sets are rematched, a deleted set's.
    await sql`
      delete from vulnerability_entry_lists l
       where not exists (select 1 from vulnerability_matched_sets m where m.list_id = l.id)`;
    const organizations =
      options.organizations ??
      (outdated.length === 0
        ? []
        : (
            await sql<{ organization_id: string }[]>`
              select distinct i.organization_id from device_inventories i
                join unnest(${outdated.map((o) => o.package_set_id)}::bigint[], ${outdated.map((o) => o.release)}::text[])
                  as x (s, r) on i.package_set_id = x.s and i.release = x.r`
          ).map((r) => r.organization_id));
    let detected = 0;
    for (const org of organizations) detected += await recountOrganization(sql, org);
    return { pairs: outdated.length, matches, organizations: organizations.length, detected };
  });
}

/**
 * Recounts one organization's CVEs over its devices that are not archived, then announces
 * each CVE (not unimportant) whose first device became affected: once per organization and
 * CVE. Returns the events emitted.
 */
async function recountOrganization(db: Db, organizationId: string): Promise<number> {
  const counts = countCves(await devicesPerSet(db, organizationId));
  await db`
    with counts as (
      select * from jsonb_to_recordset(${db.json(counts as never)}::jsonb)
        as c (cve text, urgency text, sources text[], devices_affected integer, devices_fix_available integer,
              devices_no_fix integer)
    ), upserted as (
      insert into organization_vulnerabilities as o
        (organization_id, cve, urgency, sources, devices_affected, devices_fix_available, devices_no_fix)
      select ${organizationId}, c.cve, c.urgency, c.sources, c.devices_affected, c.devices_fix_available,
             c.devices_no_fix
        from counts c
      on conflict (organization_id, cve) do update
        set urgency = excluded.urgency, sources = excluded.sources, devices_affected = excluded.devices_affected,
            devices_fix_available = excluded.devices_fix_available, devices_no_fix = excluded.devices_no_fix
        where (o.urgency, o.sources, o.devices_affected, o.devices_fix_available, o.devices_no_fix)
              is distinct from (excluded.urgency, excluded.sources, excluded.devices_affected,
                                excluded.devices_fix_available, excluded.devices_no_fix)
    )
    update organization_vulnerabilities o
       set devices_affected = 0, devices_fix_available = 0, devices_no_fix = 0
     where o.organization_id = ${organizationId} and o.devices_affected > 0
       and not exists (select 1 from counts c where c.cve = o.cve)`;
  const detected = await db`
    with due as (
      update organization_vulnerabilities
         set notified_at = now_ms()
       where organization_id = ${organizationId} and notified_at is null and devices_affected > 0
         and urgency <> 'unimportant'
      returning cve, urgency, devices_affected
    )
    select emit_webhook_event(${organizationId}, 'vulnerability.detected', jsonb_build_object(
             'cve', cve, 'urgency', urgency, 'devices_affected', devices_affected))::text
      from due`;
  return detected.length;
}
