/** SQL of the admin's device views (list, filters, orders) and of moving a device to an org unit. */
import { Buffer } from 'node:buffer';
import type postgres from 'postgres';
import { afterKey, keyOrder } from '../db/keyset.ts';
import type { Db } from '../db/client.ts';
import { isPgError, pgError, transaction } from '../db/client.ts';
import type { Actor } from '../access/declaration.ts';
import type { RecordEffectiveState } from '../access/effective_state.ts';
import { organizationOf } from '../access/owners.ts';
import { ApiError, notFound } from '../http/errors.ts';
import { isUuid } from '../http/uuid.ts';
import { orgUnitSubtree, requireOrgUnitOf } from '../org_units/repo.ts';
import { requireOrganization } from '../organizations/repo.ts';
import {
  type Convergence,
  deviceArchived,
  deviceSelect,
  type DeviceRow,
  type DeviceStatus,
  effectiveTemplateOf,
  getDevice,
  statusOf,
} from './repo.ts';
import { affectedBy, type MatchStatus } from '../vulnerabilities/repo.ts';
import { type DiskEncryptionState, inDiskEncryptionState } from './disk_encryption.ts';

export interface DeviceFilter {
  /** Only devices of this org unit's subtree: filed in it or in any unit below it. */
  oe_id?: string | undefined;
  /** Only members of this group. */
  group_id?: string | undefined;
  /** Only stale devices (true) or only the others (false); by the database's `device_status`. */
  stale?: boolean | undefined;
  /** Serial or hostname starts with this, ignoring case. */
  q?: string | undefined;
  /** Only devices of this status. */
  status?: Exclude<DeviceStatus, 'archived'> | undefined;
  /** Only devices of this convergence; with `merkmal`, that Merkmal's. */
  convergence?: Convergence | undefined;
  /** Only devices whose this Merkmal has the `convergence`. */
  merkmal?: string | undefined;
  /** Only devices affected by this CVE, at any urgency (unimportant included). */
  cve?: string | undefined;
  /** Only devices that have this binary package installed (by their last inventory). */
  package?: string | undefined;
  /** Only devices with pending security updates (true). */
  security_updates?: true | undefined;
  /** Only devices that need a reboot (true). */
  reboot_required?: true | undefined;
  /** With `cve`: only the devices whose row of it has this status. */
  cve_status?: MatchStatus | undefined;
  /** Only the devices fleet status counts in this disk encryption state. */
  disk_encryption?: DiskEncryptionState | undefined;
}

/** The agent's poll interval, which decides when a device is stale. */
export interface ListContext {
  pollIntervalSeconds: number;
}

/** The orders of the device list: serial (the default), last check-in or creation, `-` for descending. */
export const DEVICE_SORTS = ['serial', '-last_checkin', 'last_checkin', 'created_at', '-created_at'] as const;
export type DeviceSort = (typeof DEVICE_SORTS)[number];

/**
 * Each order's key over `devices d` and heartbeat `h`, and the key as text for the cursor
 * (a time to the microsecond, so a page never splits rows the cursor cannot tell apart).
 * A device that never checked in has no key: the oldest.
 */
function sortKey(db: Db, sort: DeviceSort) {
  const column = sort.replace(/^-/, '');
  const key = column === 'serial' ? db`d.serial` : column === 'created_at' ? db`d.created_at` : db`h.at`;
  const text = column === 'serial' ? key : db`to_char(${key} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;
  return { key, text, order: sort.startsWith('-') ? ('desc' as const) : ('asc' as const), time: column !== 'serial' };
}

/**
 * A page's cursor: the sort key of the row it starts from (as text; null for a device that
 * never checked in) and its id; `before` walks back from it (the previous page) instead
 * of on (the next).
 */
export interface DeviceCursor {
  key: string | null;
  id: string;
  before?: boolean;
}

/**
 * The cursor after `row` in the order `sort` (or before it, `direction` 'before'): the order
 * travels along, so a cursor of another order is refused.
 */
export function encodeDeviceCursor(
  sort: DeviceSort,
  row: ListedDevice,
  direction: 'after' | 'before' = 'after',
): string {
  const parts = direction === 'before' ? [sort, row.sort_key, row.id, 'before'] : [sort, row.sort_key, row.id];
  return Buffer.from(JSON.stringify(parts)).toString('base64url');
}

/** What the list writes for a time: UTC to the microsecond, a real date of the years 1970–9999. */
function isCursorTime(key: string): boolean {
  if (!/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/.test(key)) return false;
  const ms = `${key.slice(0, 23)}Z`;
  const date = new Date(ms);
  return !Number.isNaN(date.getTime()) && date.getTime() >= 0 && date.toISOString() === ms;
}

/**
 * A cursor of `encodeDeviceCursor` for this order (either direction), or null without one.
 * A forged one, or one of another order, is a 400, never a 500: the key must be of the
 * order's form and the id a UUID, so nothing reaches SQL that PostgreSQL would refuse.
 */
export function decodeDeviceCursor(sort: DeviceSort, cursor: string | undefined): DeviceCursor | null {
  if (cursor === undefined) return null;
  try {
    const parts = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[];
    const [order, key, id, direction] = parts;
    if (order !== sort) throw new Error('another order');
    if (parts.length > 4 || (parts.length === 4 && direction !== 'before')) throw new Error('bad direction');
    const nullable = sort.endsWith('last_checkin');
    const valid =
      (key === null && nullable) ||
      (typeof key === 'string' &&
        (sort === 'serial' ? key.length <= 200 && !key.includes('\u0000') : isCursorTime(key)));
    if (!valid || typeof id !== 'string' || !isUuid(id)) throw new Error('bad key');
    const decoded: DeviceCursor = { key: key as string | null, id: id.toLowerCase() };
    if (direction === 'before') decoded.before = true;
    return decoded;
  } catch {
    throw new ApiError('invalid_request', 'cursor is not valid', {
      details: [{ path: ['cursor'], message: `not a cursor of this list in the order ${sort}` }],
    });
  }
}

/** A device of the list, with the text of its sort key for the next cursor. */
export type ListedDevice = DeviceRow & { sort_key: string | null };

/** `q` as a LIKE prefix pattern (escape character: backslash): its own `%`, `_` and backslashes match literally. */
function prefixPattern(q: string): string {
  return `${q.toLowerCase().replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`;
}

/**
 * A `merkmal` filter lists the devices whose that Merkmal has the `convergence` (the
 * overview's figures per Merkmal, each a link): without a convergence it filters nothing it could.
 */
export function merkmalFilterable(convergence: Convergence | undefined): boolean {
  return convergence !== undefined;
}

/** The group of `group_id` is the organization's: 404 when unknown, 422 when another's (the operator sees both). */
export async function requireGroupOf(db: Db, groupId: string, organizationId: string): Promise<void> {
  // Whose group it is, from the access layer: a device knows no group of its own.
  const owner = await organizationOf(db, 'group', groupId);
  if (owner === null) throw notFound('group', groupId);
  if (owner !== organizationId) {
    throw new ApiError('organization_mismatch', `group ${groupId} (group_id) belongs to another organization`);
  }
}

/**
 * What `matching` selects, resolved once per statement: the units of `oe_id`'s subtree
 * (null without the filter). Looked up before the statement, not as a subquery in it: the
 * planner then knows how many units the filter names, and a one-unit subtree plans as the
 * single unit did (by the devices' `oe_id` index), a wide one by the list's order.
 */
interface Resolved {
  units: string[] | null;
}

/**
 * A filter's unit, group and Merkmal exist and are the organization's (404, 422 otherwise;
 * an unknown Merkmal 422 `unknown_merkmal`), and a Merkmal comes with a convergence it can
 * filter by (`merkmalFilterable`; 400 otherwise), a `cve_status` with its `cve`. Answers the unit's subtree (`Resolved`).
 */
async function requireFilter(db: Db, organizationId: string, filter: DeviceFilter): Promise<Resolved> {
  if (filter.merkmal !== undefined && !merkmalFilterable(filter.convergence)) {
    throw new ApiError('invalid_request', 'merkmal filters by its convergence: converged, pending or failed', {
      details: [{ path: ['convergence'], message: 'required with merkmal' }],
    });
  }
  if (filter.cve_status !== undefined && filter.cve === undefined) {
    throw new ApiError('invalid_request', 'cve_status filters the rows of a cve', {
      details: [{ path: ['cve'], message: 'required with cve_status' }],
    });
  }
  await requireOrganization(db, organizationId);
  if (filter.oe_id !== undefined) await requireOrgUnitOf(db, filter.oe_id, organizationId, 'oe_id');
  if (filter.group_id !== undefined) await requireGroupOf(db, filter.group_id, organizationId);
  if (filter.merkmal !== undefined) {
    const [known] = await db`select 1 from merkmale where key = ${filter.merkmal}`;
    if (!known) throw new ApiError('unknown_merkmal', `Merkmal "${filter.merkmal}" does not exist`);
  }
  return { units: filter.oe_id === undefined ? null : await orgUnitSubtree(db, filter.oe_id) };
}

/** The `oe_id` filter over a row's `oe_id` column: the unit's subtree, or no filter. */
function inUnits(db: Db, column: postgres.PendingQuery<postgres.Row[]>, resolved: Resolved) {
  return resolved.units === null ? db`true` : db`${column} = any(${resolved.units}::uuid[])`;
}

/**
 * The filter as a condition over `devices d` with its heartbeat `h`, effective template
 * `dt` and status `st` joined (as `deviceSelect` joins them): the list, its count and the
 * ids of a bulk action all match the same devices (`fleetMatching` too, over the fleet rows).
 */
function matching(db: Db, organizationId: string, filter: DeviceFilter, resolved: Resolved) {
  return db`
    d.organization_id = ${organizationId}
      and d.archived_at is null
      and ${inUnits(db, db`d.oe_id`, resolved)}
      and ${
        filter.group_id === undefined
          ? db`true`
          : db`exists (select 1 from group_members m where m.group_id = ${filter.group_id} and m.device_id = d.id)`
      }
      and ${filter.stale === undefined ? db`true` : filter.stale ? db`st.status = 'stale'` : db`st.status <> 'stale'`}
      and ${filter.status === undefined ? db`true` : db`st.status = ${filter.status}`}
      and ${
        filter.convergence === undefined
          ? db`true`
          : filter.merkmal === undefined
            ? db`d.id in (select f.device_id from device_fleet f
                          where f.organization_id = ${organizationId} and f.convergence = ${filter.convergence})`
            : db`st.status in ('active', 'stale') and exists (
                select 1 from device_catalog_outcomes(d.id, dt.backend, dt.workspace, d.agent_secret_issued_at) c
                where c.merkmal = ${filter.merkmal} and c.convergence = ${filter.convergence})`
      }
      and ${filter.cve === undefined ? db`true` : affectedBy(db, db`d.id`, filter.cve, filter.cve_status)}
      and ${
        filter.disk_encryption === undefined
          ? db`true`
          : inDiskEncryptionState(db, organizationId, db`d.id`, filter.disk_encryption)
      }
      and ${filter.q === undefined ? db`true` : startsWith(db, filter.q)}
      and ${inventoryMatching(db, organizationId, filter)}`;
}

/**
 * The inventory's filters, over the organization's inventory rows (by their last
 * inventory; a device without one matches none): a package by the sets that hold it
 * (`package_set_packages_name`), pending security updates and reboots by partial indexes.
 */
function inventoryMatching(db: Db, organizationId: string, filter: DeviceFilter) {
  if (filter.package === undefined && filter.security_updates === undefined && filter.reboot_required === undefined) {
    return db`true`;
  }
  return db`d.id in (
    select di.device_id from device_inventories di
    where di.organization_id = ${organizationId}
      and ${
        filter.package === undefined
          ? db`true`
          : db`di.package_set_id in (select p.set_id from package_set_packages p where p.name = ${filter.package})`
      }
      and ${filter.security_updates ? db`di.security_pending_count > 0` : db`true`}
      and ${filter.reboot_required ? db`di.reboot_required` : db`true`})`;
}

/**
 * The joins `matching` needs over `devices d`, only those its filter reads: a count
 * without a status or convergence filter reads the devices' own rows alone.
 */
function matchingJoins(db: Db, filter: DeviceFilter, context: ListContext) {
  const status = filter.stale !== undefined || filter.status !== undefined || filter.convergence !== undefined;
  return db`
    left join device_heartbeats h on h.device_id = d.id
    ${filter.convergence === undefined ? db`` : effectiveTemplateOf(db)}
    ${status ? statusOf(db, context.pollIntervalSeconds) : db``}`;
}

/**
 * Whether the filter reads nothing but what the fleet rows hold without the clock
 * (`device_fleet`: one row per device that is not archived, kept by triggers in the
 * transaction of every write that changes it): then its devices are counted from the fleet
 * rows' indexes (`device_fleet_scope`, `device_fleet_convergence`) instead of the devices'
 * rows. `q` and `merkmal` read the device; active and stale need every heartbeat, and the
 * planner then scans the fleet rows' heap, wider than the devices'.
 */
function fleetCountable(filter: DeviceFilter): boolean {
  return (
    filter.q === undefined &&
    filter.merkmal === undefined &&
    filter.cve === undefined &&
    filter.package === undefined &&
    filter.security_updates === undefined &&
    filter.reboot_required === undefined &&
    filter.disk_encryption === undefined &&
    filter.stale === undefined &&
    filter.status !== 'active' &&
    filter.status !== 'stale'
  );
}

/**
 * Whether the filter is active or stale over the whole organization and nothing else: then
 * its devices are counted from their heartbeat rows `device_heartbeats h` alone, which carry
 * the organization and, while the agent reports, the time its secret was issued (what
 * `device_status` reads besides the check-in), instead of joining every device with its heartbeat.
 */
function heartbeatCountable(filter: DeviceFilter): boolean {
  const { status, stale, ...rest } = filter;
  return (
    Object.values(rest).every((v) => v === undefined) &&
    stale !== false &&
    (status === 'active' || status === 'stale' || (status === undefined && stale === true))
  );
}

/** Whether the filter is a search (`q`) and nothing else: its total is counted by `searchCount`. */
function searchOnly(filter: DeviceFilter): boolean {
  const { q, ...rest } = filter;
  return q !== undefined && Object.values(rest).every((v) => v === undefined);
}

/**
 * The texts that start with `lower`, as a range of the prefix indexes (which compare
 * bytewise; UTF-8 keeps the characters' order): from the prefix to the prefix with its last
 * character's successor, open. Null after U+10FFFF, which has none.
 */
function prefixRange(lower: string): { from: string; to: string } | null {
  const chars = [...lower];
  const last = chars.pop()!.codePointAt(0)!;
  if (last >= 0x10ffff) return null;
  // The successor skips the surrogates, which no text holds.
  const next = last + 1 === 0xd800 ? 0xe000 : last + 1;
  return { from: lower, to: chars.join('') + String.fromCodePoint(next) };
}

/** A prefix's range over a column that holds lowercase text (`prefixRange`). */
function inRange(db: Db, column: postgres.PendingQuery<postgres.Row[]>, range: { from: string; to: string }) {
  return db`(${column} ~>=~ ${range.from} and ${column} ~<~ ${range.to})`;
}

/**
 * The search: the device's serial or hostname starts with `q`, ignoring case. As the prefix
 * indexes' ranges where there is one (a prepared statement's generic plan cannot see a
 * LIKE pattern, and each execution was planned anew), else as a LIKE pattern.
 */
function startsWith(db: Db, q: string) {
  const range = prefixRange(q.toLowerCase());
  return range === null
    ? db`(lower(d.serial) like ${prefixPattern(q)} escape '\\' or lower(d.hostname) like ${prefixPattern(q)} escape '\\')`
    : db`(${inRange(db, db`lower(d.serial)`, range)} or ${inRange(db, db`lower(d.hostname)`, range)})`;
}

/**
 * The live devices whose serial or hostname starts with `q` (as `matching` has it), from the
 * prefix indexes: those whose serial matches (an index-only count), plus those whose
 * hostname matches and serial does not.
 */
function searchCount(db: Db, organizationId: string, range: { from: string; to: string }) {
  return db`
    select (select count(*) from devices d
            where d.organization_id = ${organizationId} and d.archived_at is null
              and ${inRange(db, db`lower(d.serial)`, range)})::int
         + (select count(*) from devices d
            where d.organization_id = ${organizationId} and d.archived_at is null
              and ${inRange(db, db`lower(d.hostname)`, range)} and not ${inRange(db, db`lower(d.serial)`, range)})::int
           as n`;
}

/** The filter (`heartbeatCountable`) over the heartbeat rows `device_heartbeats h`: the same devices as `matching`. */
function heartbeatMatching(db: Db, organizationId: string, filter: DeviceFilter, context: ListContext) {
  const status = db`device_status(null, null, h.issued_at, h.at, make_interval(secs => ${3 * context.pollIntervalSeconds}::int))`;
  return db`
    h.organization_id = ${organizationId} and h.issued_at is not null
      and ${filter.status === undefined ? db`true` : db`${status} = ${filter.status}`}
      and ${filter.stale ? db`${status} = 'stale'` : db`true`}`;
}

/** The filter (`fleetCountable`) over the fleet rows `device_fleet f`: the same devices as `matching`. */
function fleetMatching(db: Db, organizationId: string, filter: DeviceFilter, resolved: Resolved) {
  return db`
    f.organization_id = ${organizationId}
      and ${inUnits(db, db`f.oe_id`, resolved)}
      and ${
        filter.group_id === undefined
          ? db`true`
          : db`exists (select 1 from group_members m where m.group_id = ${filter.group_id} and m.device_id = f.device_id)`
      }
      and ${filter.status === undefined ? db`true` : db`f.bucket = ${filter.status}`}
      and ${filter.convergence === undefined ? db`true` : db`f.convergence = ${filter.convergence}`}`;
}

/**
 * The organization's devices in the order of `sort`: archived ones omitted, deprovisioned
 * ones included. A filter naming an unknown unit or group is 404, one of another
 * organization 422; an unknown Merkmal 422 `unknown_merkmal` (`requireFilter`). The status
 * filter uses the device's own column (`st.status`); the convergence filter the device's
 * fleet row (`device_fleet.convergence`, indexed), which the fleet trigger keeps equal to
 * what `deviceConvergence` shows, so a filtered device shows what it was filtered by.
 *
 * Up to `limit + 1` rows (one more tells that there are more): after the cursor in the
 * order, or, for a cursor `before`, the rows before it nearest first (the order reversed:
 * the caller reverses the page back).
 */
async function listOrganizationDevices(
  db: Db,
  organizationId: string,
  filter: DeviceFilter,
  sort: DeviceSort,
  cursor: DeviceCursor | null,
  limit: number,
  context: ListContext,
): Promise<ListedDevice[]> {
  const resolved = await requireFilter(db, organizationId, filter);
  const { key, text, order: shown, time } = sortKey(db, sort);
  // Walking back is walking the reversed order on from the cursor (each order is the other reversed).
  const order = cursor?.before ? (shown === 'asc' ? 'desc' : 'asc') : shown;
  // The time goes as text: the client's own timestamp serializer would cut it to the
  // millisecond. Read once (a subquery): the text's cast is not constant in a prepared
  // statement's plan, and a scan would parse it again for every row it compares.
  const after =
    cursor === null
      ? null
      : {
          key:
            cursor.key === null ? null : time ? db`(select ${cursor.key}::text::timestamptz)` : db`${cursor.key}::text`,
          id: cursor.id,
        };
  const nullable = sort.endsWith('last_checkin');
  const select = (ids: postgres.PendingQuery<postgres.Row[]>) => db<ListedDevice[]>`
    with page as materialized (${ids})
    ${deviceSelect(db, context.pollIntervalSeconds, db`, ${text} as sort_key`)}
    where d.id in (select id from page)
    order by ${keyOrder(db, key, db`d.id`, order, nullable)}`;
  if (sort === '-last_checkin' && order === 'desc' && latestFirst(filter) && cursor?.key !== null) {
    // The latest check-ins first: the page is among the latest heartbeats of all (see `latestCandidates`).
    for (const candidates of LATEST_CANDIDATES.map((n) => n * (limit + 1))) {
      const rows = await select(db`
        select d.id from (
          select h.device_id, h.at from device_heartbeats h
          where h.organization_id = ${organizationId} and h.at is not null
            and ${afterKey(db, db`h.at`, db`h.device_id`, after, 'desc', false)}
          order by h.at desc, h.device_id desc
          limit ${candidates}
        ) c
        join devices d on d.id = c.device_id ${matchingJoins(db, filter, context)}
        where ${matching(db, organizationId, filter, resolved)}
        order by c.at desc, c.device_id desc
        limit ${limit + 1}`);
      if (rows.length > limit) return rows;
    }
  }
  // The page's ids first, over the columns the filter and the order read; a device's other
  // columns (its convergence over the catalog, its groups) only for the page's rows. One
  // query over the whole device would compute them for every device the order must sort
  // (an order by last check-in reads the whole organization: no index on the heartbeat).
  return select(db`
      select d.id from devices d ${matchingJoins(db, filter, context)}
      where ${matching(db, organizationId, filter, resolved)}
        and ${afterKey(db, key, db`d.id`, after, order, nullable)}
      order by ${keyOrder(db, key, db`d.id`, order, nullable)}
      limit ${limit + 1}`);
}

/**
 * How many of the organization's latest heartbeats (times the page's rows) a page of the
 * latest check-ins is looked for among, in turn, before the whole organization is sorted: a
 * page found among them is exact, since every device left out checked in before every
 * candidate. The later turns are for filters that match fewer of them.
 */
const LATEST_CANDIDATES = [16, 128];

/**
 * Whether a list by the latest check-in is likely found among the latest heartbeats: a
 * filter of the whole organization, of its active devices (the ones that check in), or of
 * a convergence (a share of those, each candidate checked by its fleet row's index). A
 * unit, a group or a search may match few of them, a Merkmal's convergence is worked out
 * per device; stale and enrolled devices are the ones that did not check in lately.
 */
function latestFirst(filter: DeviceFilter): boolean {
  return (
    filter.oe_id === undefined &&
    filter.group_id === undefined &&
    filter.q === undefined &&
    filter.merkmal === undefined &&
    filter.stale !== true &&
    (filter.status === undefined || filter.status === 'active')
  );
}

/** A page of the list in its order, and whether there are rows before and after it. */
export interface DevicePage {
  rows: ListedDevice[];
  hasPrevious: boolean;
  hasNext: boolean;
}

/**
 * The page of up to `limit` devices after the cursor, or before it for a cursor `before`,
 * in the order of `sort` either way. Walking back to the start with fewer than `limit`
 * rows left before the cursor (rows came or went since the cursor was made) answers the
 * first page, whole, so every page but the last is full and a walk back ends where a walk
 * forward starts.
 */
export async function pageOrganizationDevices(
  db: Db,
  organizationId: string,
  filter: DeviceFilter,
  sort: DeviceSort,
  cursor: DeviceCursor | null,
  limit: number,
  context: ListContext,
): Promise<DevicePage> {
  const rows = await listOrganizationDevices(db, organizationId, filter, sort, cursor, limit, context);
  if (!cursor?.before)
    return { rows: rows.slice(0, limit), hasPrevious: cursor !== null, hasNext: rows.length > limit };
  if (rows.length >= limit)
    return { rows: rows.slice(0, limit).reverse(), hasPrevious: rows.length > limit, hasNext: true };
  const first = await listOrganizationDevices(db, organizationId, filter, sort, null, limit, context);
  return { rows: first.slice(0, limit), hasPrevious: false, hasNext: first.length > limit };
}

/** How many devices the filter matches (the list's total), in one statement; the filter is checked as the list checks it. */
export async function countOrganizationDevices(
  db: Db,
  organizationId: string,
  filter: DeviceFilter,
  context: ListContext,
): Promise<number> {
  const resolved = await requireFilter(db, organizationId, filter);
  // From the fleet rows where the filter allows: an index-only count, not a scan of the
  // devices' rows; active or stale alone from the heartbeats' rows, a search alone from its indexes.
  const search = searchOnly(filter) ? prefixRange(filter.q!.toLowerCase()) : null;
  const [row] = await db<{ n: number }[]>`${
    fleetCountable(filter)
      ? db`select count(*)::int as n from device_fleet f where ${fleetMatching(db, organizationId, filter, resolved)}`
      : heartbeatCountable(filter)
        ? db`select count(*)::int as n from device_heartbeats h
             where ${heartbeatMatching(db, organizationId, filter, context)}`
        : search !== null
          ? searchCount(db, organizationId, search)
          : db`
        select count(*)::int as n from devices d ${matchingJoins(db, filter, context)}
        where ${matching(db, organizationId, filter, resolved)}`
  }`;
  return row!.n;
}

/**
 * The ids and serials of every device the filter matches, by serial (what a bulk action
 * over a filter changes); the filter is checked as the list checks it.
 */
export async function listMatchingDeviceIds(
  db: Db,
  organizationId: string,
  filter: DeviceFilter,
  context: ListContext,
): Promise<{ id: string; serial: string }[]> {
  const resolved = await requireFilter(db, organizationId, filter);
  return db<{ id: string; serial: string }[]>`
    select d.id, d.serial from devices d ${matchingJoins(db, filter, context)}
    where ${matching(db, organizationId, filter, resolved)}
    order by d.serial, d.id`;
}

/**
 * The same devices as `listMatchingDeviceIds`, as the ids in serial order of a statement the
 * caller embeds (`array(...)`), so a list of many thousands never leaves the database; the
 * filter is checked first. Wrapped in an object: a bare query would run when awaited.
 */
export async function matchingDeviceIdsQuery(
  db: Db,
  organizationId: string,
  filter: DeviceFilter,
  context: ListContext,
): Promise<{ ids: postgres.PendingQuery<postgres.Row[]> }> {
  const resolved = await requireFilter(db, organizationId, filter);
  return {
    ids: db`
      select d.id from devices d ${matchingJoins(db, filter, context)}
      where ${matching(db, organizationId, filter, resolved)}
      order by d.serial, d.id`,
  };
}

/**
 * Files the device under an org unit of its organization, with an event for each Merkmal
 * whose effective state or `optionen` the move changes (`record`, the catalog's). Archived
 * devices cannot move.
 */
export async function moveDevice(
  sql: Db,
  deviceId: string,
  oeId: string,
  actor: Actor,
  record: RecordEffectiveState,
  pollIntervalSeconds: number,
): Promise<DeviceRow> {
  return transaction(sql, async (db) => {
    // The row before the organization's lock (inside `record`), in the order a selection or
    // a membership change takes them: a move waiting for the lock while holding the row
    // would deadlock with them.
    await db`select 1 from devices where id = ${deviceId} for no key update`;
    const device = await getDevice(db, deviceId, pollIntervalSeconds);
    if (!device) throw notFound('device', deviceId);
    if (device.archived_at !== null) throw deviceArchived(deviceId, MOVE_REFUSAL);
    await requireOrgUnitOf(db, oeId, device.organization_id, 'oe_id');
    const change = {
      organizationId: device.organization_id,
      reach: { device: deviceId },
      cause: 'move',
      sourceId: oeId,
      actor,
    } as const;
    try {
      await record(db, change, async () => {
        const rows = await db`
          update devices set oe_id = ${oeId}
          where id = ${deviceId} and archived_at is null
          returning id`;
        // The row is locked above, so this condition only guards.
        if (rows.length === 0) throw deviceArchived(deviceId, MOVE_REFUSAL);
      });
    } catch (err) {
      // The unit was deleted meanwhile.
      if (isPgError(err, pgError.foreignKeyViolation)) throw notFound('org unit', oeId);
      throw err;
    }
    return (await getDevice(db, deviceId, pollIntervalSeconds))!;
  });
}

const MOVE_REFUSAL = 'it cannot be moved';

/** The serials of the organization's devices among `ids` (archived ones too), by id. */
export async function deviceSerials(
  db: Db,
  organizationId: string,
  ids: readonly string[],
): Promise<Map<string, string>> {
  const rows = await db<{ id: string; serial: string }[]>`
    select id, serial from devices where organization_id = ${organizationId} and id = any(${ids as string[]}::uuid[])`;
  return new Map(rows.map((r) => [r.id, r.serial]));
}

/**
 * Locks the devices' rows, in id order, for the rest of the transaction: a bulk change
 * takes its chunk's rows before any of its changes takes the organization's lock, as a
 * single change takes its one device's row first, so neither waits for the other in a cycle.
 */
export async function lockDevices(db: Db, ids: readonly string[]): Promise<void> {
  await db`select 1 from devices where id = any(${ids as string[]}::uuid[]) order by id for no key update`;
}
