/**
 * What a rollout's transitions tell the outside: the webhooks `rollout.ring_opened`,
 * `rollout.paused`, `rollout.completed`, `rollout.aborted`, queued in the transaction of
 * the transition (`emit_webhook_event`), and the audit rows of what the service does by
 * itself, with actor `{ "type": "system" }` (an admin's own requests are audited by the
 * access layer).
 */
import { insertAuditEvent } from '../access/audit_events.ts';
import type { AuditAction } from '../access/declaration.ts';
import type { Db } from '../db/client.ts';

export type RolloutWebhookType = 'rollout.ring_opened' | 'rollout.paused' | 'rollout.completed' | 'rollout.aborted';

/** Queues the webhook `type` for the rollout, its `data` the rollout's state now and `extra`. */
export async function emitRolloutWebhook(
  db: Db,
  type: RolloutWebhookType,
  rolloutId: string,
  extra: Record<string, unknown> = {},
): Promise<void> {
  await db`
    select emit_webhook_event(r.organization_id, ${type}, jsonb_build_object(
             'rollout_id', r.id, 'scope', r.scope, 'scope_id', r.scope_id, 'merkmal', r.merkmal,
             'action', r.action, 'status', r.status, 'paused_reason', r.paused_reason,
             'current_ring', r.current_ring,
             -- Its type only: never a script.
             'device_action', case when r.device_action is null then null
                                   else jsonb_build_object('type', r.device_action -> 'type') end)
           || ${db.json(extra as Parameters<Db['json']>[0])}::jsonb)
    from rollouts r where r.id = ${rolloutId}`;
}

/** An audit row of a transition the service made by itself (actor `system`). */
export async function auditBySystem(
  db: Db,
  organizationId: string,
  action: AuditAction,
  rolloutId: string,
  details: Record<string, unknown>,
  /** The job's, e.g. `job:<graphile job id>`. */
  requestId: string,
): Promise<void> {
  await insertAuditEvent(db, {
    organizationId,
    action,
    caller: 'system',
    requestId,
    targetType: 'rollout',
    targetId: rolloutId,
    details,
  });
}
