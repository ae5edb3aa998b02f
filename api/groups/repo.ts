/** SQL of groups (flat, per organization) and their many-to-many device memberships. */
import type { Actor } from '../access/declaration.ts';
import type { EffectiveStateChange, RecordEffectiveState } from '../access/effective_state.ts';
import { afterCursor } from '../db/keyset.ts';
import type { Db } from '../db/client.ts';
import { isPgError, pgError, transaction } from '../db/client.ts';
import { deviceArchived, deviceSelect, type DeviceRow } from '../devices/repo.ts';
import { ApiError, notFound } from '../http/errors.ts';
import { iso } from '../http/openapi.ts';
import type { Cursor } from '../http/pagination.ts';
import { requireOrganization } from '../organizations/repo.ts';
import type { GroupCreateInput, GroupPatchInput, GroupType } from './schemas.ts';

export interface GroupRow {
  id: string;
  organization_id: string;
  name: string;
  created_at: Date;
}

export function serializeGroup(row: GroupRow): GroupType {
  return { ...row, created_at: iso(row.created_at) };
}

async function getGroup(db: Db, id: string): Promise<GroupRow | null> {
  const [row] = await db<GroupRow[]>`select id, organization_id, name, created_at from groups where id = ${id}`;
  return row ?? null;
}

export async function requireGroup(db: Db, id: string): Promise<GroupRow> {
  const row = await getGroup(db, id);
  if (!row) throw notFound('group', id);
  return row;
}

export async function createGroup(db: Db, organizationId: string, input: GroupCreateInput): Promise<GroupRow> {
  await requireOrganization(db, organizationId);
  try {
    const [row] = await db<GroupRow[]>`
      insert into groups (organization_id, name) values (${organizationId}, ${input.name})
      returning id, organization_id, name, created_at`;
    return row!;
  } catch (err) {
    if (isPgError(err, pgError.foreignKeyViolation)) throw notFound('organization', organizationId);
    throw nameTakenOr(err, input.name);
  }
}

/**
 * A group's name is unique within its organization, case-insensitively ("GIS" and "gis"
 * look like one entry in a list); the unique index `groups_name_key` holds it, so two
 * concurrent creates of one name cannot both succeed.
 */
function nameTakenOr(err: unknown, name: string): unknown {
  if (isPgError(err, pgError.uniqueViolation) && err.constraint_name === 'groups_name_key') {
    return new ApiError('name_taken', `the organization already has a group named "${name}" (names ignore case)`);
  }
  return err;
}

export async function listGroups(
  db: Db,
  organizationId: string,
  cursor: Cursor | null,
  limit: number,
): Promise<GroupRow[]> {
  return db<GroupRow[]>`
    select id, organization_id, name, created_at
    from groups
    where organization_id = ${organizationId} and ${afterCursor(db, cursor)}
    order by created_at, id
    limit ${limit + 1}`;
}

/** The number of members per group of the organization; a group without any is absent. */
export async function countMembersByGroup(db: Db, organizationId: string): Promise<Map<string, number>> {
  const rows = await db<{ id: string; n: number }[]>`
    select gm.group_id as id, count(*)::int as n from group_members gm
    where gm.organization_id = ${organizationId} group by gm.group_id`;
  return new Map(rows.map((r) => [r.id, r.n]));
}

export async function updateGroup(db: Db, id: string, patch: GroupPatchInput): Promise<GroupRow> {
  if (patch.name === undefined) return requireGroup(db, id);
  let row: GroupRow | undefined;
  try {
    [row] = await db<GroupRow[]>`
      update groups set name = ${patch.name} where id = ${id}
      returning id, organization_id, name, created_at`;
  } catch (err) {
    throw nameTakenOr(err, patch.name);
  }
  if (!row) throw notFound('group', id);
  return row;
}

/**
 * Deletes the group; its memberships and overrides go with it (on delete cascade), with an
 * event for each member and Merkmal whose effective state or `optionen` that changes
 * (`record`, the catalog's). Returns its organization.
 */
export async function deleteGroup(sql: Db, id: string, actor: Actor, record: RecordEffectiveState): Promise<string> {
  return transaction(sql, async (db) => {
    const group = await requireGroup(db, id);
    // The members' rows before the organization's lock (inside `record`), in the order
    // selections and membership changes take them: the cascade rewrites each member's row
    // (its groups), and holding the lock while waiting for a row would deadlock with them.
    await db`
      select 1 from devices
      where id in (select m.device_id from group_members m where m.group_id = ${id})
      order by id for no key update`;
    const change = {
      organizationId: group.organization_id,
      reach: { group: id },
      cause: 'delete',
      sourceId: id,
      actor,
    } as const;
    return record(db, change, async () => {
      const [row] = await db<
        { organization_id: string }[]
      >`delete from groups where id = ${id} returning organization_id`;
      if (!row) throw notFound('group', id);
      return row.organization_id;
    });
  });
}

interface MemberCheck {
  group: GroupRow;
  device: { id: string; organization_id: string; archived: boolean };
}

/**
 * The group and the device of a membership call, both existing and of one organization,
 * the device's row locked for the rest of the transaction: an archive racing the change
 * waits for it or is seen here. Locked for update, not share, and before the organization's
 * lock (inside `record`): the membership's trigger rewrites the row, so two changes of one
 * device that both held it shared would each wait for the other.
 */
async function requireMembershipPair(db: Db, groupId: string, deviceId: string): Promise<MemberCheck> {
  const group = await requireGroup(db, groupId);
  const [device] = await db<MemberCheck['device'][]>`
    select id, organization_id, archived_at is not null as archived from devices where id = ${deviceId} for no key update`;
  if (!device) throw notFound('device', deviceId);
  if (device.organization_id !== group.organization_id) {
    throw new ApiError(
      'organization_mismatch',
      `device ${deviceId} and group ${groupId} belong to different organizations`,
    );
  }
  if (device.archived) throw deviceArchived(deviceId, 'it cannot join or leave a group');
  return { group, device };
}

/**
 * Adds the device to the group; a second call changes nothing. An archived device's
 * memberships change no more (409 `device_archived`). Returns the organization.
 */
export async function addMember(
  sql: Db,
  groupId: string,
  deviceId: string,
  actor: Actor,
  record: RecordEffectiveState,
): Promise<string> {
  try {
    return await transaction(sql, async (db) => {
      const { group } = await requireMembershipPair(db, groupId, deviceId);
      await record(db, membership(group, deviceId, actor), async () => {
        await db`
          insert into group_members (group_id, device_id, organization_id)
          values (${groupId}, ${deviceId}, ${group.organization_id})
          on conflict (group_id, device_id) do nothing`;
      });
      return group.organization_id;
    });
  } catch (err) {
    // The group was deleted meanwhile.
    if (isPgError(err, pgError.foreignKeyViolation)) throw notFound('group or device', `${groupId}/${deviceId}`);
    throw err;
  }
}

/**
 * Removes the device from the group; removing a non-member is fine (idempotent). An
 * archived device's memberships change no more (409 `device_archived`). Returns the organization.
 */
export async function removeMember(
  sql: Db,
  groupId: string,
  deviceId: string,
  actor: Actor,
  record: RecordEffectiveState,
): Promise<string> {
  return transaction(sql, async (db) => {
    const { group } = await requireMembershipPair(db, groupId, deviceId);
    await record(db, membership(group, deviceId, actor), async () => {
      await db`delete from group_members where group_id = ${groupId} and device_id = ${deviceId}`;
    });
    return group.organization_id;
  });
}

/** A membership change of one device, recorded by the catalog's events. */
function membership(group: GroupRow, deviceId: string, actor: Actor): EffectiveStateChange {
  return {
    organizationId: group.organization_id,
    reach: { device: deviceId },
    cause: 'membership',
    sourceId: group.id,
    actor,
  };
}

/** The group's devices (archived ones omitted), in device creation order. */
export async function listGroupDevices(
  db: Db,
  groupId: string,
  cursor: Cursor | null,
  limit: number,
  pollIntervalSeconds: number,
): Promise<DeviceRow[]> {
  return db<DeviceRow[]>`
    ${deviceSelect(db, pollIntervalSeconds)}
    join group_members m on m.device_id = d.id and m.group_id = ${groupId}
    where d.archived_at is null and ${afterCursor(db, cursor, 'asc', 'd')}
    order by d.created_at, d.id
    limit ${limit + 1}`;
}
