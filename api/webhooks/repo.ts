/**
 * Webhook subscriptions and their deliveries (api/webhooks/README.md). Events are emitted in SQL
 * (`emit_webhook_event`, sql/migrations/20261123100000_webhooks.sql); the worker delivers
 * them (jobs/tasks/deliver_webhook.ts).
 */
import { afterCursor } from '../db/keyset.ts';
import type { Db } from '../db/client.ts';
import { randomToken } from '../http/crypto.ts';
import type { Cursor } from '../http/pagination.ts';
import { seal } from '../http/sealed_box.ts';

const WEBHOOK_SECRET_PREFIX = 'whsec_';

export interface WebhookRow {
  id: string;
  organization_id: string;
  url: string;
  events: string[];
  created_at: Date;
  disabled_at: Date | null;
  /** Its deliveries neither delivered nor given up. */
  pending_deliveries: number;
}

/** The webhook's columns and its pending deliveries' count (`w` is the webhooks row). */
function webhookColumns(db: Db) {
  return db`
    w.id, w.organization_id, w.url, w.events, w.created_at, w.disabled_at,
    (select count(*)::int from webhook_deliveries d
      where d.webhook_id = w.id and d.status = 'pending') as pending_deliveries`;
}

/** What a sealed secret is bound to: it opens for this webhook only. */
export function secretContext(webhookId: string): string {
  return `webhook:${webhookId}`;
}

/** A new webhook with a random 256-bit secret, stored sealed. Returns the row and the secret, once. */
export async function createWebhook(
  db: Db,
  input: { organizationId: string; url: string; events: string[]; key: Uint8Array },
): Promise<{ row: WebhookRow; secret: string }> {
  const id = crypto.randomUUID();
  const secret = WEBHOOK_SECRET_PREFIX + randomToken(32);
  const sealed = await seal(input.key, secretContext(id), secret);
  const [row] = await db<WebhookRow[]>`
    insert into webhooks (id, organization_id, url, events, secret_sealed)
    values (${id}, ${input.organizationId}, ${input.url}, ${input.events}, ${db.json(sealed)})
    returning id, organization_id, url, events, created_at, disabled_at, 0 as pending_deliveries`;
  return { row: row!, secret };
}

export async function listWebhooks(db: Db, organizationId: string, cursor: Cursor | null, limit: number) {
  return db<WebhookRow[]>`
    select ${webhookColumns(db)}
    from webhooks w
    where w.organization_id = ${organizationId} and ${afterCursor(db, cursor, 'asc', 'w')}
    order by w.created_at, w.id
    limit ${limit + 1}`;
}

export async function getWebhook(db: Db, id: string): Promise<WebhookRow | null> {
  const [row] = await db<WebhookRow[]>`select ${webhookColumns(db)} from webhooks w where w.id = ${id}`;
  return row ?? null;
}

/** Deletes the webhook with its deliveries (their queued jobs find nothing and end). Null: no such webhook. */
export async function deleteWebhook(db: Db, id: string): Promise<WebhookRow | null> {
  const [row] = await db<WebhookRow[]>`
    delete from webhooks where id = ${id}
    returning id, organization_id, url, events, created_at, disabled_at, 0 as pending_deliveries`;
  return row ?? null;
}

export async function webhookExists(db: Db, id: string): Promise<boolean> {
  const [row] = await db`select 1 from webhooks where id = ${id}`;
  return row !== undefined;
}

export interface DeliveryRow {
  seq: number;
  id: string;
  event_id: string;
  event: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  next_attempt_at: Date | null;
  delivered_at: Date | null;
  created_at: Date;
}

function selectDeliveries(db: Db) {
  return db`
    select seq, id, event_id, event, status, attempts, last_status_code, last_error,
           next_attempt_at, delivered_at, created_at
    from webhook_deliveries`;
}

/** A page of the webhook's deliveries, newest first. */
export async function listDeliveries(db: Db, webhookId: string, beforeSeq: number | null, limit: number) {
  return db<DeliveryRow[]>`
    ${selectDeliveries(db)}
    where webhook_id = ${webhookId} and ${beforeSeq === null ? db`true` : db`seq < ${beforeSeq}`}
    order by seq desc
    limit ${limit + 1}`;
}

/**
 * Queues a `webhook.test` event for this webhook alone, through `emit_webhook_event` as
 * every event goes; its delivery, or null when the webhook is disabled (or gone).
 */
export async function emitTestEvent(db: Db, webhook: WebhookRow, type: string): Promise<DeliveryRow | null> {
  const data = { webhook_id: webhook.id, url: webhook.url };
  const [emitted] = await db<{ event_id: string | null }[]>`
    select emit_webhook_event(${webhook.organization_id}, ${type}, ${db.json(data)}::jsonb, ${webhook.id}) as event_id`;
  if (!emitted?.event_id) return null;
  const [row] = await db<DeliveryRow[]>`
    ${selectDeliveries(db)} where event_id = ${emitted.event_id} and webhook_id = ${webhook.id}`;
  return row ?? null;
}

/** The last `perWebhook` deliveries of each of the organization's webhooks, newest first. */
export async function listRecentDeliveries(
  db: Db,
  organizationId: string,
  perWebhook: number,
): Promise<Map<string, DeliveryRow[]>> {
  const rows = await db<Array<DeliveryRow & { webhook_id: string }>>`
    select w.id as webhook_id, d.seq, d.id, d.event_id, d.event, d.status, d.attempts, d.last_status_code,
           d.last_error, d.next_attempt_at, d.delivered_at, d.created_at
    from webhooks w
    cross join lateral (
      select * from webhook_deliveries wd where wd.webhook_id = w.id order by wd.seq desc limit ${perWebhook}
    ) d
    where w.organization_id = ${organizationId}
    order by w.id, d.seq desc`;
  const byWebhook = new Map<string, DeliveryRow[]>();
  for (const { webhook_id, ...row } of rows) byWebhook.set(webhook_id, [...(byWebhook.get(webhook_id) ?? []), row]);
  return byWebhook;
}

/** One delivery of the webhook; null when the webhook has no such delivery. */
export async function getDelivery(db: Db, webhookId: string, deliveryId: string): Promise<DeliveryRow | null> {
  const [row] = await db<DeliveryRow[]>`
    ${selectDeliveries(db)} where id = ${deliveryId} and webhook_id = ${webhookId}`;
  return row ?? null;
}

export interface AttemptRow {
  attempt: number;
  started_at: Date;
  duration_ms: number;
  status_code: number | null;
  error: string | null;
}

/** The delivery's attempts, first first; null when the webhook has no such delivery. */
export async function listAttempts(db: Db, webhookId: string, deliveryId: string): Promise<AttemptRow[] | null> {
  const [delivery] = await db`select 1 from webhook_deliveries where id = ${deliveryId} and webhook_id = ${webhookId}`;
  if (!delivery) return null;
  return db<AttemptRow[]>`
    select attempt, started_at, duration_ms, status_code, error
    from webhook_delivery_attempts where delivery_id = ${deliveryId}
    order by attempt`;
}
