/** Request and response schemas of the agent protocol (api/agent/README.md). */
import { z } from '@hono/zod-openapi';
import { DiskKeyRotation } from '../disk_keys/schemas.ts';
import { DeliveredAction } from '../actions/schemas.ts';
import { jsonValue, MAX_JSON_DEPTH, wellFormedText } from '../http/json_value.ts';
import { Uuid } from '../http/openapi.ts';
import { Hardware } from '../devices/schemas.ts';

export const BootstrapRequest = z
  .strictObject({
    device_id: Uuid,
    bootstrap_token: z
      .string()
      .min(1)
      .max(512)
      .openapi({ description: 'The one-time `agent.bootstrap_token` of the Runtime Blueprint.' }),
    hardware: Hardware.optional(),
  })
  .openapi('AgentBootstrapRequest');

export const BootstrapResponse = z
  .object({
    device_id: Uuid,
    agent_secret: z.string().openapi({
      description: 'The agent secret (256 random bits, base64url). Returned only here, stored only as a SHA-256 hash.',
      example: 'q3VfM1pX0y9Tt8c2b6JkRr4sWnE7hLgA5dZoCuYiPxQ',
    }),
  })
  .openapi('AgentBootstrapResponse');

export const CheckinRequest = z
  .strictObject({
    hardware: Hardware.optional(),
    agent_version: z.string().max(100).optional().openapi({ example: '1.4.2' }),
    inventory_hash: z
      .string()
      .regex(/^[0-9a-f]{64}$/, 'SHA-256 as 64 lowercase hex digits')
      .optional()
      .openapi({
        description:
          "The `hash` of the device's current inventory (PUT /api/v1/agent/inventory): the answer carries " +
          '`inventory: "wanted"` while the service does not hold it. Without it, the answer never asks for one.',
        example: '9f2c4a0e7b1d3c5e6f8a9b0c1d2e3f405162738495a6b7c8d9e0f1a2b3c4d5e6',
      }),
  })
  .openapi('AgentCheckinRequest');

const RoleBlueprint = z
  .object({
    merkmal: z.string().openapi({ example: 'firefox' }),
    ansible_role: z.string().openapi({ example: 'firefox' }),
  })
  .openapi('RoleBlueprint');

const Auftrag = z
  .object({
    merkmal: z.string().openapi({ example: 'libreoffice' }),
    ansible_role: z.string().openapi({
      description:
        "The role of this Merkmal's blueprint for the device's backend: what the agent runs with `fleet_state` = " +
        '`state` and `fleet_optionen` = `optionen`, so it needs nothing but its check-in to apply an order.',
      example: 'libreoffice',
    }),
    state: z.enum(['present', 'absent']),
    optionen: z.record(z.string(), z.unknown()).openapi({ example: {} }),
  })
  .openapi('Auftrag');

export const CheckinResponse = z
  .object({
    device_id: Uuid,
    blueprints: z.array(RoleBlueprint).openapi({
      description:
        "The workspace Merkmale of the device's template, resolved to roles for its backend. Independent of `auftraege`.",
    }),
    repository_url: z.string().openapi({ description: 'Where the role content lives (ROLE_REPOSITORY_URL).' }),
    poll_interval_seconds: z
      .number()
      .int()
      .openapi({ description: 'When to check in next (AGENT_POLL_INTERVAL_SECONDS).', example: 300 }),
    auftraege: z.array(Auftrag).openapi({
      description:
        "Every Merkmal of the order catalog with a blueprint for the device's backend, with its effective state after " +
        'the override resolution and its `optionen`; the same states as GET /api/v1/devices/{id}/catalog.',
    }),
    inventory_refresh_hours: z.number().int().openapi({
      description:
        'How often at most the agent refreshes its apt lists for the pending updates (INVENTORY_REFRESH_HOURS).',
      example: 6,
    }),
    inventory: z
      .literal('wanted')
      .optional()
      .openapi({
        description:
          "Present when the check-in's `inventory_hash` is not the hash of the inventory the service holds for the " +
          'device: send it with PUT /api/v1/agent/inventory. Such an answer is always a 200, never a 304.',
      }),
    disk_key_rotation: DiskKeyRotation.nullable().openapi({
      description:
        "A revealed recovery key of the device's disk that the agent replaces: it adds a new key (authorized by " +
        "this one), escrows it with `replaces: key_id` (POST /api/v1/agent/disk-keys), then removes the old key's " +
        'slot. Null when there is none.',
    }),
    actions: z.array(DeliveredAction).openapi({
      description:
        "The device's pending and delivered actions (POST /api/v1/devices/{id}/actions), oldest first (ties by id), " +
        'at most 10; `[]` when none. Part of the ETag: a new action makes the next check-in a 200. Run them in order ' +
        'after the apply of this cycle, each only after POST /api/v1/agent/actions/{id}/start answered 204, and ' +
        'report each with POST /api/v1/agent/actions/{id}/result. Never run an id twice.',
    }),
  })
  .openapi('AgentCheckinResponse');

/** The event types an agent may report; `selected` and `deselected` belong to the selection operations. */
export const agentEventTypes = ['applied', 'apply_failed', 'removed', 'remove_failed'] as const;
export type AgentEventType = (typeof agentEventTypes)[number];

const MAX_REPORT_ENTRIES = 500;

const ReportEntry = z
  .strictObject({
    // Well-formed: the entries travel to PostgreSQL as jsonb, which refuses lone surrogates.
    merkmal: wellFormedText().max(200).openapi({ example: 'libreoffice' }),
    // A plain string here, so that another event type is answered 422 invalid_event_type
    // rather than 400; the document lists the accepted values.
    event: z
      .string()
      .max(100)
      .openapi({
        enum: [...agentEventTypes],
        description: `One of ${agentEventTypes.join(', ')}.`,
        example: 'applied',
      }),
    detail: jsonValue()
      .optional()
      .openapi({
        description:
          'Anything the agent wants to keep with the event (a message, an exit code, a log excerpt); stored as `payload.detail`. ' +
          `Any JSON value nested at most ${MAX_JSON_DEPTH} levels, without lone UTF-16 surrogates in strings or keys.`,
        example: 'ansible role libreoffice applied in 42 s',
      }),
  })
  .openapi('AgentReportEntry');

export const ReportRequest = z
  .strictObject({
    entries: z.array(ReportEntry).min(1).max(MAX_REPORT_ENTRIES),
  })
  .openapi('AgentReportRequest');

export const ReportResponse = z
  .object({ accepted: z.number().int().openapi({ example: 3 }) })
  .openapi('AgentReportResponse');
