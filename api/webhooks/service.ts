/**
 * Subscribing and deleting a webhook, shared by the API routes and the
 * portal: the URL policy is checked here, and each returns the audit entry of the change
 * (never the secret).
 */
import type { AuditEntry } from '../access/declaration.ts';
import type { AppConfig } from '../config.ts';
import type { Db } from '../db/client.ts';
import { ApiError, notFound } from '../http/errors.ts';
import { requireOrganization } from '../organizations/repo.ts';
import * as repo from './repo.ts';
import { WEBHOOK_TEST_EVENT } from './schemas.ts';
import { webhookUrlProblem } from './url_policy.ts';

export async function subscribe(
  db: Db,
  config: Pick<AppConfig, 'webhooks' | 'wlanKey'>,
  organizationId: string,
  input: { url: string; events: string[] },
): Promise<{ row: repo.WebhookRow; secret: string; audit: AuditEntry }> {
  const problem = webhookUrlProblem(input.url, config.webhooks);
  if (problem !== null) {
    throw new ApiError('invalid_request', `url ${problem}`, { details: [{ path: ['url'], message: problem }] });
  }
  await requireOrganization(db, organizationId);
  const { row, secret } = await repo.createWebhook(db, {
    organizationId,
    url: input.url,
    events: input.events,
    key: config.wlanKey,
  });
  const details = { url: row.url, events: row.events };
  return { row, secret, audit: { organizationId, targetType: 'webhook', targetId: row.id, details } };
}

export async function unsubscribe(db: Db, id: string): Promise<{ row: repo.WebhookRow; audit: AuditEntry }> {
  const row = await repo.deleteWebhook(db, id);
  if (!row) throw notFound('webhook', id);
  return {
    row,
    audit: { organizationId: row.organization_id, targetType: 'webhook', targetId: id, details: { url: row.url } },
  };
}

/**
 * Sends the webhook a `webhook.test` event, queued and delivered as every event is. A
 * disabled webhook sends nothing more (delete it and create it anew): 400, nothing queued.
 */
export async function sendTestEvent(db: Db, id: string): Promise<{ delivery: repo.DeliveryRow; audit: AuditEntry }> {
  const hook = await repo.getWebhook(db, id);
  if (!hook) throw notFound('webhook', id);
  const delivery = hook.disabled_at === null ? await repo.emitTestEvent(db, hook, WEBHOOK_TEST_EVENT) : null;
  if (delivery === null) {
    throw new ApiError('invalid_request', `webhook ${id} is disabled and sends nothing; delete it and create it anew`);
  }
  return {
    delivery,
    audit: {
      organizationId: hook.organization_id,
      targetType: 'webhook',
      targetId: id,
      details: { url: hook.url, event: WEBHOOK_TEST_EVENT, delivery_id: delivery.id },
    },
  };
}
