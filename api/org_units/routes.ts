/** Org units: one tree per organization; create, list, read, rename, move, set the archiving of stale devices, delete. */
import type { RecordEffectiveState } from '../access/effective_state.ts';
import { recordAudit } from '../access/middleware.ts';
import { IdParams, json, jsonBody } from '../http/openapi.ts';
import { defineRoute, newRouter } from '../access/route.ts';
import { collectionOf, decodeCursor, PageQuery, toPage } from '../http/pagination.ts';
import { requireOrganization } from '../organizations/repo.ts';
import * as repo from './repo.ts';
import { createUnit, deleteUnit, updateUnit } from './service.ts';
import { OrgUnit, OrgUnitCreate, OrgUnitPatch } from './schemas.ts';
import * as ops from './operations.ts';

const tags = ['Org units'];

const createOrgUnit = defineRoute({
  method: 'post',
  path: '/organizations/{id}/org-units',
  operationId: 'createOrgUnit',
  tags,
  summary: 'Create an org unit',
  description:
    'Creates a unit at the top level (`parent_id` absent or `null`) or under a unit of the same organization. ' +
    'A `parent_id` that does not exist is 404, one of another organization 422 `organization_mismatch`. ' +
    '`archive_stale_after_days` may be given here as in PATCH.',
  operation: ops.createOrgUnit,
  errors: ['not_found', 'organization_mismatch', 'name_taken'],
  request: { params: IdParams, body: jsonBody(OrgUnitCreate) },
  responses: { 201: json(OrgUnit, 'The new org unit') },
});

const listOrgUnits = defineRoute({
  method: 'get',
  path: '/organizations/{id}/org-units',
  operationId: 'listOrgUnits',
  tags,
  summary: "List the organization's org units (the whole tree, flat, in creation order)",
  description: 'Rebuild the tree from `parent_id`. Includes the protected unit "Neue Geräte".',
  operation: ops.listOrgUnits,
  errors: ['not_found'],
  request: { params: IdParams, query: PageQuery },
  responses: { 200: json(collectionOf(OrgUnit, 'OrgUnitList'), 'A page of org units') },
});

const getOrgUnit = defineRoute({
  method: 'get',
  path: '/org-units/{id}',
  operationId: 'getOrgUnit',
  tags,
  summary: 'Read an org unit',
  operation: ops.getOrgUnit,
  errors: ['not_found'],
  request: { params: IdParams },
  responses: { 200: json(OrgUnit, 'The org unit') },
});

const patchOrgUnit = defineRoute({
  method: 'patch',
  path: '/org-units/{id}',
  operationId: 'updateOrgUnit',
  tags,
  summary: 'Rename and/or move an org unit, or set how long its stale devices stay',
  description:
    '`parent_id` moves the unit (with its subtree); `null` moves it to the top level. ' +
    '`archive_stale_after_days` (1–3650, or `null` to inherit from the parent) sets after how many days of being ' +
    'stale the devices of the unit and of the units below it that have no value of their own are archived; ' +
    'it may be set on "Neue Geräte" too. ' +
    'The protected unit "Neue Geräte" cannot be renamed or moved (409 `protected_org_unit`, even to the same values). ' +
    'A move under the unit itself or one of its descendants is 409 `org_unit_cycle`; ' +
    'a parent of another organization is 422 `organization_mismatch`, an unknown parent 404. ' +
    'A move writes a `selected` / `deselected` event for each non-archived device of the subtree and catalog Merkmal whose ' +
    'effective state or `optionen` it changes, with `payload: { cause: "move", source_id, origin, optionen, actor }` ' +
    '(source_id: the unit; origin and optionen of the new decision).',
  operation: ops.updateOrgUnit,
  errors: ['not_found', 'protected_org_unit', 'org_unit_cycle', 'organization_mismatch', 'name_taken'],
  request: { params: IdParams, body: jsonBody(OrgUnitPatch) },
  responses: { 200: json(OrgUnit, 'The updated org unit') },
});

const deleteOrgUnit = defineRoute({
  method: 'delete',
  path: '/org-units/{id}',
  operationId: 'deleteOrgUnit',
  tags,
  summary: 'Delete an empty org unit',
  description:
    'Only a unit without child units and without (non-archived) devices can be deleted (else 409 `org_unit_not_empty`); ' +
    'archived devices still filed under it are moved to "Neue Geräte". Its Merkmal overrides go with it ' +
    '(no live device is under it, so no effective state changes). "Neue Geräte" cannot be deleted (409 `protected_org_unit`).',
  operation: ops.deleteOrgUnit,
  errors: ['not_found', 'protected_org_unit', 'org_unit_not_empty'],
  request: { params: IdParams },
  responses: { 204: { description: 'Deleted' } },
});

/** `record`: the catalog's recorder of effective-state changes, handed in by the app (org units stand below the catalog). */
export function orgUnitRoutes(record: RecordEffectiveState) {
  return newRouter()
    .openapi(createOrgUnit, async (c) => {
      const { id } = c.req.valid('param');
      const body = c.req.valid('json');
      const sql = c.get('db');
      const { row, audit } = await createUnit(sql, id, body);
      recordAudit(c, audit);
      const [counted] = await repo.withDeviceCounts(sql, [row]);
      return c.json(repo.serializeOrgUnit(counted!), 201);
    })
    .openapi(listOrgUnits, async (c) => {
      const { id } = c.req.valid('param');
      const { limit, cursor } = c.req.valid('query');
      const sql = c.get('db');
      await requireOrganization(sql, id);
      const rows = await repo.listOrgUnits(sql, id, decodeCursor(cursor), limit);
      return c.json(toPage(await repo.withDeviceCounts(sql, rows), limit, repo.serializeOrgUnit), 200);
    })
    .openapi(getOrgUnit, async (c) => {
      const { id } = c.req.valid('param');
      const sql = c.get('db');
      const [counted] = await repo.withDeviceCounts(sql, [await repo.requireOrgUnit(sql, id)]);
      return c.json(repo.serializeOrgUnit(counted!), 200);
    })
    .openapi(patchOrgUnit, async (c) => {
      const { id } = c.req.valid('param');
      const patch = c.req.valid('json');
      const sql = c.get('db');
      const { row, audit } = await updateUnit(sql, id, patch, c.get('caller'), record);
      recordAudit(c, audit);
      const [counted] = await repo.withDeviceCounts(sql, [row]);
      return c.json(repo.serializeOrgUnit(counted!), 200);
    })
    .openapi(deleteOrgUnit, async (c) => {
      const { id } = c.req.valid('param');
      recordAudit(c, (await deleteUnit(c.get('db'), id, c.get('caller'), record)).audit);
      return c.body(null, 204);
    });
}
