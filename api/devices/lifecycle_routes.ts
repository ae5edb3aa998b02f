/**
 * Device lifecycle and reads: deprovision, reprovision, archive, the last
 * reported hardware and the device's Merkmal events.
 *
 * Lifecycle as the agent sees it: deprovisioned → check-in and report answer 403
 * `device_deprovisioned`; archived → 403 `device_archived`; reprovision clears both the
 * deprovisioning and the agent secret (and voids earlier bootstrap tokens), so the device
 * needs a new resolve and bootstrap. Archiving is final.
 */
import { z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { recordAudit } from '../access/middleware.ts';
import { type Transition, transitionDevice } from './lifecycle_service.ts';
import { notFound } from '../http/errors.ts';
import { IdParams, iso, json, Timestamp, Uuid } from '../http/openapi.ts';
import { defineRoute, newRouter } from '../access/route.ts';
import { collectionOf, decodeSeqCursor, encodeSeqCursor, PageQuery, toPage } from '../http/pagination.ts';
import * as lifecycle from './lifecycle_repo.ts';
import { serializeDevice } from './repo.ts';
import type { AppEnv } from '../access/app_env.ts';
import { Device } from './schemas.ts';
import * as ops from './operations.ts';

const tags = ['Devices'];

const DeviceHardware = z
  .object({
    device_id: Uuid,
    hardware: z
      .record(z.string(), z.unknown())
      .nullable()
      .openapi({ description: 'As last reported by bootstrap or check-in; null when never reported.' }),
    reported_at: Timestamp.nullable(),
  })
  .openapi('DeviceHardware');

const DeviceEvent = z
  .object({
    id: Uuid,
    device_id: Uuid,
    merkmal: z.string().openapi({ example: 'libreoffice' }),
    type: z.enum(['selected', 'deselected', 'applied', 'apply_failed', 'removed', 'remove_failed']),
    payload: z.record(z.string(), z.unknown()).openapi({
      description:
        'Agent events: `{ detail }` as reported (or `{}`). Selection events: what the selection recorded (e.g. `origin`, `source_id`).',
    }),
    created_at: Timestamp,
  })
  .openapi('DeviceEvent');

const deprovision = defineRoute({
  method: 'post',
  path: '/devices/{id}/deprovision',
  operationId: 'deprovisionDevice',
  tags,
  summary: 'Deprovision a device',
  description:
    "Sets `deprovisioned_at`; the device stays in lists. The agent's check-in and report answer 403 " +
    '`device_deprovisioned` from now on. Idempotent: a second call keeps the first timestamp. An archived device ' +
    'changes no more: 409 `device_archived`, nothing written.',
  operation: ops.deprovisionDevice,
  errors: ['not_found', ['device_archived', 409]],
  request: { params: IdParams },
  responses: { 200: json(Device, 'The device') },
});

const reprovision = defineRoute({
  method: 'post',
  path: '/devices/{id}/reprovision',
  operationId: 'reprovisionDevice',
  tags,
  summary: 'Reprovision a device',
  description:
    'Clears `deprovisioned_at` and the agent secret (`agent_secret_issued_at` becomes null) and voids any bootstrap ' +
    'token issued before, so the next resolve and bootstrap issue a new secret; the old secret stops working at ' +
    'once. Allowed on any device that is not archived (409 `device_archived`).',
  operation: ops.reprovisionDevice,
  errors: ['not_found', ['device_archived', 409]],
  request: { params: IdParams },
  responses: { 200: json(Device, 'The device, ready for a new bootstrap') },
});

const archive = defineRoute({
  method: 'post',
  path: '/devices/{id}/archive',
  operationId: 'archiveDevice',
  tags,
  summary: 'Archive a device',
  description:
    "Sets `archived_at`: the device leaves device lists (GET /devices/{id} still shows it), the agent's calls answer " +
    '403 `device_archived`, and its serial is free for a new device. Final; idempotent (a second call keeps the ' +
    'first timestamp).',
  operation: ops.archiveDevice,
  errors: ['not_found'],
  request: { params: IdParams },
  responses: { 200: json(Device, 'The archived device') },
});

const getHardware = defineRoute({
  method: 'get',
  path: '/devices/{id}/hardware',
  operationId: 'getDeviceHardware',
  tags,
  summary: 'The hardware the device last reported',
  operation: ops.getDeviceHardware,
  errors: ['not_found'],
  request: { params: IdParams },
  responses: { 200: json(DeviceHardware, 'The last hardware report, or nulls') },
});

const listEvents = defineRoute({
  method: 'get',
  path: '/devices/{id}/events',
  operationId: 'listDeviceEvents',
  tags,
  summary: "The device's Merkmal events, newest first",
  description:
    'Selections (`selected`, `deselected`) and agent reports (`applied`, `apply_failed`, `removed`, `remove_failed`), ' +
    'newest first in the order they were written, also within one millisecond: the entries of one report list ' +
    'last entry first.',
  operation: ops.listDeviceEvents,
  errors: ['not_found'],
  request: { params: IdParams, query: PageQuery },
  responses: { 200: json(collectionOf(DeviceEvent, 'DeviceEventList'), 'A page of events, newest first') },
});

/** The documented fields only: seq orders the list and its cursor but is not shown. */
function serializeEvent(row: lifecycle.EventRow): z.infer<typeof DeviceEvent> {
  return {
    id: row.id,
    device_id: row.device_id,
    merkmal: row.merkmal,
    type: row.type as z.infer<typeof DeviceEvent>['type'],
    payload: row.payload,
    created_at: iso(row.created_at),
  };
}

/** A transition by the shared service, audited on the device it changed. */
async function transitioned(c: Context<AppEnv>, transition: Transition, id: string) {
  const { row, audit } = await transitionDevice(
    c.get('db'),
    transition,
    id,
    c.get('deps').config.agentPollIntervalSeconds,
  );
  recordAudit(c, audit);
  return serializeDevice(row);
}

export function deviceLifecycleRoutes() {
  return newRouter()
    .openapi(deprovision, async (c) => c.json(await transitioned(c, 'deprovision', c.req.valid('param').id), 200))
    .openapi(reprovision, async (c) => c.json(await transitioned(c, 'reprovision', c.req.valid('param').id), 200))
    .openapi(archive, async (c) => c.json(await transitioned(c, 'archive', c.req.valid('param').id), 200))
    .openapi(getHardware, async (c) => {
      const { id } = c.req.valid('param');
      const row = await lifecycle.getHardware(c.get('db'), id);
      if (!row) throw notFound('device', id);
      return c.json({ device_id: row.device_id, hardware: row.hardware, reported_at: iso(row.reported_at) }, 200);
    })
    .openapi(listEvents, async (c) => {
      const sql = c.get('db');
      const { id } = c.req.valid('param');
      const { limit, cursor } = c.req.valid('query');
      const before = decodeSeqCursor(cursor);
      const [exists, rows] = await Promise.all([
        lifecycle.deviceExists(sql, id),
        lifecycle.listEvents(sql, id, before, limit),
      ]);
      if (!exists) throw notFound('device', id);
      return c.json(
        toPage(rows, limit, serializeEvent, (r) => encodeSeqCursor(r.seq)),
        200,
      );
    });
}
