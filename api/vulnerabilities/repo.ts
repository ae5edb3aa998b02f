/** SQL reads of the security data and its matches: the feeds, a device's CVEs, an organization's. */
import { Buffer } from 'node:buffer';
import type postgres from 'postgres';
import type { Db } from '../db/client.ts';
import { ApiError } from '../http/errors.ts';
import { countCves, devicesPerSet } from './counts.ts';
import { compareDebianVersions } from './dpkg_version.ts';
import { forEachBit, readWithLists } from './entry_lists.ts';
import { type FeedName, URGENCIES, type Urgency } from './feed_parse.ts';

export type MatchStatus = 'fixed_available' | 'no_fix';
export const MATCH_STATUSES = ['fixed_available', 'no_fix'] as const satisfies readonly MatchStatus[];

/**
 * Whether the device (an id expression) is affected by the CVE, at any urgency (in a row of
 * this status when given): its (set, release) has a bit set for one of the CVE's entries.
 * The sets affected are found once per statement, whatever the number of devices asked.
 */
export function affectedBy(
  db: Db,
  deviceId: postgres.PendingQuery<postgres.Row[]>,
  cve: string,
  status?: MatchStatus | undefined,
) {
  return db`exists (
    select 1 from device_inventories i
     where i.device_id = ${deviceId}
       and (i.package_set_id, i.release) in (
         with positions as materialized (
           select l.id, array(select p from unnest(array_positions(l.cves, ${cve}::text)) p
                               where ${status === undefined ? db`true` : db`(l.fixed_versions[p] is null) = ${status === 'no_fix'}`}) as at
             from vulnerability_entry_lists l
         )
         select m.package_set_id, m.release
           from positions l join vulnerability_matched_sets m on m.list_id = l.id
          where cardinality(l.at) > 0 and exists (select 1 from unnest(l.at) p where get_bit(m.affected, p - 1) = 1)))`;
}

export interface FeedRow {
  name: FeedName;
  source: string | null;
  last_success_at: Date | null;
  last_error: string | null;
  entries: number;
}

export async function listFeeds(db: Db): Promise<FeedRow[]> {
  return db<FeedRow[]>`
    select name, source, last_success_at, last_error, entries from vulnerability_feeds order by name`;
}

/**
 * Per device (the devices an expression over `i` selects): how many have pending security
 * updates, need a reboot, or have a `high` or `critical` CVE.
 */
export function updateCounts(db: Db, devices: postgres.PendingQuery<postgres.Row[]>) {
  return db`(
    select json_build_object(
      'security_pending', count(*) filter (where i.security_pending_count > 0),
      'reboot_required', count(*) filter (where i.reboot_required),
      'vulnerable_high', count(*) filter (where ms.worst_urgency_rank <= 1))
      from device_inventories i
      left join vulnerability_matched_sets ms on ms.package_set_id = i.package_set_id and ms.release = i.release
     where ${devices})`;
}

/** The urgencies a list shows: those named, else all but unimportant unless asked for. */
function shownUrgencies(filter: { urgency?: Urgency[] | undefined; include_unimportant?: boolean | undefined }) {
  if (filter.urgency !== undefined) return filter.urgency;
  return filter.include_unimportant ? [...URGENCIES] : URGENCIES.filter((u) => u !== 'unimportant');
}

/** A keyset cursor: the last row's order values, as JSON in base64url. */
function encodeKey(values: Array<string | number>): string {
  return Buffer.from(JSON.stringify(values)).toString('base64url');
}

function decodeKey<T extends Array<string | number>>(
  cursor: string | undefined,
  shape: Array<'string' | 'number'>,
): T | null {
  if (cursor === undefined) return null;
  try {
    const values = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (
      !Array.isArray(values) ||
      values.length !== shape.length ||
      values.some((v, i) => typeof v !== shape[i] || (typeof v === 'number' && !Number.isSafeInteger(v)))
    ) {
      throw new Error('bad cursor');
    }
    return values as T;
  } catch {
    throw new ApiError('invalid_request', 'cursor is not valid', {
      details: [{ path: ['cursor'], message: 'not a cursor of this list' }],
    });
  }
}

export interface DeviceVulnerabilityFilter {
  urgency?: Urgency[] | undefined;
  status?: MatchStatus | undefined;
  include_unimportant?: boolean | undefined;
}

export interface DeviceVulnerability {
  cve: string;
  urgency: Urgency;
  status: MatchStatus;
  source: string;
  installed_version: string;
  fixed_version: string | null;
  binaries: string[];
}

/**
 * A device's CVEs, one row per CVE and source package, worst urgency first (then CVE,
 * source); null when the device has sent no inventory. Its set's bitmap names the rows;
 * the installed versions and binaries are read for the page's source packages only.
 */
export async function pageDeviceVulnerabilities(
  db: Db,
  deviceId: string,
  filter: DeviceVulnerabilityFilter,
  cursor: string | undefined,
  limit: number,
): Promise<{ items: DeviceVulnerability[]; next_cursor: string | null } | null> {
  const after = decodeKey<[number, string, string]>(cursor, ['number', 'string', 'string']);
  const { rows, lists } = await readWithLists(
    db,
    () => db<Array<{ package_set_id: number; list_id: string | null; affected: Buffer | null }>>`
      select i.package_set_id, m.list_id, m.affected
        from device_inventories i
        left join vulnerability_matched_sets m on m.package_set_id = i.package_set_id and m.release = i.release
       where i.device_id = ${deviceId}`,
  );
  const [inventory] = rows;
  if (!inventory) return null;
  const list = inventory.list_id === null ? undefined : lists.get(inventory.list_id);
  if (!list || !inventory.affected) return { items: [], next_cursor: null };
  const shown = new Set<string>(shownUrgencies(filter));
  const wantNoFix = filter.status === undefined ? null : filter.status === 'no_fix' ? 1 : 0;
  const found: number[] = [];
  forEachBit(inventory.affected, (e) => {
    if (e >= list.cves.length || !shown.has(list.urgencies[e]!)) return;
    if (wantNoFix !== null && list.noFix[e] !== wantNoFix) return;
    if (after !== null && compareKeys([list.rank[e]!, list.cves[e]!, list.sources[e]!], after) <= 0) return;
    found.push(e);
  });
  found.sort(
    (a, b) =>
      list.rank[a]! - list.rank[b]! ||
      byText(list.cves[a]!, list.cves[b]!) ||
      byText(list.sources[a]!, list.sources[b]!),
  );
  const page = found.slice(0, limit);
  const installed = await installedSources(db, inventory.package_set_id, [
    ...new Set(page.map((e) => list.sources[e]!)),
  ]);
  const last = page[page.length - 1];
  return {
    items: page.map((e) => ({
      cve: list.cves[e]!,
      urgency: list.urgencies[e]!,
      status: list.noFix[e] === 1 ? 'no_fix' : 'fixed_available',
      source: list.sources[e]!,
      installed_version: installed.get(list.sources[e]!)?.version ?? '',
      fixed_version: list.fixed[e] ?? null,
      binaries: installed.get(list.sources[e]!)?.binaries ?? [],
    })),
    next_cursor:
      found.length > limit && last !== undefined
        ? encodeKey([list.rank[last]!, list.cves[last]!, list.sources[last]!])
        : null,
  };
}

const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

function compareKeys(a: [number, string, string], b: [number, string, string]): number {
  return a[0] - b[0] || byText(a[1], b[1]) || byText(a[2], b[2]);
}

/**
 * Per source package of the set: the installed source version matched (the oldest of its
 * binaries', as dpkg orders versions) and its installed binary packages, by name.
 */
async function installedSources(db: Db, setId: number, sources: string[]) {
  const bySource = new Map<string, { version: string; binaries: string[] }>();
  if (sources.length === 0) return bySource;
  const rows = await db<{ source: string; name: string; source_version: string }[]>`
    select source, name, source_version from package_set_packages
     where set_id = ${setId} and source = any(${sources}::text[])`;
  for (const row of rows) {
    const known = bySource.get(row.source);
    if (!known) {
      bySource.set(row.source, { version: row.source_version, binaries: [row.name] });
      continue;
    }
    if (compareDebianVersions(row.source_version, known.version) < 0) known.version = row.source_version;
    if (!known.binaries.includes(row.name)) known.binaries.push(row.name);
  }
  for (const known of bySource.values()) known.binaries.sort(byText);
  return bySource;
}

export interface OrganizationVulnerabilityFilter {
  urgency?: Urgency[] | undefined;
  status?: MatchStatus | undefined;
  /** CVE prefix, as given (compared in upper case). */
  q?: string | undefined;
  include_unimportant?: boolean | undefined;
}

/** Which devices: an org unit subtree's (its units, resolved), a group's, or all. */
export interface DeviceScope {
  units: string[] | null;
  groupId: string | undefined;
}

export interface OrganizationVulnerability {
  cve: string;
  urgency: Urgency;
  sources: string[];
  devices_affected: number;
  devices_fix_available: number;
  first_seen_at: Date;
}

/**
 * The organization's CVEs with at least one affected device, most devices first (then by
 * CVE). Over all its devices the stored counts answer; over an org unit's subtree or a
 * group they are counted from the devices' sets (the same rule, `countCves`).
 */
export async function pageOrganizationVulnerabilities(
  db: Db,
  organizationId: string,
  filter: OrganizationVulnerabilityFilter,
  scope: DeviceScope,
  cursor: string | undefined,
  limit: number,
): Promise<{ items: OrganizationVulnerability[]; next_cursor: string | null }> {
  const after = decodeKey<[number, string]>(cursor, ['number', 'string']);
  const rows =
    scope.units === null && scope.groupId === undefined
      ? await storedPage(db, organizationId, filter, after, limit)
      : await countedPage(db, organizationId, filter, scope, after, limit);
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    items: page,
    next_cursor: rows.length > limit && last ? encodeKey([last.devices_affected, last.cve]) : null,
  };
}

/** Up to `limit + 1` rows of the stored counts (all the organization's devices). */
async function storedPage(
  db: Db,
  organizationId: string,
  filter: OrganizationVulnerabilityFilter,
  after: [number, string] | null,
  limit: number,
): Promise<OrganizationVulnerability[]> {
  const prefix = filter.q === undefined ? null : `${filter.q.toUpperCase().replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`;
  return db<OrganizationVulnerability[]>`
    select cve, urgency, sources, devices_affected, devices_fix_available, first_seen_at
      from organization_vulnerabilities v
     where organization_id = ${organizationId} and devices_affected > 0
       and v.urgency = any(${shownUrgencies(filter)}::text[])
       and ${
         filter.status === undefined
           ? db`true`
           : filter.status === 'fixed_available'
             ? db`v.devices_fix_available > 0`
             : db`v.devices_no_fix > 0`
       }
       and ${prefix === null ? db`true` : db`v.cve like ${prefix} escape '\\'`}
       and ${after === null ? db`true` : db`(-v.devices_affected, v.cve) > (${-after[0]}, ${after[1]})`}
     order by v.devices_affected desc, v.cve
     limit ${limit + 1}`;
}

/** Up to `limit + 1` rows counted now over the devices of an org unit's subtree or a group. */
async function countedPage(
  db: Db,
  organizationId: string,
  filter: OrganizationVulnerabilityFilter,
  scope: DeviceScope,
  after: [number, string] | null,
  limit: number,
): Promise<OrganizationVulnerability[]> {
  const condition = db`
    ${scope.units === null ? db`true` : db`d.oe_id = any(${scope.units}::uuid[])`}
    and ${
      scope.groupId === undefined
        ? db`true`
        : db`exists (select 1 from group_members g where g.group_id = ${scope.groupId} and g.device_id = d.id)`
    }`;
  const shown = new Set<string>(shownUrgencies(filter));
  const prefix = filter.q?.toUpperCase();
  const rows = countCves(await devicesPerSet(db, organizationId, condition))
    .filter(
      (c) =>
        shown.has(c.urgency) &&
        (filter.status === undefined ||
          (filter.status === 'fixed_available' ? c.devices_fix_available > 0 : c.devices_no_fix > 0)) &&
        (prefix === undefined || c.cve.startsWith(prefix)) &&
        (after === null || c.devices_affected < after[0] || (c.devices_affected === after[0] && c.cve > after[1])),
    )
    // Stable, over counts in CVE order: most devices first, then by CVE.
    .sort((a, b) => b.devices_affected - a.devices_affected)
    .slice(0, limit + 1);
  const seen = new Map(
    (
      await db<{ cve: string; first_seen_at: Date }[]>`
        select cve, first_seen_at from organization_vulnerabilities
         where organization_id = ${organizationId} and cve = any(${rows.map((r) => r.cve)}::text[])`
    ).map((r) => [r.cve, r.first_seen_at]),
  );
  // A CVE the stored counts do not hold yet (its match is being recounted) is seen now.
  const now = new Date();
  return rows.map(({ devices_no_fix: _n, ...row }) => ({ ...row, first_seen_at: seen.get(row.cve) ?? now }));
}

/**
 * Why an organization's list can be empty: whether any security feed has been read, and
 * how many of its devices (not archived) have sent an inventory.
 */
export async function securityDataState(db: Db, organizationId: string) {
  const [row] = await db<{ feed_read: boolean; inventories: number }[]>`
    select exists (select 1 from vulnerability_feeds where last_success_at is not null) as feed_read,
           (select count(*)::int from device_inventories i join devices d on d.id = i.device_id
             where i.organization_id = ${organizationId} and d.archived_at is null) as inventories`;
  return { feedRead: row!.feed_read, inventories: row!.inventories };
}
