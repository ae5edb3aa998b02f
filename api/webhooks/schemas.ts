/** The Webhook and WebhookDelivery objects and the create body. */
import { z } from '@hono/zod-openapi';
import { Timestamp, Uuid } from '../http/openapi.ts';

export const WEBHOOK_EVENT_TYPES = [
  'device.activated',
  'device.bootstrapped',
  'device.deprovisioned',
  'device.reprovisioned',
  'device.archived',
  'device.stale',
  'order.applied',
  'order.apply_failed',
  'order.removed',
  'order.remove_failed',
  'iso_build.completed',
  'iso_build.failed',
  'rollout.ring_opened',
  'rollout.paused',
  'rollout.completed',
  'rollout.aborted',
  'vulnerability.detected',
  'disk_key.revealed',
  'action.finished',
] as const;

const WebhookEventType = z.enum(WEBHOOK_EVENT_TYPES).openapi('WebhookEventType');

/**
 * The event `POST /webhooks/{id}/test` sends to that one webhook, whatever it subscribed to;
 * nobody subscribes to it.
 */
export const WEBHOOK_TEST_EVENT = 'webhook.test';

const DeliveredEventType = z.enum([...WEBHOOK_EVENT_TYPES, WEBHOOK_TEST_EVENT]).openapi('WebhookDeliveredEventType', {
  description: 'An event type a webhook subscribes to, or `webhook.test`: a test event sent to it on request.',
});

export const Webhook = z
  .object({
    id: Uuid,
    organization_id: Uuid,
    url: z.string().openapi({ example: 'https://tickets.example.com/hooks/fleet' }),
    events: z.array(WebhookEventType),
    created_at: Timestamp,
    disabled_at: Timestamp.nullable().openapi({
      description: 'Set when deliveries failed for 3 days; no events are sent any more. Delete and create it anew.',
    }),
    pending_deliveries: z
      .number()
      .int()
      .min(0)
      .openapi({
        description:
          'Its deliveries neither delivered nor given up: waiting for their first attempt or for a retry. Each ' +
          "webhook's deliveries are sent one at a time, so a receiver that fails holds back only its own.",
        example: 0,
      }),
  })
  .openapi('Webhook');

export const CreatedWebhook = Webhook.extend({
  secret: z.string().openapi({
    description:
      'The signing secret, shown this once. Each delivery carries `Fleet-Signature: t=<unix seconds>,v1=<hex>`, ' +
      'the HMAC-SHA256 of `<t>.<raw body>` keyed with the UTF-8 bytes of this secret.',
    example: 'whsec_4q0m1bKQpWJc1oS8a2cXbqg1pVv3Zf7oCkq3n9e0T1w',
  }),
}).openapi('CreatedWebhook');

export const WebhookCreate = z
  .strictObject({
    url: z
      .string()
      .max(2048)
      .openapi({
        description:
          '`https` (or `http` for a loopback host when WEBHOOK_ALLOW_HTTP is on); no private, loopback or ' +
          'link-local address unless WEBHOOK_ALLOW_PRIVATE is on. Checked again against DNS at every delivery.',
        example: 'https://tickets.example.com/hooks/fleet',
      }),
    events: z
      .array(WebhookEventType)
      .min(1)
      .refine((events) => new Set(events).size === events.length, 'must not repeat an event type'),
  })
  .openapi('WebhookCreate');

const DeliveryStatus = z.enum(['pending', 'delivered', 'failed']).openapi({
  description:
    '`pending`: not yet answered with 2xx, another attempt is due at `next_attempt_at`. `delivered`: a 2xx came. ' +
    '`failed`: every attempt failed, or the webhook was disabled first.',
});

export const WebhookDelivery = z
  .object({
    id: Uuid,
    event_id: Uuid.openapi({ description: 'The `id` of the delivered event body (the same for every webhook).' }),
    event: DeliveredEventType,
    status: DeliveryStatus,
    attempts: z.number().int().openapi({ description: 'Attempts made so far.' }),
    last_status_code: z.number().int().nullable().openapi({ description: 'HTTP status of the last attempt, if any.' }),
    last_error: z.string().nullable().openapi({
      description: 'Why the last attempt failed: a network error, or the status with the first 1 KiB of the body.',
    }),
    next_attempt_at: Timestamp.nullable(),
    delivered_at: Timestamp.nullable(),
    created_at: Timestamp,
  })
  .openapi('WebhookDelivery');

export const WebhookDeliveryAttempt = z
  .object({
    attempt: z.number().int().openapi({ description: '1 for the first attempt.' }),
    started_at: Timestamp,
    duration_ms: z.number().int(),
    status_code: z.number().int().nullable().openapi({ description: 'The HTTP status, or null when none came.' }),
    error: z.string().nullable().openapi({ description: 'Why the attempt failed; null for a 2xx.' }),
  })
  .openapi('WebhookDeliveryAttempt');
