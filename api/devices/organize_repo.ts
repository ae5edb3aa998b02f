/** SQL of the admin's device views (list, filters) and of moving a device to an org unit. */
import { afterCursor } from '../db/keyset.ts';
import type { Db } from '../db/client.ts';
import { isPgError, pgError } from '../db/client.ts';
import { organizationOf } from '../access/owners.ts';
import { ApiError, notFound } from '../http/errors.ts';
import type { Cursor } from '../http/pagination.ts';
import { requireOrgUnitOf } from '../org_units/repo.ts';
import { requireOrganization } from '../organizations/repo.ts';
import { deviceArchived, deviceSelect, getDevice, staleDevice, type DeviceRow } from './repo.ts';

export interface DeviceFilter {
  /** Only devices filed directly in this org unit (not its descendants). */
  oe_id?: string | undefined;
  /** Only members of this group. */
  group_id?: string | undefined;
  /** Only stale devices (true) or only the others (false); see `staleDevice`. */
  stale?: boolean | undefined;
  /** Serial or hostname starts with this, ignoring case. */
  q?: string | undefined;
}

/** The agent's poll interval, which decides when a device is stale. */
export interface ListContext {
  pollIntervalSeconds: number;
}

/** `q` as a LIKE prefix pattern (escape character: backslash): its own `%`, `_` and backslashes match literally. */
function prefixPattern(q: string): string {
  return `${q.toLowerCase().replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`;
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
 * The organization's devices in creation order: archived ones omitted, deprovisioned ones
 * included. A filter naming an unknown unit or group is 404, one of another organization 422.
 */
export async function listOrganizationDevices(
  db: Db,
  organizationId: string,
  filter: DeviceFilter,
  cursor: Cursor | null,
  limit: number,
  context: ListContext,
): Promise<DeviceRow[]> {
  await requireOrganization(db, organizationId);
  if (filter.oe_id !== undefined) await requireOrgUnitOf(db, filter.oe_id, organizationId, 'oe_id');
  if (filter.group_id !== undefined) await requireGroupOf(db, filter.group_id, organizationId);
  return db<DeviceRow[]>`
    ${deviceSelect(db, context.pollIntervalSeconds)}
    where d.organization_id = ${organizationId}
      and d.archived_at is null
      and ${filter.oe_id === undefined ? db`true` : db`d.oe_id = ${filter.oe_id}`}
      and ${
        filter.group_id === undefined
          ? db`true`
          : db`exists (select 1 from group_members m where m.group_id = ${filter.group_id} and m.device_id = d.id)`
      }
      and ${
        filter.stale === undefined
          ? db`true`
          : filter.stale
            ? staleDevice(db, context.pollIntervalSeconds)
            : db`not ${staleDevice(db, context.pollIntervalSeconds)}`
      }
      and ${
        filter.q === undefined
          ? db`true`
          : db`(lower(d.serial) like ${prefixPattern(filter.q)} escape '\\'
                or lower(d.hostname) like ${prefixPattern(filter.q)} escape '\\')`
      }
      and ${afterCursor(db, cursor, 'asc', 'd')}
    order by d.created_at, d.id
    limit ${limit + 1}`;
}

/** Files the device under an org unit of its organization. Archived devices cannot move. */
export async function moveDevice(
  db: Db,
  deviceId: string,
  oeId: string,
  pollIntervalSeconds: number,
): Promise<DeviceRow> {
  const device = await getDevice(db, deviceId, pollIntervalSeconds);
  if (!device) throw notFound('device', deviceId);
  if (device.archived_at !== null) throw deviceArchived(deviceId, MOVE_REFUSAL);
  await requireOrgUnitOf(db, oeId, device.organization_id, 'oe_id');
  try {
    const rows = await db`
      update devices set oe_id = ${oeId}
      where id = ${deviceId} and archived_at is null
      returning id`;
    // Archived meanwhile: the statement's own condition settles the race.
    if (rows.length === 0) throw deviceArchived(deviceId, MOVE_REFUSAL);
  } catch (err) {
    // The unit was deleted meanwhile.
    if (isPgError(err, pgError.foreignKeyViolation)) throw notFound('org unit', oeId);
    throw err;
  }
  return (await getDevice(db, deviceId, pollIntervalSeconds))!;
}

const MOVE_REFUSAL = 'it cannot be moved';
