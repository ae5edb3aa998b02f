/** Groups: flat, per organization; CRUD and device membership. */
import { z } from '@hono/zod-openapi';
import { serializeDevice } from '../devices/repo.ts';
import { decodeDeviceCursor, encodeDeviceCursor, pageOrganizationDevices } from '../devices/organize_repo.ts';
import { deviceListOf } from '../devices/schemas.ts';
import type { RecordEffectiveState } from '../access/effective_state.ts';
import { recordAudit } from '../access/middleware.ts';
import { IdParams, json, jsonBody, Uuid } from '../http/openapi.ts';
import { defineRoute, newRouter } from '../access/route.ts';
import { collectionOf, decodeCursor, PageQuery, toPage } from '../http/pagination.ts';
import { requireOrganization } from '../organizations/repo.ts';
import * as repo from './repo.ts';
import * as service from './service.ts';
import { Group, GroupCreate, GroupPatch } from './schemas.ts';
import * as ops from './operations.ts';

const tags = ['Groups'];

const MemberParams = z.object({
  id: Uuid.openapi({ param: { name: 'id', in: 'path' }, description: 'The group' }),
  device_id: Uuid.openapi({ param: { name: 'device_id', in: 'path' }, description: 'The device' }),
});

const createGroup = defineRoute({
  method: 'post',
  path: '/organizations/{id}/groups',
  operationId: 'createGroup',
  tags,
  summary: 'Create a group',
  operation: ops.createGroup,
  errors: ['not_found', 'name_taken'],
  request: { params: IdParams, body: jsonBody(GroupCreate) },
  responses: { 201: json(Group, 'The new group') },
});

const listGroups = defineRoute({
  method: 'get',
  path: '/organizations/{id}/groups',
  operationId: 'listGroups',
  tags,
  summary: "List the organization's groups (creation order)",
  operation: ops.listGroups,
  errors: ['not_found'],
  request: { params: IdParams, query: PageQuery },
  responses: { 200: json(collectionOf(Group, 'GroupList'), 'A page of groups') },
});

const getGroup = defineRoute({
  method: 'get',
  path: '/groups/{id}',
  operationId: 'getGroup',
  tags,
  summary: 'Read a group',
  operation: ops.getGroup,
  errors: ['not_found'],
  request: { params: IdParams },
  responses: { 200: json(Group, 'The group') },
});

const patchGroup = defineRoute({
  method: 'patch',
  path: '/groups/{id}',
  operationId: 'updateGroup',
  tags,
  summary: 'Rename a group',
  operation: ops.updateGroup,
  errors: ['not_found', 'name_taken'],
  request: { params: IdParams, body: jsonBody(GroupPatch) },
  responses: { 200: json(Group, 'The updated group') },
});

const deleteGroup = defineRoute({
  method: 'delete',
  path: '/groups/{id}',
  operationId: 'deleteGroup',
  tags,
  summary: 'Delete a group',
  description:
    'Its memberships and Merkmal overrides go with it, archived ' +
    "members' memberships too: the group ends, the devices are not changed. " +
    'Writes a `selected` / `deselected` event for each non-archived member and catalog Merkmal whose effective state or `optionen` that changes, ' +
    'with `payload: { cause: "delete", source_id, origin, optionen, actor }` (origin and optionen of the new decision).',
  operation: ops.deleteGroup,
  errors: ['not_found'],
  request: { params: IdParams },
  responses: { 204: { description: 'Deleted' } },
});

const listGroupDevices = defineRoute({
  method: 'get',
  path: '/groups/{id}/devices',
  operationId: 'listGroupDevices',
  tags,
  summary: "List the group's devices (archived ones omitted, deprovisioned ones included)",
  operation: ops.listGroupDevices,
  errors: ['not_found'],
  description:
    'In the order they were created (ties by id). `cursor` takes a `next_cursor` (the page after) or a `prev_cursor` ' +
    '(the page before) of this list.',
  request: {
    params: IdParams,
    query: PageQuery.extend({
      cursor: z
        .string()
        .max(1000)
        .optional()
        .openapi({ description: 'A `next_cursor` or a `prev_cursor` of this list (anything else: 400).' }),
    }),
  },
  responses: { 200: json(deviceListOf('GroupDeviceList'), 'A page of devices') },
});

const addMember = defineRoute({
  method: 'put',
  path: '/groups/{id}/devices/{device_id}',
  operationId: 'addGroupMember',
  tags,
  summary: 'Add a device to the group (idempotent)',
  description:
    "A device can be in many groups. The device must belong to the group's organization " +
    '(422 `organization_mismatch`); an archived device changes no more (409 `device_archived`). ' +
    'Writes a `selected` / `deselected` event for each catalog Merkmal whose effective state or `optionen` the change alters, ' +
    'with `payload: { cause: "membership", source_id, origin, optionen, actor }` (origin and optionen of the new decision).',
  operation: ops.addGroupMember,
  errors: ['not_found', 'organization_mismatch', ['device_archived', 409]],
  request: { params: MemberParams },
  responses: { 204: { description: 'The device is a member' } },
});

const removeMember = defineRoute({
  method: 'delete',
  path: '/groups/{id}/devices/{device_id}',
  operationId: 'removeGroupMember',
  tags,
  summary: 'Remove a device from the group (idempotent: removing a non-member is 204 too)',
  description:
    "The device must belong to the group's organization (422 `organization_mismatch`); an archived device " +
    'changes no more (409 `device_archived`), its memberships stay as they are. ' +
    'Writes a `selected` / `deselected` event for each catalog Merkmal whose effective state or `optionen` the change alters, ' +
    'with `payload: { cause: "membership", source_id, origin, optionen, actor }` (origin and optionen of the new decision).',
  operation: ops.removeGroupMember,
  errors: ['not_found', 'organization_mismatch', ['device_archived', 409]],
  request: { params: MemberParams },
  responses: { 204: { description: 'The device is not a member' } },
});

/** `record`: the catalog's recorder of effective-state changes, handed in by the app (groups stand below the catalog). */
export function groupRoutes(record: RecordEffectiveState) {
  return newRouter()
    .openapi(createGroup, async (c) => {
      const { id } = c.req.valid('param');
      const { row, audit } = await service.createGroup(c.get('db'), id, c.req.valid('json'));
      recordAudit(c, audit);
      return c.json(repo.serializeGroup(row), 201);
    })
    .openapi(listGroups, async (c) => {
      const { id } = c.req.valid('param');
      const { limit, cursor } = c.req.valid('query');
      const sql = c.get('db');
      await requireOrganization(sql, id);
      const rows = await repo.listGroups(sql, id, decodeCursor(cursor), limit);
      return c.json(toPage(rows, limit, repo.serializeGroup), 200);
    })
    .openapi(getGroup, async (c) => {
      const { id } = c.req.valid('param');
      return c.json(repo.serializeGroup(await repo.requireGroup(c.get('db'), id)), 200);
    })
    .openapi(patchGroup, async (c) => {
      const { id } = c.req.valid('param');
      const patch = c.req.valid('json');
      const { row, audit } = await service.updateGroup(c.get('db'), id, patch);
      recordAudit(c, audit);
      return c.json(repo.serializeGroup(row), 200);
    })
    .openapi(deleteGroup, async (c) => {
      const { id } = c.req.valid('param');
      recordAudit(c, (await service.deleteGroup(c.get('db'), id, c.get('caller'), record)).audit);
      return c.body(null, 204);
    })
    .openapi(listGroupDevices, async (c) => {
      const { id } = c.req.valid('param');
      const { limit, cursor } = c.req.valid('query');
      const sql = c.get('db');
      const group = await repo.requireGroup(sql, id);
      // The organization's device list filtered to the group, in creation order: one way of paging both ways.
      const page = await pageOrganizationDevices(
        sql,
        group.organization_id,
        { group_id: id },
        'created_at',
        decodeDeviceCursor('created_at', cursor),
        limit,
        { pollIntervalSeconds: c.get('deps').config.agentPollIntervalSeconds },
      );
      const first = page.rows[0];
      const last = page.rows[page.rows.length - 1];
      return c.json(
        {
          items: page.rows.map(({ sort_key: _key, ...row }) => serializeDevice(row)),
          next_cursor: page.hasNext && last ? encodeDeviceCursor('created_at', last) : null,
          prev_cursor: page.hasPrevious && first ? encodeDeviceCursor('created_at', first, 'before') : null,
        },
        200,
      );
    })
    .openapi(addMember, async (c) => {
      const { id, device_id } = c.req.valid('param');
      recordAudit(c, (await service.changeMember(c.get('db'), 'add', id, device_id, c.get('caller'), record)).audit);
      return c.body(null, 204);
    })
    .openapi(removeMember, async (c) => {
      const { id, device_id } = c.req.valid('param');
      recordAudit(c, (await service.changeMember(c.get('db'), 'remove', id, device_id, c.get('caller'), record)).audit);
      return c.body(null, 204);
    });
}
