/** SQL of the admin's device views (list, filters) and of moving a device to an org unit. */
import { afterCursor } from '../db/keyset.ts';
import type { Db } from '../db/client.ts';
import { isPgError, pgError, transaction } from '../db/client.ts';
import type { Actor } from '../access/declaration.ts';
import type { RecordEffectiveState } from '../access/effective_state.ts';
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
  if (filter.group_id !== undefined) {
    // Whose group it is, from the access layer: a device knows no group of its own.
    const owner = await organizationOf(db, 'group', filter.group_id);
    if (owner === null) throw notFound('group', filter.group_id);
    if (owner !== organizationId) {
      throw new ApiError(
        'organization_mismatch',
        `group ${filter.group_id} (group_id) belongs to another organization`,
      );
    }
  }
  return db<DeviceRow[]>`
    ${deviceSelect(db)}
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
): Promise<DeviceRow> {
  return transaction(sql, async (db) => {
    // The row before the organization's lock (inside `record`), in the order a selection or
    // a membership change takes them: a move waiting for the lock while holding the row
    // would deadlock with them.
    await db`select 1 from devices where id = ${deviceId} for no key update`;
    const device = await getDevice(db, deviceId);
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
    return (await getDevice(db, deviceId))!;
  });
}

const MOVE_REFUSAL = 'it cannot be moved';
