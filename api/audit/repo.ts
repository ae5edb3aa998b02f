/**
 * The audit log, read newest first with optional filters. The access layer writes it
 * (access/audit_events.ts), in the transaction of each successful write.
 */
import type { Actor } from '../access/declaration.ts';
import type { Db } from '../db/client.ts';

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
