/**
 * Task `sweep_webhook_deliveries`, hourly from the crontab: deliveries that settled
 * (delivered or failed) more than 30 days ago are deleted, then the events no delivery
 * refers to any more. Pending deliveries stay, however old, until their last attempt.
 */
import type { Task } from 'graphile-worker';
import type { PoolClient } from 'pg';
import type { WorkerDeps } from '../worker_deps.ts';

export const SWEEP_WEBHOOK_DELIVERIES_TASK = 'sweep_webhook_deliveries';
export const DELIVERY_RETENTION_DAYS = 30;

export function sweepWebhookDeliveriesTask(deps: WorkerDeps): Task {
  return async (_payload, helpers) => {
    const result = await helpers.withPgClient((db) => sweepWebhookDeliveries(db));
    if (result.deliveries > 0) deps.log.info('webhook delivery sweep done', { ...result });
  };
}

export async function sweepWebhookDeliveries(db: PoolClient): Promise<{ deliveries: number; events: number }> {
  const deliveries = await db.query(
    `delete from webhook_deliveries
      where status <> 'pending' and created_at < now() - make_interval(days => $1)`,
    [DELIVERY_RETENTION_DAYS],
  );
  const events = await db.query(
    `delete from webhook_events e
      where created_at < now() - make_interval(days => $1)
        and not exists (select 1 from webhook_deliveries d where d.event_id = e.id)`,
    [DELIVERY_RETENTION_DAYS],
  );
  return { deliveries: deliveries.rowCount ?? 0, events: events.rowCount ?? 0 };
}
