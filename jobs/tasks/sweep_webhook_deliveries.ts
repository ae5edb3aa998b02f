/**
 * Task `sweep_webhook_deliveries`, hourly from the crontab: deliveries that settled
 * (delivered or failed) more than 30 days ago are deleted, then the events no delivery
 * refers to any more. Pending deliveries stay, however old, until their last attempt.
 */
import type { Task } from 'graphile-worker';
import type { Db } from '../../api/db/client.ts';
import type { TaskDeps } from '../worker_deps.ts';

export const SWEEP_WEBHOOK_DELIVERIES_TASK = 'sweep_webhook_deliveries';
const DELIVERY_RETENTION_DAYS = 30;

export function sweepWebhookDeliveriesTask(deps: TaskDeps): Task {
  return async () => {
    const result = await sweepWebhookDeliveries(deps.sql);
    if (result.deliveries > 0) deps.log.info('webhook delivery sweep done', { ...result });
  };
}

export async function sweepWebhookDeliveries(db: Db): Promise<{ deliveries: number; events: number }> {
  const deliveries = await db`
    delete from webhook_deliveries
     where status <> 'pending' and created_at < now() - make_interval(days => ${DELIVERY_RETENTION_DAYS})`;
  const events = await db`
    delete from webhook_events e
     where created_at < now() - make_interval(days => ${DELIVERY_RETENTION_DAYS})
       and not exists (select 1 from webhook_deliveries d where d.event_id = e.id)`;
  return { deliveries: deliveries.count, events: events.count };
}
