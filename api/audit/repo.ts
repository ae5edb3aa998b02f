/**
 * The audit log, read newest first with optional filters. The access layer writes it
 * (access/audit_events.ts), in the transaction of each successful write.
 */
import type { Actor, ResourceKind } from '../access/declaration.ts';
import type { Db } from '../db/client.ts';

/**
 * The kinds of resource an audit event names as its target (`target_type`), as the writes
 * record them; an activation code's read or rotation names its organization.
 */
export const auditTargetTypes = [
  'organization',
  'device',
  'org_unit',
  'group',
  'enrollment_session',
  'iso_build',
  'api_key',
  'webhook',
  'rollout',
  'disk_key',
] as const satisfies readonly ResourceKind[];

export type AuditTargetType = (typeof auditTargetTypes)[number];

export interface AuditEventRow {
  id: string;
  seq: number;
  organization_id: string;
  actor: Actor;
  action: string;
  target_type: string;
  target_id: string | null;
  request_id: string;
  details: Record<string, unknown>;
  created_at: Date;
}

/**
 * A page of the log, newest first (`beforeSeq`: older than that one). With `afterSeq`
 * instead, the page just newer than that one, oldest first: the way back to a previous page.
 */
export async function listAuditEvents(
  db: Db,
  input: {
    organizationId: string;
    action?: string;
    targetType?: string;
    targetId?: string;
    beforeSeq: number | null;
    afterSeq?: number | null;
    limit: number;
  },
): Promise<AuditEventRow[]> {
  const back = input.afterSeq !== undefined && input.afterSeq !== null;
  return db<AuditEventRow[]>`
    select id, seq, organization_id, actor, action, target_type, target_id, request_id, details, created_at
    from audit_events
    where organization_id = ${input.organizationId}
      and ${input.action === undefined ? db`true` : db`action = ${input.action}`}
      and ${input.targetType === undefined ? db`true` : db`target_type = ${input.targetType}`}
      and ${input.targetId === undefined ? db`true` : db`target_id = ${input.targetId}`}
      and ${input.beforeSeq === null ? db`true` : db`seq < ${input.beforeSeq}`}
      and ${back ? db`seq > ${input.afterSeq!}` : db`true`}
    order by ${back ? db`seq asc` : db`seq desc`}
    limit ${input.limit + 1}`;
}

/**
 * The targets of audit events that exist today, by id, with the name they go by (a
 * device's serial, a webhook's URL, a rollout's Merkmal, an org unit's, group's, key's or
 * organization's name); a target that is gone is missing. Only this organization's count.
 */
export async function auditTargetNames(
  db: Db,
  organizationId: string,
  ids: string[],
): Promise<Map<string, string | null>> {
  if (ids.length === 0) return new Map();
  // Enrollment sessions and ISO builds have no name (null): they exist, and are shown by id.
  const rows = await db<{ id: string; name: string | null }[]>`
    select id, serial as name from devices where organization_id = ${organizationId} and id = any(${ids}::uuid[])
    union all
    select id, name from org_units where organization_id = ${organizationId} and id = any(${ids}::uuid[])
    union all
    select id, name from groups where organization_id = ${organizationId} and id = any(${ids}::uuid[])
    union all
    select id, url from webhooks where organization_id = ${organizationId} and id = any(${ids}::uuid[])
    union all
    select id, name from api_keys where organization_id = ${organizationId} and id = any(${ids}::uuid[])
    union all
    select id, merkmal from rollouts where organization_id = ${organizationId} and id = any(${ids}::uuid[])
    union all
    select id, null from enrollment_sessions where organization_id = ${organizationId} and id = any(${ids}::uuid[])
    union all
    select id, null from iso_builds where organization_id = ${organizationId} and id = any(${ids}::uuid[])
    union all
    select id, name from organizations where id = ${organizationId} and id = any(${ids}::uuid[])`;
  return new Map(rows.map((r) => [r.id, r.name]));
}

/** For targets that are gone: the name the newest of their events recorded (`name`, `serial` or `url`). */
export async function recordedTargetNames(db: Db, organizationId: string, ids: string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const rows = await db<{ id: string; name: string }[]>`
    select distinct on (target_id) target_id as id,
           coalesce(details->>'name', details->>'serial', details->>'url') as name
    from audit_events
    where organization_id = ${organizationId} and target_id = any(${ids}::uuid[])
      and coalesce(details->>'name', details->>'serial', details->>'url') is not null
    order by target_id, seq desc`;
  return new Map(rows.map((r) => [r.id, r.name]));
}
