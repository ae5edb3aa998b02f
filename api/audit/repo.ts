/**
 * The audit log (api/README.md, Audit log): written by the access middleware in the transaction of
 * each successful write, read newest first with optional filters.
 */
import type { Db } from '../db/client.ts';

/** What a write handler reports of its change; the middleware adds action, actor and request id. */
export interface AuditEntry {
  organizationId: string;
  targetType: string;
  targetId: string | null;
  /** What changed, never a secret (no code, key, token or WLAN data). */
  details?: Record<string, unknown>;
}

export type Actor = { type: 'operator' } | { type: 'api_key'; api_key_id: string; name: string } | { type: 'system' };

export async function insertAuditEvent(
  db: Db,
  event: AuditEntry & { action: string; actor: Actor; requestId: string },
): Promise<void> {
  await db`
    insert into audit_events (organization_id, actor, action, target_type, target_id, request_id, details)
    values (${event.organizationId}, ${db.json(event.actor)}, ${event.action}, ${event.targetType},
            ${event.targetId}, ${event.requestId}, ${db.json((event.details ?? {}) as Parameters<Db['json']>[0])})`;
}

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

export async function listAuditEvents(
  db: Db,
  input: { organizationId: string; action?: string; targetId?: string; beforeSeq: number | null; limit: number },
): Promise<AuditEventRow[]> {
  return db<AuditEventRow[]>`
    select id, seq, organization_id, actor, action, target_type, target_id, request_id, details, created_at
    from audit_events
    where organization_id = ${input.organizationId}
      and ${input.action === undefined ? db`true` : db`action = ${input.action}`}
      and ${input.targetId === undefined ? db`true` : db`target_id = ${input.targetId}`}
      and ${input.beforeSeq === null ? db`true` : db`seq < ${input.beforeSeq}`}
    order by seq desc
    limit ${input.limit + 1}`;
}
