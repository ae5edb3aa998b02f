/**
 * Recording an audit event: the access layer writes one for each successful write of the
 * operator or an organization key, in the write's transaction, and one for each read that
 * hands out a credential. The audit feature reads them.
 */
import type { Db } from '../db/client.ts';
import { type Actor, type AuditAction, type AuditEntry, actorOf, type Caller } from './declaration.ts';

/** The caller of a request, or the system (a job acting on its own, such as disabling a webhook). */
export async function insertAuditEvent(
  db: Db,
  event: AuditEntry & { action: AuditAction; caller: Caller | 'system'; requestId: string },
): Promise<void> {
  const actor: Actor = event.caller === 'system' ? { type: 'system' } : actorOf(event.caller);
  await db`
    insert into audit_events (organization_id, actor, action, target_type, target_id, request_id, details)
    values (${event.organizationId}, ${db.json(actor)}, ${event.action}, ${event.targetType},
            ${event.targetId}, ${event.requestId}, ${db.json((event.details ?? {}) as Parameters<Db['json']>[0])})`;
}
