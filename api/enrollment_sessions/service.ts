/**
 * The rules of creating and revoking an enrollment session, shared by the API routes and
 * the portal: each returns the session and the audit entry of the change.
 */
import type { AuditEntry } from '../access/declaration.ts';
import type { Db } from '../db/client.ts';
import { notFound } from '../http/errors.ts';
import { iso } from '../http/openapi.ts';
import { requireOrganization } from '../organizations/repo.ts';
import { getTemplate } from '../templates/repo.ts';
import * as repo from './repo.ts';
import type { EnrollmentSessionCreateInput } from './schemas.ts';

export async function createSession(
  db: Db,
  organizationId: string,
  input: EnrollmentSessionCreateInput,
): Promise<{ row: repo.EnrollmentSessionRow; audit: AuditEntry }> {
  await requireOrganization(db, organizationId);
  if (!(await getTemplate(db, input.template_id))) throw notFound('template', input.template_id);
  const row = await repo.createEnrollmentSession(db, organizationId, input);
  return {
    row,
    audit: {
      organizationId,
      targetType: 'enrollment_session',
      targetId: row.id,
      details: { template_id: row.template_id, expires_at: iso(row.expires_at), max_devices: row.max_devices },
    },
  };
}

export async function revokeSession(
  db: Db,
  id: string,
): Promise<{ row: repo.EnrollmentSessionRow; audit: AuditEntry }> {
  const row = await repo.revokeEnrollmentSession(db, id);
  if (!row) throw notFound('enrollment session', id);
  return { row, audit: { organizationId: row.organization_id, targetType: 'enrollment_session', targetId: id } };
}
