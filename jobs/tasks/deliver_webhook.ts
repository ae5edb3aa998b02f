/**
 * Task `deliver_webhook`, queued by `emit_webhook_event` in the transaction of the change
 * (one job per delivery, in the webhook's own queue, so one webhook has one attempt in flight
 * at most and a failing receiver holds back only its own deliveries; the payload holds only
 * the delivery id). One attempt per delivery, then the webhook's other due ones for a few
 * seconds: each outcome is recorded, and a failed attempt queues the next one itself, with a
 * growing pause and jitter, so 9 attempts spread over about a day. A webhook whose deliveries have
 * failed for 3 days is disabled, and the audit log says so.
 */
import type { Task } from 'graphile-worker';
import { z } from 'zod';
import { insertAuditEvent } from '../../api/access/audit_events.ts';
import { type Db, transaction } from '../../api/db/client.ts';
import { open, Sealed } from '../../api/http/sealed_box.ts';
import { secretContext } from '../../api/webhooks/repo.ts';
import { type AttemptOutcome, postWebhook } from '../webhooks/post.ts';
import { fleetSignature } from '../webhooks/signature.ts';
import type { TaskDeps, WorkerDeps } from '../worker_deps.ts';

export const DELIVER_WEBHOOK_TASK = 'deliver_webhook';

/** Pauses before attempts 2 to 9 (seconds): about 22.7 hours in all, before jitter. */
export const RETRY_PAUSES_SECONDS = [30, 120, 600, 1800, 3600, 10_800, 21_600, 43_200];
export const MAX_ATTEMPTS = RETRY_PAUSES_SECONDS.length + 1;
const DISABLE_AFTER = '3 days';

/**
 * The Graphile Worker queue of a webhook's deliveries (as `emit_webhook_event` names it): a
 * queue runs one job at a time, so a failing receiver's retries hold one runner slot and
 * every other webhook's deliveries go past them.
 */
function deliveryQueue(webhookId: string): string {
  return `${DELIVER_WEBHOOK_TASK}:${webhookId}`;
}

const Payload = z.object({ delivery_id: z.uuid() });

interface Due {
  id: string;
  attempts: number;
  status: string;
  webhook_id: string;
  organization_id: string;
  url: string;
  secret_sealed: unknown;
  disabled_at: Date | null;
  event_id: string;
  type: string;
  event_created_at: Date;
  data: Record<string, unknown>;
}

export function deliverWebhookTask(deps: TaskDeps): Task {
  return async (rawPayload, helpers) => {
    const payload = Payload.safeParse(rawPayload);
    if (!payload.success) {
      deps.log.error('deliver_webhook: payload not understood, job dropped', { job_id: helpers.job.id });
      return;
    }
    const requestId = `job:${helpers.job.id}`;
    const webhookId = await deliver(deps, deps.sql, payload.data.delivery_id, requestId);
    if (webhookId !== null) await drain(deps, webhookId, requestId, helpers.abortSignal);
  };
}

/** How long one job goes on with its webhook's other due deliveries, so other webhooks get their turn. */
const DRAIN_MS = 5_000;

/**
 * The webhook's other deliveries that are due, oldest first, while the job holds its queue
 * and for at most DRAIN_MS: a backlog moves at the receiver's pace rather than one
 * delivery per poll of the queue (a queue is free again only after its job is settled).
 * Each delivery's own job is replaced by its retry or removed with its outcome.
 */
async function drain(deps: TaskDeps, webhookId: string, requestId: string, signal: AbortSignal | undefined) {
  const until = Date.now() + DRAIN_MS;
  while (Date.now() < until && !signal?.aborted) {
    const [next] = await deps.sql<{ id: string }[]>`
      select id from webhook_deliveries
       where webhook_id = ${webhookId} and status = 'pending' and next_attempt_at <= now()
       order by next_attempt_at, seq limit 1`;
    if (next === undefined) return;
    if ((await deliver(deps, deps.sql, next.id, requestId)) === null) return;
  }
}

/** One attempt of the delivery; its webhook's id when an attempt was made and recorded, else null. */
async function deliver(deps: WorkerDeps, db: Db, deliveryId: string, requestId: string): Promise<string | null> {
  const [due] = await db<Due[]>`
    select d.id, d.attempts, d.status, w.id as webhook_id, w.organization_id, w.url, w.secret_sealed,
           w.disabled_at, e.id as event_id, e.type, e.created_at as event_created_at, e.data
      from webhook_deliveries d
      join webhooks w on w.id = d.webhook_id
      join webhook_events e on e.id = d.event_id
     where d.id = ${deliveryId}`;
  // Deleted with its webhook, or already settled: nothing to do.
  if (due?.status !== 'pending') return null;
  // Disabling fails the pending deliveries, but one queued by a change that committed
  // just after may still arrive here.
  if (due.disabled_at !== null) {
    await db`update webhook_deliveries set status = 'failed', next_attempt_at = null where id = ${due.id}`;
    return null;
  }
  const startedAt = new Date();
  const secret = await openSecret(deps, due);
  if (secret === null) {
    // Recorded as a failed attempt, retried on schedule: the operator may fix the key meanwhile.
    const error = "the webhook's secret could not be opened: this worker's ISO_ENCRYPTION_KEY differs from the API's";
    return (await record(deps, db, due, { statusCode: null, error }, { startedAt, requestId })) ? due.webhook_id : null;
  }
  const body = JSON.stringify({
    id: due.event_id,
    type: due.type,
    organization_id: due.organization_id,
    created_at: due.event_created_at.toISOString(),
    data: due.data,
  });
  const now = Math.floor(Date.now() / 1000);
  const outcome = await postWebhook(
    due.url,
    body,
    {
      'content-type': 'application/json',
      'user-agent': 'fleet-webhooks/1',
      'fleet-signature': fleetSignature(secret, now, body),
    },
    {
      allowPrivate: deps.config.webhooks?.allowPrivate ?? false,
      timeoutMs: deps.config.webhooks?.timeoutMs,
      resolve: deps.config.webhooks?.resolve,
    },
  );
  return (await record(deps, db, due, outcome, { startedAt, requestId })) ? due.webhook_id : null;
}

async function openSecret(deps: WorkerDeps, due: Due): Promise<string | null> {
  try {
    return await open(deps.config.wlanKey, secretContext(due.webhook_id), Sealed.parse(due.secret_sealed));
  } catch {
    deps.log.error('webhook secret could not be opened (another ISO_ENCRYPTION_KEY?)', { webhook_id: due.webhook_id });
    return null;
  }
}

function delivered(outcome: AttemptOutcome): boolean {
  return outcome.statusCode !== null && outcome.statusCode >= 200 && outcome.statusCode < 300;
}

/** The pause before the attempt after `attempts` made, with ±20 % jitter so a failing receiver's retries spread. */
export function retryPauseSeconds(attempts: number): number {
  const base = RETRY_PAUSES_SECONDS[Math.min(attempts, RETRY_PAUSES_SECONDS.length) - 1]!;
  return Math.round(base * (0.8 + Math.random() * 0.4));
}

async function record(
  deps: WorkerDeps,
  db: Db,
  due: Due,
  outcome: AttemptOutcome,
  attempt: { startedAt: Date; requestId: string },
) {
  const attempts = due.attempts + 1;
  const error = outcome.error?.slice(0, 1400) ?? null;
  const ok = delivered(outcome);
  const retry = !ok && attempts < MAX_ATTEMPTS;
  const pause = retry ? retryPauseSeconds(attempts) : null;
  const recorded = await transaction(db, async (tx) => {
    // Guarded by the attempt count: a duplicate run of the same attempt records nothing.
    const updated = await tx`
      update webhook_deliveries
         set attempts = ${attempts}, last_status_code = ${outcome.statusCode}, last_error = ${error},
             status = case when ${ok} then 'delivered' when ${retry} then 'pending' else 'failed' end,
             delivered_at = case when ${ok} then now() end,
             next_attempt_at = case when ${retry} then now() + make_interval(secs => ${pause ?? 0}) end
       where id = ${due.id} and status = 'pending' and attempts = ${due.attempts}`;
    if (updated.count === 0) return false;
    await tx`
      insert into webhook_delivery_attempts (delivery_id, attempt, started_at, duration_ms, status_code, error)
      values (${due.id}, ${attempts}, ${attempt.startedAt}, ${Date.now() - attempt.startedAt.getTime()},
              ${outcome.statusCode}, ${error})`;
    if (retry) {
      // The next attempt is queued with the outcome: both or neither.
      await tx`
        select from graphile_worker.add_job(${DELIVER_WEBHOOK_TASK}, json_build_object('delivery_id', ${due.id}::uuid),
                 queue_name => ${deliveryQueue(due.webhook_id)}::text,
                 run_at => now() + make_interval(secs => ${pause}), max_attempts => 3,
                 job_key => ${DELIVER_WEBHOOK_TASK}::text || ':' || ${due.id}::text)`;
    } else {
      // Settled: its job has nothing left to do (a drain may have made this attempt).
      await tx`select from graphile_worker.remove_job(${DELIVER_WEBHOOK_TASK}::text || ':' || ${due.id}::text)`;
    }
    if (ok) await tx`update webhooks set failing_since = null where id = ${due.webhook_id}`;
    else await failing(deps, tx, due, attempt.requestId);
    return true;
  });
  if (recorded && !ok) {
    deps.log.info('webhook delivery failed', {
      webhook_id: due.webhook_id,
      delivery_id: due.id,
      attempt: attempts,
      status: outcome.statusCode,
      next_in_seconds: pause,
    });
  }
  return recorded;
}

/** Marks the webhook failing; after 3 days of failures it is disabled, with its pending deliveries. */
async function failing(deps: WorkerDeps, db: Db, due: Due, requestId: string) {
  const [webhook] = await db<{ failing_since: Date }[]>`
    update webhooks set failing_since = coalesce(failing_since, now())
     where id = ${due.webhook_id} returning failing_since`;
  const disabled = await db`
    update webhooks set disabled_at = now()
     where id = ${due.webhook_id} and disabled_at is null and failing_since <= now() - ${DISABLE_AFTER}::interval
     returning id`;
  if (disabled.length === 0) return;
  await db`
    update webhook_deliveries set status = 'failed', next_attempt_at = null
     where webhook_id = ${due.webhook_id} and status = 'pending'`;
  await insertAuditEvent(db, {
    organizationId: due.organization_id,
    caller: 'system',
    action: 'webhook.disable',
    targetType: 'webhook',
    targetId: due.webhook_id,
    requestId,
    details: { reason: `deliveries failed for ${DISABLE_AFTER}`, failing_since: webhook?.failing_since },
  });
  deps.log.warn('webhook disabled: its deliveries failed for 3 days', { webhook_id: due.webhook_id });
}
