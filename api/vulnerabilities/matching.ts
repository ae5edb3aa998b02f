/**
 * Matching the security data against the package sets the devices run, on the server.
 * Matches are made per (package set, release), never per device: a fleet of 100,000
 * devices on 500 distinct sets is matched 500 times. A device is affected when the data
 * names its source package for its release and gives no fix (`no_fix`) or a fix newer
 * than the installed source version (`fixed_available`), compared as dpkg compares.
 * After matching, the organizations concerned are recounted (organization_vulnerabilities)
 * and a CVE whose first device became affected is announced once (`vulnerability.detected`).
 */
import type { Db, Sql } from '../db/client.ts';
import { cveCounts } from './counts.ts';
import { compareDebianVersions } from './dpkg_version.ts';
import { type FeedName, URGENCIES, type Urgency } from './feed_parse.ts';

/** Sets matched per transaction: each statement stays far below the database's time limit. */
const SETS_PER_CHUNK = 50;
/** One matching at a time: a feed import's and a new set's must not interleave their writes. */
const MATCHING_LOCK = 5_127_000_051;

interface Entry {
  cve: string;
  introduced: string | null;
  fixed: string | null;
  urgency: Urgency;
}

export interface MatchRow {
  cve: string;
  source: string;
  urgency: Urgency;
  status: 'fixed_available' | 'no_fix';
  installed: string;
  fixed: string | null;
}

/** The feed a device's OS is matched against (Ubuntu's OSV records, else Debian's tracker), over `device_inventories i`. */
function feedOfInventory(db: Db) {
  return db`(case when i.os_id = 'ubuntu' then 'ubuntu' else 'debian' end)`;
}

/**
 * Runs `fn` holding the matching lock (a session advisory lock on a connection of its own,
 * so `fn` may open transactions of its own on the pool).
 */
async function withMatchingLock<T>(sql: Sql, fn: () => Promise<T>): Promise<T> {
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
 * What one source package at one installed version is affected by, of `entries` (those of
 * the source on the release). `compare` may be a cache of compareDebianVersions.
 */
export function matchSource(
  source: string,
  installed: string,
  entries: readonly Entry[],
  compare: (a: string, b: string) => number = compareDebianVersions,
): MatchRow[] {
  const rows: MatchRow[] = [];
  for (const e of entries) {
    if (e.introduced !== null && compare(installed, e.introduced) < 0) continue;
    if (e.fixed === null) {
      rows.push({ cve: e.cve, source, urgency: e.urgency, status: 'no_fix', installed, fixed: null });
    } else if (compare(installed, e.fixed) < 0) {
      rows.push({ cve: e.cve, source, urgency: e.urgency, status: 'fixed_available', installed, fixed: e.fixed });
    }
  }
  return rows;
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

async function loadEntries(sql: Sql, feed: FeedName, release: string): Promise<Map<string, Entry[]>> {
  const rows = await sql<Array<Entry & { source: string }>>`
    select source, cve, introduced, fixed_version as fixed, urgency
      from vulnerability_entries where feed = ${feed} and release = ${release}`;
  const bySource = new Map<string, Entry[]>();
  for (const { source, ...entry } of rows) {
    const list = bySource.get(source);
    if (list) list.push(entry);
    else bySource.set(source, [entry]);
  }
  return bySource;
}

/**
 * Matches these sets on one release against the feed's entries as they are now, replacing
 * their rows. Returns the rows written.
 */
async function matchSets(sql: Sql, feed: FeedName, release: string, setIds: number[]): Promise<number> {
  const [version] = await sql<{ version: number }[]>`select version from vulnerability_feeds where name = ${feed}`;
  const entries = await loadEntries(sql, feed, release);
  const compare = cachedCompare();
  // Sets of one fleet share most (source, version) pairs: each is matched once.
  const bySourceVersion = new Map<string, { rows: MatchRow[]; worst: number }>();
  const matchOnce = (source: string, version: string) => {
    const key = `${source}\n${version}`;
    let found = bySourceVersion.get(key);
    if (!found) {
      const rows = matchSource(source, version, entries.get(source) ?? [], compare);
      const worst = Math.min(...rows.map((r) => URGENCIES.indexOf(r.urgency)));
      found = { rows, worst };
      bySourceVersion.set(key, found);
    }
    return found;
  };
  let written = 0;
  for (let i = 0; i < setIds.length; i += SETS_PER_CHUNK) {
    const chunk = setIds.slice(i, i + SETS_PER_CHUNK);
    const packages = await sql<{ set_id: number; source: string; source_version: string }[]>`
      select distinct set_id, source, source_version from package_set_packages where set_id = any(${chunk}::bigint[])`;
    // Per set and source, the oldest installed source version (binaries of one source may lag).
    const installed = new Map<number, Map<string, string>>();
    for (const p of packages) {
      if (!entries.has(p.source)) continue;
      let sources = installed.get(p.set_id);
      if (!sources) installed.set(p.set_id, (sources = new Map()));
      const known = sources.get(p.source);
      if (known === undefined || compare(p.source_version, known) < 0) sources.set(p.source, p.source_version);
    }
    const rows: Array<MatchRow & { set: number }> = [];
    const worst = new Map<number, number>();
    for (const [set, sources] of installed) {
      for (const [source, version] of sources) {
        const found = matchOnce(source, version);
        for (const row of found.rows) rows.push({ ...row, set });
        if (found.rows.length > 0) worst.set(set, Math.min(worst.get(set) ?? found.worst, found.worst));
      }
    }
    await sql.begin(async (tx) => {
      await tx`delete from vulnerability_matches where package_set_id = any(${chunk}::bigint[]) and release = ${release}`;
      for (let j = 0; j < rows.length; j += 20_000) {
        const batch = rows.slice(j, j + 20_000);
        await tx`
          insert into vulnerability_matches
            (package_set_id, release, cve, source, urgency, status, installed_version, fixed_version)
          select s, ${release}, c, src, u, st, iv, fv from unnest(
            ${batch.map((r) => r.set)}::bigint[], ${batch.map((r) => r.cve)}::text[],
            ${batch.map((r) => r.source)}::text[], ${batch.map((r) => r.urgency)}::text[],
            ${batch.map((r) => r.status)}::text[], ${batch.map((r) => r.installed)}::text[],
            ${batch.map((r) => r.fixed)}::text[]) as x (s, c, src, u, st, iv, fv)`;
      }
      await tx`
        insert into vulnerability_matched_sets as m (package_set_id, release, feed, feed_version, worst_urgency_rank)
        select s, ${release}, ${feed}, ${version?.version ?? 0}, w
          from unnest(${chunk}::bigint[], ${chunk.map((s) => worst.get(s) ?? null)}::smallint[]) as x (s, w)
        on conflict (package_set_id, release) do update
          set feed = excluded.feed, feed_version = excluded.feed_version,
              worst_urgency_rank = excluded.worst_urgency_rank, matched_at = now_ms()`;
    });
    written += rows.length;
  }
  return written;
}

export interface MatchSummary {
  /** (set, release) pairs matched. */
  pairs: number;
  /** Match rows written. */
  rows: number;
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
    let rows = 0;
    for (const g of groups.values()) rows += await matchSets(sql, g.feed, g.release, g.sets);
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
    return { pairs: outdated.length, rows, organizations: organizations.length, detected };
  });
}

/**
 * Recounts one organization's CVEs over its devices that are not archived, then announces
 * each CVE (not unimportant) whose first device became affected: once per organization and
 * CVE. Returns the events emitted.
 */
async function recountOrganization(db: Db, organizationId: string): Promise<number> {
  await db`
    with ${cveCounts(db, organizationId)}, upserted as (
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
