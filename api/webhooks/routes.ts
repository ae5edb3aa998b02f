/**
 * Webhooks (api/webhooks/README.md): an organization's admins subscribe HTTPS endpoints to device,
 * order and ISO build events, and read what was delivered.
 */
import type { z } from '@hono/zod-openapi';
import { recordAudit } from '../access/middleware.ts';
import { notFound } from '../http/errors.ts';
import { IdParams, iso, json, jsonBody, Uuid } from '../http/openapi.ts';
import { defineRoute, newRouter } from '../access/route.ts';
import { collectionOf, decodeCursor, decodeSeqCursor, encodeSeqCursor, PageQuery, toPage } from '../http/pagination.ts';
import { requireOrganization } from '../organizations/repo.ts';
import * as repo from './repo.ts';
import { sendTestEvent, subscribe, unsubscribe } from './service.ts';
import { CreatedWebhook, Webhook, WebhookCreate, WebhookDelivery, WebhookDeliveryAttempt } from './schemas.ts';
import * as ops from './operations.ts';

const tags = ['Webhooks'];

function serializeWebhook(row: repo.WebhookRow): z.infer<typeof Webhook> {
  return {
    id: row.id,
    organization_id: row.organization_id,
    url: row.url,
    events: row.events as z.infer<typeof Webhook>['events'],
    created_at: iso(row.created_at),
    disabled_at: iso(row.disabled_at),
    pending_deliveries: row.pending_deliveries,
  };
}

function serializeDelivery(row: repo.DeliveryRow): z.infer<typeof WebhookDelivery> {
  return {
    id: row.id,
    event_id: row.event_id,
    event: row.event as z.infer<typeof WebhookDelivery>['event'],
    status: row.status,
    attempts: row.attempts,
    last_status_code: row.last_status_code,
    last_error: row.last_error,
    next_attempt_at: iso(row.next_attempt_at),
    delivered_at: iso(row.delivered_at),
    created_at: iso(row.created_at),
  };
}

const createWebhook = defineRoute({
  method: 'post',
  path: '/organizations/{id}/webhooks',
  operationId: 'createWebhook',
  tags,
  summary: 'Subscribe a URL to events (the signing secret is shown once)',
  description:
    'Every event of the chosen types is `POST`ed to the URL as `{ id, type, organization_id, created_at, data }` ' +
    'with the `Fleet-Signature` header, retried with growing pauses (9 attempts over about a day) until a 2xx ' +
    'answer. Redirects are not followed. Deliveries that failed for 3 days disable the webhook.',
  operation: ops.createWebhook,
  errors: ['not_found'],
  request: { params: IdParams, body: jsonBody(WebhookCreate) },
  responses: { 201: json(CreatedWebhook, 'The new webhook, with its secret') },
});

const listWebhooks = defineRoute({
  method: 'get',
  path: '/organizations/{id}/webhooks',
  operationId: 'listWebhooks',
  tags,
  summary: "List the organization's webhooks (never their secrets)",
  operation: ops.listWebhooks,
  errors: ['not_found'],
  request: { params: IdParams, query: PageQuery },
  responses: { 200: json(collectionOf(Webhook, 'WebhookList'), 'A page of webhooks, oldest first') },
});

const deleteWebhook = defineRoute({
  method: 'delete',
  path: '/webhooks/{id}',
  operationId: 'deleteWebhook',
  tags,
  summary: 'Delete a webhook and its deliveries; nothing more is sent to it',
  operation: ops.deleteWebhook,
  errors: ['not_found'],
  request: { params: IdParams },
  responses: { 204: { description: 'Deleted' } },
});

const listDeliveries = defineRoute({
  method: 'get',
  path: '/webhooks/{id}/deliveries',
  operationId: 'listWebhookDeliveries',
  tags,
  summary: "List a webhook's deliveries, newest first, with their attempts",
  operation: ops.listWebhookDeliveries,
  errors: ['not_found'],
  request: { params: IdParams, query: PageQuery },
  responses: { 200: json(collectionOf(WebhookDelivery, 'WebhookDeliveryList'), 'A page of deliveries, newest first') },
});

const DeliveryParams = IdParams.extend({
  delivery_id: Uuid.openapi({ param: { name: 'delivery_id', in: 'path' }, description: 'The delivery' }),
});

const listAttempts = defineRoute({
  method: 'get',
  path: '/webhooks/{id}/deliveries/{delivery_id}/attempts',
  operationId: 'listWebhookDeliveryAttempts',
  tags,
  summary: "A delivery's attempts, first first (at most 9)",
  operation: ops.listWebhookDeliveryAttempts,
  errors: ['not_found'],
  request: { params: DeliveryParams },
  responses: {
    200: json(
      collectionOf(WebhookDeliveryAttempt, 'WebhookDeliveryAttemptList'),
      'Every attempt made so far (one page)',
    ),
  },
});

const testWebhook = defineRoute({
  method: 'post',
  path: '/webhooks/{id}/test',
  operationId: 'testWebhook',
  tags,
  summary: 'Send the webhook a test event',
  description:
    'Queues a `webhook.test` event for this webhook alone, whatever event types it subscribed to, with ' +
    '`data: { webhook_id, url }`. It is signed, delivered, retried and listed under its deliveries like every ' +
    'other event: the answer is the pending delivery; follow it with `GET /webhooks/{id}/deliveries`. A disabled ' +
    'webhook sends nothing: 400 `invalid_request`, nothing queued.',
  operation: ops.testWebhook,
  errors: ['not_found', 'invalid_request'],
  request: { params: IdParams },
  responses: { 202: json(WebhookDelivery, 'The test event is queued: its delivery') },
});

export function webhookRoutes() {
  return newRouter()
    .openapi(createWebhook, async (c) => {
      const { id } = c.req.valid('param');
      const body = c.req.valid('json');
      const { row, secret, audit } = await subscribe(c.get('db'), c.get('deps').config, id, body);
      recordAudit(c, audit);
      return c.json({ ...serializeWebhook(row), secret }, 201);
    })
    .openapi(listWebhooks, async (c) => {
      const { id } = c.req.valid('param');
      const { limit, cursor } = c.req.valid('query');
      const db = c.get('db');
      await requireOrganization(db, id);
      const rows = await repo.listWebhooks(db, id, decodeCursor(cursor), limit);
      return c.json(toPage(rows, limit, serializeWebhook), 200);
    })
    .openapi(deleteWebhook, async (c) => {
      const { id } = c.req.valid('param');
      const { audit } = await unsubscribe(c.get('db'), id);
      recordAudit(c, audit);
      return c.body(null, 204);
    })
    .openapi(testWebhook, async (c) => {
      const { id } = c.req.valid('param');
      const { delivery, audit } = await sendTestEvent(c.get('db'), id);
      recordAudit(c, audit);
      return c.json(serializeDelivery(delivery), 202);
    })
    .openapi(listDeliveries, async (c) => {
      const { id } = c.req.valid('param');
      const { limit, cursor } = c.req.valid('query');
      const db = c.get('db');
      const beforeSeq = decodeSeqCursor(cursor);
      if (!(await repo.webhookExists(db, id))) throw notFound('webhook', id);
      const rows = await repo.listDeliveries(db, id, beforeSeq, limit);
      return c.json(
        toPage(rows, limit, serializeDelivery, (r) => encodeSeqCursor(r.seq)),
        200,
      );
    })
    .openapi(listAttempts, async (c) => {
      const { id, delivery_id } = c.req.valid('param');
      const rows = await repo.listAttempts(c.get('db'), id, delivery_id);
      if (rows === null) throw notFound('webhook delivery', delivery_id);
      const items = rows.map((row) => ({ ...row, started_at: iso(row.started_at) }));
      return c.json({ items, next_cursor: null }, 200);
    });
}
