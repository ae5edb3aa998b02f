/**
 * Creating and revoking an organization key, shared by the API routes and
 * the portal: each returns the row and the audit entry of the change (never the key).
 */
import type { AuditEntry } from '../access/declaration.ts';
import type { Db } from '../db/client.ts';
import { notFound } from '../http/errors.ts';
import { iso } from '../http/openapi.ts';
import { requireOrganization } from '../organizations/repo.ts';
import * as repo from './repo.ts';

export async function createKey(
  db: Db,
  organizationId: string,
  input: { name: string; role: repo.ApiKeyRole; expires_at?: string | undefined },
): Promise<{ row: repo.ApiKeyRow; key: string; audit: AuditEntry }> {
  await requireOrganization(db, organizationId);
  const { row, key } = await repo.createApiKey(db, {
    organizationId,
    name: input.name,
    role: input.role,
    expiresAt: input.expires_at === undefined ? null : new Date(input.expires_at),
  });
  const details = { name: row.name, role: row.role, prefix: row.prefix, expires_at: iso(row.expires_at) };
  return { row, key, audit: { organizationId, targetType: 'api_key', targetId: row.id, details } };
}

export async function revokeKey(db: Db, id: string): Promise<{ row: repo.ApiKeyRow; audit: AuditEntry }> {
  const row = await repo.revokeApiKey(db, id);
  if (!row) throw notFound('API key', id);
  return {
    row,
    audit: { organizationId: row.organization_id, targetType: 'api_key', targetId: id, details: { name: row.name } },
  };
}
