/**
 * Devices as the admin organizes them: the organization's device list with
 * `oe_id` / `group_id` filters, the device read, and moving a device to an org unit.
 * The lifecycle (deprovision, reprovision, archive, hardware, events) is in lifecycle_routes.ts.
 */
import { z } from '@hono/zod-openapi';
import { actorOf } from '../access/declaration.ts';
import type { RecordEffectiveState } from '../access/effective_state.ts';
import { recordAudit } from '../access/middleware.ts';
import { ApiError, notFound } from '../http/errors.ts';
import { IdParams, json, jsonBody, Uuid, UuidFilter } from '../http/openapi.ts';
import { defineRoute, newRouter } from '../access/route.ts';
import { PageQuery } from '../http/pagination.ts';
import {
  DEVICE_SORTS,
  decodeDeviceCursor,
  encodeDeviceCursor,
  moveDevice,
  pageOrganizationDevices,
} from './organize_repo.ts';
import { getDevice, serializeDevice } from './repo.ts';
import { readFleetStatus } from './fleet_status.ts';
import { MatchStatus } from '../vulnerabilities/schemas.ts';
import { DISK_ENCRYPTION_STATES } from './disk_encryption.ts';
import { Convergence, Device, deviceListOf, DeviceStatus, FleetStatus } from './schemas.ts';
import * as ops from './operations.ts';

const tags = ['Devices'];

const DeviceListQuery = PageQuery.extend({
  cursor: z
    .string()
    .max(1000)
    .optional()
    .openapi({
      description:
        'A `next_cursor` (the page after) or a `prev_cursor` (the page before) of this list, made in the same `sort` ' +
        '(another order, or anything else: 400).',
    }),
  oe_id: UuidFilter.optional().openapi({
    description: "Only the devices of this org unit's subtree: filed in it or in any unit below it.",
  }),
  group_id: UuidFilter.optional().openapi({ description: 'Only members of this group.' }),
  stale: z
    .enum(['true', 'false'])
    .transform((v) => v === 'true')
    .optional()
    .openapi({
      type: 'string',
      enum: ['true', 'false'],
      description:
        '`true`: only stale devices, `false`: only the others. Stale: not deprovisioned, its agent bootstrapped, and no ' +
        'check-in for three poll intervals (`3 × AGENT_POLL_INTERVAL_SECONDS`). A device that never checked in counts ' +
        'from the moment its agent secret was issued; one whose agent never bootstrapped is not stale.',
    }),
  q: z.string().min(1).max(100).optional().openapi({
    description:
      'Only devices whose serial or hostname starts with this, ignoring case (`%`, `_` and `\\` match literally).',
    example: 'arbeitsplatz',
  }),
  status: DeviceStatus.exclude(['archived']).optional().openapi({
    description: 'Only devices of this `status` (archived devices are never listed).',
    example: 'stale',
  }),
  convergence: Convergence.optional().openapi({
    description:
      'Only devices of this `convergence` (so only `active` and `stale` ones). With `merkmal`: only the `active` and ' +
      '`stale` devices whose that Merkmal has this convergence (what the fleet status counts for it).',
    example: 'failed',
  }),
  merkmal: z.string().min(1).max(100).optional().openapi({
    description: 'With `convergence` (required with it): the Merkmal whose convergence is filtered. Unknown: 422.',
    example: 'libreoffice',
  }),
  cve: z
    .string()
    .max(40)
    .regex(/^CVE-\d{4}-\d{4,}$/i, 'a CVE id such as CVE-2024-0727')
    .transform((v) => v.toUpperCase())
    .optional()
    .openapi({
      type: 'string',
      description:
        'Only devices affected by this CVE (any status and urgency, unimportant included), by their last inventory.',
      example: 'CVE-2024-0727',
    }),
  package: z.string().min(1).max(200).optional().openapi({
    description: 'Only devices that have this binary package installed, by their last inventory (exact name).',
    example: 'libssl3',
  }),
  security_updates: z
    .literal('true')
    .transform(() => true as const)
    .optional()
    .openapi({ type: 'string', enum: ['true'], description: 'Only devices with pending security updates.' }),
  reboot_required: z
    .literal('true')
    .transform(() => true as const)
    .optional()
    .openapi({ type: 'string', enum: ['true'], description: 'Only devices that need a reboot.' }),
  cve_status: MatchStatus.optional().openapi({
    description:
      'With `cve` (required with it: 400 otherwise): only the devices whose row of that CVE has this status, ' +
      '`fixed_available` (the distribution has a newer version) or `no_fix`.',
  }),
  disk_encryption: z
    .enum(DISK_ENCRYPTION_STATES)
    .optional()
    .openapi({
      description:
        'Only the devices the fleet status counts in this `disk_encryption` state: `encrypted` (a disk recovery key ' +
        'that is not rotated), `escrowed` (one of those keys escrowed or verified), `missing` (encrypted, but every ' +
        'such key `missing` from its disk) or `unencrypted` (no such key).',
      example: 'missing',
    }),
  sort: z
    .enum(DEVICE_SORTS)
    .default('serial')
    .openapi({
      description:
        'The order: `serial` (the default), `last_checkin` / `-last_checkin` (a device that never checked in counts as ' +
        'the oldest), `created_at` / `-created_at`; ties by id. A cursor continues the order it was made in ' +
        '(another order: 400).',
      example: '-last_checkin',
    }),
});

const DeviceList = deviceListOf('DeviceList');

const FleetStatusQuery = z.object({
  oe_id: UuidFilter.optional().openapi({ description: "Only the devices of this org unit's subtree." }),
  group_id: UuidFilter.optional().openapi({ description: 'Only members of this group. Not with `oe_id`.' }),
});

const fleetStatus = defineRoute({
  method: 'get',
  path: '/organizations/{id}/fleet-status',
  operationId: 'getFleetStatus',
  tags,
  summary: "What the organization's devices have: how many in each status, and per Merkmal how far they converged",
  description:
    "Over the devices that are not archived, in `oe_id`'s subtree or `group_id`'s members when given (not both: " +
    '400). A Merkmal is counted for the `active` and `stale` devices whose catalog has it, in the state the last ' +
    'change set (else the workspace default). A filter naming an unknown org unit or group is 404, one of another ' +
    'organization 404 with an organization key and 422 `organization_mismatch` for the operator.',
  operation: ops.getFleetStatus,
  errors: ['not_found', 'organization_mismatch'],
  request: { params: IdParams, query: FleetStatusQuery },
  responses: { 200: json(FleetStatus, 'The counts') },
});

const DeviceOrgUnitBody = z
  .strictObject({ oe_id: Uuid.openapi({ description: "An org unit of the device's organization." }) })
  .openapi('DeviceOrgUnit');

const listDevices = defineRoute({
  method: 'get',
  path: '/organizations/{id}/devices',
  operationId: 'listDevices',
  tags,
  summary: "List the organization's devices (archived ones omitted, deprovisioned ones included)",
  description:
    'In the order of `sort` (default: by serial). `oe_id`, `group_id`, `stale`, `q`, `status`, `convergence`, ' +
    '`merkmal`, `cve`, `cve_status`, `package`, `security_updates`, `reboot_required` and `disk_encryption` combine ' +
    '(all must hold); `cve`, `cve_status`, `package`, `security_updates` and `reboot_required` read ' +
    "each device's last inventory (a device without one matches none of them). A filter naming an unknown org " +
    'unit or group is 404, one of another ' +
    'organization 404 with an organization key and 422 `organization_mismatch` for the operator; an unknown ' +
    '`merkmal` is 422 `unknown_merkmal`.',
  operation: ops.listDevices,
  errors: ['not_found', 'organization_mismatch', ['unknown_merkmal', 422]],
  request: { params: IdParams, query: DeviceListQuery },
  responses: { 200: json(DeviceList, 'A page of devices') },
});

const getDeviceRoute = defineRoute({
  method: 'get',
  path: '/devices/{id}',
  operationId: 'getDevice',
  tags,
  summary: 'Read a device (archived ones too)',
  operation: ops.getDevice,
  errors: ['not_found'],
  request: { params: IdParams },
  responses: { 200: json(Device, 'The device') },
});

const moveDeviceRoute = defineRoute({
  method: 'put',
  path: '/devices/{id}/org-unit',
  operationId: 'moveDevice',
  tags,
  summary: 'Move a device to an org unit',
  description:
    'An unknown org unit is 404, one of another organization 422 `organization_mismatch`; ' +
    'an archived device cannot be moved (409 `device_archived`). ' +
    'Writes a `selected` / `deselected` event for each catalog Merkmal whose effective state or `optionen` the move changes, ' +
    'with `payload: { cause: "move", source_id, origin, optionen, actor }` (origin and optionen of the new decision).',
  operation: ops.moveDevice,
  errors: ['not_found', 'organization_mismatch', ['device_archived', 409]],
  request: { params: IdParams, body: jsonBody(DeviceOrgUnitBody) },
  responses: { 200: json(Device, 'The device in its new org unit') },
});

/** `record`: the catalog's recorder of effective-state changes, handed in by the app (devices stand below the catalog). */
export function deviceRoutes(record: RecordEffectiveState) {
  return newRouter()
    .openapi(fleetStatus, async (c) => {
      const { id } = c.req.valid('param');
      const { oe_id, group_id } = c.req.valid('query');
      if (oe_id !== undefined && group_id !== undefined) {
        throw new ApiError('invalid_request', 'oe_id and group_id cannot be combined', {
          details: [{ path: ['group_id'], message: 'not with oe_id' }],
        });
      }
      const status = await readFleetStatus(
        c.get('db'),
        id,
        { oe_id, group_id },
        c.get('deps').config.agentPollIntervalSeconds,
      );
      return c.json(status, 200);
    })
    .openapi(listDevices, async (c) => {
      const { id } = c.req.valid('param');
      const { limit, cursor, sort, ...filter } = c.req.valid('query');
      const page = await pageOrganizationDevices(
        c.get('db'),
        id,
        filter,
        sort,
        decodeDeviceCursor(sort, cursor),
        limit,
        { pollIntervalSeconds: c.get('deps').config.agentPollIntervalSeconds },
      );
      const first = page.rows[0];
      const last = page.rows[page.rows.length - 1];
      return c.json(
        {
          items: page.rows.map(({ sort_key: _key, ...row }) => serializeDevice(row)),
          next_cursor: page.hasNext && last ? encodeDeviceCursor(sort, last) : null,
          prev_cursor: page.hasPrevious && first ? encodeDeviceCursor(sort, first, 'before') : null,
        },
        200,
      );
    })
    .openapi(getDeviceRoute, async (c) => {
      const { id } = c.req.valid('param');
      const row = await getDevice(c.get('db'), id, c.get('deps').config.agentPollIntervalSeconds);
      if (!row) throw notFound('device', id);
      return c.json(serializeDevice(row), 200);
    })
    .openapi(moveDeviceRoute, async (c) => {
      const { id } = c.req.valid('param');
      const { oe_id } = c.req.valid('json');
      const row = await moveDevice(
        c.get('db'),
        id,
        oe_id,
        actorOf(c.get('caller')),
        record,
        c.get('deps').config.agentPollIntervalSeconds,
      );
      recordAudit(c, { organizationId: row.organization_id, targetType: 'device', targetId: id, details: { oe_id } });
      return c.json(serializeDevice(row), 200);
    });
}
