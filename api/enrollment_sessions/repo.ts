/** SQL of enrollment sessions. The quota itself is claimed at activation (activation/repo.ts). */
import { afterCursor } from '../db/keyset.ts';
import type { Db } from '../db/client.ts';
import type { Cursor } from '../http/pagination.ts';
import type { EnrollmentSessionCreateInput } from './schemas.ts';

export interface EnrollmentSessionRow {
  id: string;
  organization_id: string;
  template_id: string;
  expires_at: Date;
  max_devices: number;
  devices_used: number;
  revoked_at: Date | null;
  created_at: Date;
}

export async function createEnrollmentSession(
  db: Db,
  organizationId: string,
  input: EnrollmentSessionCreateInput,
): Promise<EnrollmentSessionRow> {
  const [row] = await db<EnrollmentSessionRow[]>`
    insert into enrollment_sessions (organization_id, template_id, expires_at, max_devices)
    values (${organizationId}, ${input.template_id}, ${input.expires_at}, ${input.max_devices})
    returning id, organization_id, template_id, expires_at, max_devices, devices_used, revoked_at, created_at`;
  return row!;
}

export async function listEnrollmentSessions(
  db: Db,
  organizationId: string,
  cursor: Cursor | null,
  limit: number,
): Promise<EnrollmentSessionRow[]> {
  return db<EnrollmentSessionRow[]>`
    select id, organization_id, template_id, expires_at, max_devices, devices_used, revoked_at, created_at
    from enrollment_sessions
    where organization_id = ${organizationId} and ${afterCursor(db, cursor)}
    order by created_at, id
    limit ${limit + 1}`;
}

export async function getEnrollmentSession(db: Db, id: string): Promise<EnrollmentSessionRow | null> {
  const [row] = await db<EnrollmentSessionRow[]>`
    select id, organization_id, template_id, expires_at, max_devices, devices_used, revoked_at, created_at
    from enrollment_sessions where id = ${id}`;
  return row ?? null;
}

/** Idempotent: a second revoke keeps the first `revoked_at`. */
export async function revokeEnrollmentSession(db: Db, id: string): Promise<EnrollmentSessionRow | null> {
  const [row] = await db<EnrollmentSessionRow[]>`
    update enrollment_sessions set revoked_at = coalesce(revoked_at, now_ms())
    where id = ${id}
    returning id, organization_id, template_id, expires_at, max_devices, devices_used, revoked_at, created_at`;
  return row ?? null;
}
