/**
 * Creating, changing and deleting an org unit, shared by the API routes and
 * the portal: each returns the row and the audit entry of the change.
 */
import type { AuditEntry } from '../access/declaration.ts';
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

export async function updateUnit(db: Db, id: string, patch: OrgUnitPatchInput): Change {
  const row = await repo.updateOrgUnit(db, id, patch);
  return { row, audit: entry(row, patch) };
}

export async function deleteUnit(db: Db, id: string): Change {
  const row = await repo.deleteOrgUnit(db, id);
  return { row, audit: entry(row, { name: row.name }) };
}
