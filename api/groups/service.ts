/**
 * Creating, renaming and deleting a group and changing its members, shared by
 * the API routes and the portal: each returns the audit entry of the change.
 */
import { actorOf, type AuditEntry, type Caller } from '../access/declaration.ts';
import type { RecordEffectiveState } from '../access/effective_state.ts';
import type { Db } from '../db/client.ts';
import * as repo from './repo.ts';
import type { GroupCreateInput, GroupPatchInput } from './schemas.ts';

export async function createGroup(db: Db, organizationId: string, input: GroupCreateInput) {
  const row = await repo.createGroup(db, organizationId, input);
  const audit: AuditEntry = { organizationId, targetType: 'group', targetId: row.id, details: { name: row.name } };
  return { row, audit };
}

export async function updateGroup(db: Db, id: string, patch: GroupPatchInput) {
  const row = await repo.updateGroup(db, id, patch);
  const audit: AuditEntry = { organizationId: row.organization_id, targetType: 'group', targetId: id, details: patch };
  return { row, audit };
}

/** `record`: the catalog's recorder of effective-state changes (groups stand below the catalog). */
export async function deleteGroup(
  db: Db,
  id: string,
  caller: Caller,
  record: RecordEffectiveState,
): Promise<{ audit: AuditEntry }> {
  const organizationId = await repo.deleteGroup(db, id, actorOf(caller), record);
  return { audit: { organizationId, targetType: 'group', targetId: id } };
}

/** Adds (`add`) or removes a member; both idempotent. */
export async function changeMember(
  db: Db,
  verb: 'add' | 'remove',
  groupId: string,
  deviceId: string,
  caller: Caller,
  record: RecordEffectiveState,
) {
  const change = verb === 'add' ? repo.addMember : repo.removeMember;
  const organizationId = await change(db, groupId, deviceId, actorOf(caller), record);
  const audit: AuditEntry = {
    organizationId,
    targetType: 'group',
    targetId: groupId,
    details: { device_id: deviceId },
  };
  return { audit };
}
