/**
 * Task `deliver_webhook`, queued by `emit_webhook_event` in the transaction of the change
 * (one job per delivery; the payload holds only the delivery id). One attempt per run: the
 * outcome is recorded, and a failed attempt queues the next one itself, with a growing
 * pause and jitter, so 9 attempts spread over about a day. A webhook whose deliveries have
 * failed for 3 days is disabled, and the audit log says so.
 */
import type { Task } from 'graphile-worker';
import type { PoolClient } from 'pg';
import { z } from 'zod';
import { open, Sealed } from '../../api/http/sealed_box.ts';
import { secretContext } from '../../api/webhooks/repo.ts';
import { type AttemptOutcome, postWebhook } from '../webhooks/post.ts';
import { fleetSignature } from '../webhooks/signature.ts';
import type { WorkerDeps } from '../worker_deps.ts';

export const DELIVER_WEBHOOK_TASK = 'deliver_webhook';

/** Pauses before attempts 2 to 9 (seconds): about 22.7 hours in all, before jitter. */
export const RETRY_PAUSES_SECONDS = [30, 120, 600, 1800, 3600, 10_800, 21_600, 43_200];
export const MAX_ATTEMPTS = RETRY_PAUSES_SECONDS.length + 1;
const DISABLE_AFTER = '3 days';

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

export function deliverWebhookTask(deps: WorkerDeps): Task {
  return async (rawPayload, helpers) => {
    const payload = Payload.safeParse(rawPayload);
    if (!payload.success) {
      deps.log.error('deliver_webhook: payload not understood, job dropped', { job_id: helpers.job.id });
      return;
    }
    await helpers.withPgClient((db) => deliver(deps, db, payload.data.delivery_id, `job:${helpers.job.id}`));
  };
}

export async function deliver(deps: WorkerDeps, db: PoolClient, deliveryId: string, requestId: string): Promise<void> {
  const { rows } = await db.query<Due>(
    `select d.id, d.attempts, d.status, w.id as webhook_id, w.organization_id, w.url, w.secret_sealed,
            w.disabled_at, e.id as event_id, e.type, e.created_at as event_created_at, e.data
       from webhook_deliveries d
       join webhooks w on w.id = d.webhook_id
       join webhook_events e on e.id = d.event_id
      where d.id = $1`,
    [deliveryId],
  );
  const due = rows[0];
  // Deleted with its webhook, or already settled: nothing to do.
  if (due?.status !== 'pending') return;
  // Disabling fails the pending deliveries, but one queued by a change that committed
  // just after may still arrive here.
  if (due.disabled_at !== null) {
    await db.query(`update webhook_deliveries set status = 'failed', next_attempt_at = null where id = $1`, [due.id]);
    return;
  }
  const startedAt = new Date();
  const secret = await openSecret(deps, due);
  if (secret === null) {
    // Recorded as a failed attempt, retried on schedule: the operator may fix the key meanwhile.
    const error = "the webhook's secret could not be opened: this worker's ISO_ENCRYPTION_KEY differs from the API's";
    await record(deps, db, due, { statusCode: null, error }, { startedAt, requestId });
    return;
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
  await record(deps, db, due, outcome, { startedAt, requestId });
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
  db: PoolClient,
  due: Due,
  outcome: AttemptOutcome,
  attempt: { startedAt: Date; requestId: string },
) {
  const attempts = due.attempts + 1;
  const error = outcome.error?.slice(0, 1400) ?? null;
  const ok = delivered(outcome);
  const retry = !ok && attempts < MAX_ATTEMPTS;
  const pause = retry ? retryPauseSeconds(attempts) : null;
  await db.query('begin');
  try {
    // Guarded by the attempt count: a duplicate run of the same attempt records nothing.
    const { rowCount } = await db.query(
      `update webhook_deliveries
          set attempts = $2, last_status_code = $3, last_error = $4,
              status = case when $5 then 'delivered' when $6 then 'pending' else 'failed' end,
              delivered_at = case when $5 then now() end,
              next_attempt_at = case when $6 then now() + make_interval(secs => $7) end
        where id = $1 and status = 'pending' and attempts = $8`,
      [due.id, attempts, outcome.statusCode, error, ok, retry, pause ?? 0, due.attempts],
    );
    if (rowCount === 0) {
      await db.query('rollback');
      return;
    }
    await db.query(
      `insert into webhook_delivery_attempts (delivery_id, attempt, started_at, duration_ms, status_code, error)
       values ($1, $2, $3, $4, $5, $6)`,
      [due.id, attempts, attempt.startedAt, Date.now() - attempt.startedAt.getTime(), outcome.statusCode, error],
    );
    if (retry) {
      await db.query(
        `select from graphile_worker.add_job($1, json_build_object('delivery_id', $2::uuid),
                 run_at => now() + make_interval(secs => $3), max_attempts => 3, job_key => $1 || ':' || $2)`,
        [DELIVER_WEBHOOK_TASK, due.id, pause],
      );
    }
    if (ok) await db.query(`update webhooks set failing_since = null where id = $1`, [due.webhook_id]);
    else await failing(deps, db, due, attempt.requestId);
    await db.query('commit');
  } catch (err) {
    await db.query('rollback').catch(() => {});
    throw err;
  }
  if (!ok) {
    deps.log.info('webhook delivery failed', {
      webhook_id: due.webhook_id,
      delivery_id: due.id,
      attempt: attempts,
      status: outcome.statusCode,
      next_in_seconds: pause,
    });
  }
}

/** Marks the webhook failing; after 3 days of failures it is disabled, with its pending deliveries. */
async function failing(deps: WorkerDeps, db: PoolClient, due: Due, requestId: string) {
  const { rows } = await db.query<{ failing_since: Date }>(
    `update webhooks set failing_since = coalesce(failing_since, now())
      where id = $1 returning failing_since`,
    [due.webhook_id],
  );
  const { rows: disabled } = await db.query<{ id: string }>(
    `update webhooks set disabled_at = now()
      where id = $1 and disabled_at is null and failing_since <= now() - interval '${DISABLE_AFTER}'
      returning id`,
    [due.webhook_id],
  );
  if (disabled.length === 0) return;
  await db.query(
    `update webhook_deliveries set status = 'failed', next_attempt_at = null
      where webhook_id = $1 and status = 'pending'`,
    [due.webhook_id],
  );
  await db.query(
    `insert into audit_events (organization_id, actor, action, target_type, target_id, request_id, details)
     values ($1, '{"type":"system"}', 'webhook.disable', 'webhook', $2, $3, $4)`,
    [
      due.organization_id,
      due.webhook_id,
      requestId,
      JSON.stringify({ reason: `deliveries failed for ${DISABLE_AFTER}`, failing_since: rows[0]?.failing_since }),
    ],
  );
  deps.log.warn('webhook disabled: its deliveries failed for 3 days', { webhook_id: due.webhook_id });
}
