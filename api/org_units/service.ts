/**
 * Creating, changing and deleting an org unit, shared by the API routes and
 * the portal: each returns the row and the audit entry of the change.
 */
import { actorOf, type AuditEntry, type Caller } from '../access/declaration.ts';
import type { RecordEffectiveState } from '../access/effective_state.ts';
import type { Db } from '../db/client.ts';
import * as repo from './repo.ts';
import type { OrgUnitCreateInput, OrgUnitPatchInput } from './schemas.ts';

type Change = Promise<{ row: repo.OrgUnitRow; audit: AuditEntry }>;

const entry = (row: repo.OrgUnitRow, details: Record<string, unknown>): AuditEntry => ({
  organizationId: row.organization_id,
  targetType: 'org_unit',
  targetId: row.id,
  details,
});

export async function createUnit(db: Db, organizationId: string, input: OrgUnitCreateInput): Change {
  const row = await repo.createOrgUnit(db, organizationId, input);
  return {
    row,
    audit: entry(row, {
      name: row.name,
      parent_id: row.parent_id,
      ...(row.archive_stale_after_days === null ? {} : { archive_stale_after_days: row.archive_stale_after_days }),
    }),
  };
}

/** `record`: the catalog's recorder of effective-state changes (org units stand below the catalog). */
export async function updateUnit(
  db: Db,
  id: string,
  patch: OrgUnitPatchInput,
  caller: Caller,
  record: RecordEffectiveState,
): Change {
  const row = await repo.updateOrgUnit(db, id, patch, actorOf(caller), record);
  return { row, audit: entry(row, patch) };
}

export async function deleteUnit(db: Db, id: string, caller: Caller, record: RecordEffectiveState): Change {
  const row = await repo.deleteOrgUnit(db, id, actorOf(caller), record);
  return { row, audit: entry(row, { name: row.name }) };
}
