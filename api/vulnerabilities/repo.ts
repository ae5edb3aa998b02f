/** SQL reads of the security data and its matches: the feeds, a device's CVEs, an organization's. */
import { Buffer } from 'node:buffer';
import type postgres from 'postgres';
import type { Db } from '../db/client.ts';
import { ApiError } from '../http/errors.ts';
import { cveCounts } from './counts.ts';
import { type FeedName, URGENCIES, type Urgency } from './feed_parse.ts';

export type MatchStatus = 'fixed_available' | 'no_fix';
export const MATCH_STATUSES = ['fixed_available', 'no_fix'] as const satisfies readonly MatchStatus[];

/** Whether the device (an id expression) is affected by the CVE, at any urgency (in a row of this status when given). */
export function affectedBy(
  db: Db,
  deviceId: postgres.PendingQuery<postgres.Row[]>,
  cve: string,
  status?: MatchStatus | undefined,
) {
  return db`exists (
    select 1 from device_inventories i
      join vulnerability_matches m on m.package_set_id = i.package_set_id and m.release = i.release
     where i.device_id = ${deviceId} and m.cve = ${cve}
       and ${status === undefined ? db`true` : db`m.status = ${status}`})`;
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
 * source); null when the device has sent no inventory.
 */
export async function pageDeviceVulnerabilities(
  db: Db,
  deviceId: string,
  filter: DeviceVulnerabilityFilter,
  cursor: string | undefined,
  limit: number,
): Promise<{ items: DeviceVulnerability[]; next_cursor: string | null } | null> {
  const after = decodeKey<[number, string, string]>(cursor, ['number', 'string', 'string']);
  const [inventory] = await db<{ package_set_id: number; release: string }[]>`
    select package_set_id, release from device_inventories where device_id = ${deviceId}`;
  if (!inventory) return null;
  // The page first; the binaries only for its rows.
  const rows = await db<Array<DeviceVulnerability & { rank: number }>>`
    with page as materialized (
      select m.cve, m.urgency, m.status, m.source, m.installed_version, m.fixed_version,
             urgency_rank(m.urgency) as rank
        from vulnerability_matches m
       where m.package_set_id = ${inventory.package_set_id} and m.release = ${inventory.release}
         and m.urgency = any(${shownUrgencies(filter)}::text[])
         and ${filter.status === undefined ? db`true` : db`m.status = ${filter.status}`}
         and ${after === null ? db`true` : db`(urgency_rank(m.urgency), m.cve, m.source) > (${after[0]}, ${after[1]}, ${after[2]})`}
       order by urgency_rank(m.urgency), m.cve, m.source
       limit ${limit + 1}
    )
    select page.*,
           array(select distinct p.name from package_set_packages p
                  where p.set_id = ${inventory.package_set_id} and p.source = page.source order by p.name) as binaries
      from page
     order by page.rank, page.cve, page.source`;
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    items: page.map(({ rank: _rank, ...row }) => row),
    next_cursor: rows.length > limit && last ? encodeKey([last.rank, last.cve, last.source]) : null,
  };
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
 * group they are counted from the devices' sets (the same rule, `cveCounts`).
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
  const scoped = scope.units !== null || scope.groupId !== undefined;
  const condition = db`
    ${scope.units === null ? db`true` : db`d.oe_id = any(${scope.units}::uuid[])`}
    and ${
      scope.groupId === undefined
        ? db`true`
        : db`exists (select 1 from group_members g where g.group_id = ${scope.groupId} and g.device_id = d.id)`
    }`;
  const source = scoped
    ? db`(
        with ${cveCounts(db, organizationId, condition)}
        select c.cve, c.urgency, c.sources, c.devices_affected, c.devices_fix_available, c.devices_no_fix,
               coalesce(o.first_seen_at, now_ms()) as first_seen_at
          from counts c
          left join organization_vulnerabilities o on o.organization_id = ${organizationId} and o.cve = c.cve)`
    : db`(
        select cve, urgency, sources, devices_affected, devices_fix_available, devices_no_fix, first_seen_at
          from organization_vulnerabilities
         where organization_id = ${organizationId} and devices_affected > 0)`;
  const prefix = filter.q === undefined ? null : `${filter.q.toUpperCase().replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`;
  const rows = await db<Array<OrganizationVulnerability & { devices_no_fix: number }>>`
    select v.* from ${source} v
     where v.urgency = any(${shownUrgencies(filter)}::text[])
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
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    items: page.map(({ devices_no_fix: _n, ...row }) => row),
    next_cursor: rows.length > limit && last ? encodeKey([last.devices_affected, last.cve]) : null,
  };
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
