/**
 * The order catalog (api/catalog/README.md): the effective catalog of a device, and select /
 * deselect / unset of a Merkmal at the three scopes (`devices`, `org-units`, `groups`).
 */
import { z } from '@hono/zod-openapi';
import type { MiddlewareHandler } from 'hono';
import { recordAudit } from '../access/middleware.ts';
import type { AppEnv } from '../access/app_env.ts';
import { ApiError, notFound } from '../http/errors.ts';
import { IdParams, json, Uuid } from '../http/openapi.ts';
import { PageQuery, pageOfList } from '../http/pagination.ts';
import { defineRoute, newRouter } from '../access/route.ts';
import * as repo from './repo.ts';
import { changeSelection } from './service.ts';
import { CatalogExplanation, CatalogOverride, CatalogOverrideList, DeviceCatalog, SelectionBody } from './schemas.ts';
import { loadOutcomes } from './outcomes.ts';
import { loadCatalogStates, loadExplanation } from './state.ts';
import * as ops from './operations.ts';

const tags = ['Order catalog'];

const MerkmalParams = z.object({
  id: Uuid.openapi({ param: { name: 'id', in: 'path' } }),
  merkmal: z
    .string()
    .openapi({ param: { name: 'merkmal', in: 'path' }, example: 'libreoffice', description: 'A Merkmal key' }),
});

const selectionErrors = ['not_found', 'unknown_merkmal', 'not_in_catalog'] as const;

/** A device's own selections also answer 409 `device_archived`: an archived device changes no more. */
function selectionErrorsOf(s: (typeof scopes)[number]) {
  return s.scope === 'devices' ? ([...selectionErrors, ['device_archived', 409]] as const) : selectionErrors;
}

const scopes = [
  {
    scope: 'devices',
    op: 'Device',
    what: 'a device',
    reach:
      'Writes a `selected` / `deselected` event for the device every time, with `payload: { cause: "device", origin: "geraet", source_id, optionen, actor }`. An archived device changes no more: 409 `device_archived`, nothing written.',
  },
  {
    scope: 'org-units',
    op: 'OrgUnit',
    what: 'an org unit',
    reach:
      'Reaches every device of the unit\'s subtree. Writes a `selected` / `deselected` event (by the new effective state) for each non-archived device whose effective state or `optionen` change, with `payload: { cause: "oe", origin: "oe", source_id, optionen, actor }`.',
  },
  {
    scope: 'groups',
    op: 'Group',
    what: 'a group',
    reach:
      'Reaches the group\'s members. Writes a `selected` / `deselected` event (by the new effective state) for each non-archived member whose effective state or `optionen` change, with `payload: { cause: "gruppe", origin: "gruppe", source_id, optionen, actor }`.',
  },
] as const;

const catalogNote =
  'A Merkmal key that does not exist is 422 `unknown_merkmal`. A Merkmal that is not selectable is 422 `not_in_catalog`: ' +
  "`im_auftragskatalog` false, or no blueprint for the device's backend (at org units and groups, which span backends: no blueprint for any backend).";

/**
 * The selection body is optional: a POST without a body, or with an empty one even when it
 * says `Content-Type: application/json` (as many HTTP clients send), means `{}`.
 */
const emptyBodyIsNoBody: MiddlewareHandler<AppEnv> = async (c, next) => {
  const raw = c.req.raw;
  if (raw.headers.has('content-type') && (raw.body === null || (await raw.clone().text()).trim() === '')) {
    const headers = new Headers(raw.headers);
    headers.delete('content-type');
    headers.delete('content-length');
    c.req.raw = new Request(raw.url, { method: raw.method, headers });
  }
  await next();
};

function selectionRoute(s: (typeof scopes)[number], verb: 'select' | 'deselect') {
  const state = verb === 'select' ? 'present' : 'absent';
  return defineRoute({
    method: 'post',
    path: `/${s.scope}/{id}/catalog/{merkmal}/${verb}`,
    operationId: `${verb}${s.op}Merkmal`,
    tags,
    summary: `${verb === 'select' ? 'Select' : 'Deselect'} a catalog Merkmal for ${s.what} (override \`${state}\`)`,
    description:
      `Sets the override of the Merkmal at this scope to \`${state}\`, replacing any earlier one. ` +
      'The body is optional; `optionen` (a JSON object, else 400) become the options of the order when this override decides it. ' +
      `${s.reach} ${catalogNote}`,
    operation: ops.selectionOperations[s.scope][verb],
    errors: selectionErrorsOf(s),
    middleware: [emptyBodyIsNoBody] as const,
    request: {
      params: MerkmalParams,
      body: { required: false, content: { 'application/json': { schema: SelectionBody } } },
    },
    responses: { 200: json(CatalogOverride, `The override now set at this scope (\`state: "${state}"\`)`) },
  });
}

function unsetRoute(s: (typeof scopes)[number]) {
  return defineRoute({
    method: 'delete',
    path: `/${s.scope}/{id}/catalog/{merkmal}`,
    operationId: `unset${s.op}Merkmal`,
    tags,
    summary: `Unset a catalog Merkmal for ${s.what} (remove the override: inherit)`,
    description:
      `Idempotent: 204 also when no override was set. Writes a \`selected\` / \`deselected\` event with \`payload: { cause, origin, source_id, unset: true, actor }\` ` +
      `for each non-archived device whose effective state or \`optionen\` change${s.scope === 'devices' ? ' (the device itself; an archived device is 409 `device_archived`)' : ''}. ${catalogNote}`,
    operation: ops.selectionOperations[s.scope].unset,
    errors: selectionErrorsOf(s),
    request: { params: MerkmalParams },
    responses: { 204: { description: 'No override of the Merkmal at this scope' } },
  });
}

const getDeviceCatalog = defineRoute({
  method: 'get',
  path: '/devices/{id}/catalog',
  operationId: 'getDeviceCatalog',
  tags,
  summary: 'The effective order catalog of a device',
  description:
    "Every Merkmal with `im_auftragskatalog` that has a blueprint for the device's backend, ordered by key, with its " +
    'effective `state`, its `origin` and `optionen`, by the override resolution: workspace default; the nearest ' +
    "org unit with an override; a strict majority of the device's groups with an override (optionen from the most recently " +
    "changed override on the winning side); the device's own override always wins. The same rule gives the agent's `auftraege`.",
  operation: ops.getDeviceCatalog,
  errors: ['not_found'],
  request: { params: IdParams, query: PageQuery },
  responses: { 200: json(DeviceCatalog, 'The effective catalog') },
});

const explainDeviceMerkmal = defineRoute({
  method: 'get',
  path: '/devices/{id}/catalog/{merkmal}/explain',
  operationId: 'explainDeviceMerkmal',
  tags,
  summary: 'Why a Merkmal of a device has its state: every step of the resolution',
  description:
    'The decision (`state`, `origin`, `optionen`, exactly as `GET /devices/{id}/catalog` lists them) and the steps ' +
    "it was taken from, in order: the workspace default; every org unit from the device's own up to the " +
    "top with its override or `null` (the nearest non-null one decides); the votes of the device's groups that override " +
    "the Merkmal (a strict majority wins); the device's own override (`null` without one; it always wins). " +
    "404 for an unknown device or a Merkmal that is not in the device's catalog.",
  operation: ops.explainDeviceMerkmal,
  errors: ['not_found'],
  request: { params: MerkmalParams },
  responses: { 200: json(CatalogExplanation, 'The decision and its steps') },
});

const listOrgUnitOverrides = defineRoute({
  method: 'get',
  path: '/org-units/{id}/catalog',
  operationId: 'listOrgUnitCatalog',
  tags,
  summary: 'The Merkmal overrides set at an org unit (not inherited ones)',
  operation: ops.listOrgUnitCatalog,
  errors: ['not_found'],
  request: { params: IdParams, query: PageQuery },
  responses: { 200: json(CatalogOverrideList, 'The overrides of the org unit') },
});

const listGroupOverrides = defineRoute({
  method: 'get',
  path: '/groups/{id}/catalog',
  operationId: 'listGroupCatalog',
  tags,
  summary: 'The Merkmal overrides set at a group',
  operation: ops.listGroupCatalog,
  errors: ['not_found'],
  request: { params: IdParams, query: PageQuery },
  responses: { 200: json(CatalogOverrideList, 'The overrides of the group') },
});

export function catalogRoutes() {
  const router = newRouter()
    .openapi(getDeviceCatalog, async (c) => {
      const { id } = c.req.valid('param');
      const { limit, cursor } = c.req.valid('query');
      const db = c.get('db');
      const states = await loadCatalogStates(db, id);
      if (states === null) throw notFound('device', id);
      // The page first (a refused cursor reads nothing more), then the reports of its Merkmale.
      const page = pageOfList(states, (s) => [s.merkmal], limit, cursor);
      const outcomes = await loadOutcomes(db, id, page.items);
      return c.json(
        {
          items: page.items.map(({ merkmal, name, kategorie, state, origin, optionen }) => {
            const outcome = outcomes.get(merkmal);
            const reported = outcome?.reported ?? null;
            return {
              merkmal,
              name,
              kategorie,
              state,
              origin,
              optionen,
              reported: reported && { event: reported.event, at: reported.at.toISOString(), detail: reported.detail },
              // The device was deleted between the two reads: nothing was reported since.
              convergence: outcome?.convergence ?? 'pending',
            };
          }),
          next_cursor: page.next_cursor,
        },
        200,
      );
    })
    .openapi(explainDeviceMerkmal, async (c) => {
      const { id, merkmal } = c.req.valid('param');
      const explanation = await loadExplanation(c.get('db'), id, merkmal);
      if (explanation === 'no_device') throw notFound('device', id);
      if (explanation === 'not_in_catalog') {
        throw new ApiError('not_found', `Merkmal ${merkmal} is not in the catalog of device ${id}`);
      }
      return c.json(explanation, 200);
    })
    .openapi(listOrgUnitOverrides, async (c) => {
      const { id } = c.req.valid('param');
      const { limit, cursor } = c.req.valid('query');
      const items = await repo.listOverrides(c.get('db'), 'org-units', id);
      return c.json(
        pageOfList(items, (o) => [o.merkmal], limit, cursor),
        200,
      );
    })
    .openapi(listGroupOverrides, async (c) => {
      const { id } = c.req.valid('param');
      const { limit, cursor } = c.req.valid('query');
      const items = await repo.listOverrides(c.get('db'), 'groups', id);
      return c.json(
        pageOfList(items, (o) => [o.merkmal], limit, cursor),
        200,
      );
    });

  for (const s of scopes) {
    for (const verb of ['select', 'deselect'] as const) {
      router.openapi(selectionRoute(s, verb), async (c) => {
        const { id, merkmal } = c.req.valid('param');
        const { optionen = {} } = c.req.valid('json') as z.infer<typeof SelectionBody>;
        const state = verb === 'select' ? 'present' : 'absent';
        const change = { kind: 'set', state, optionen } as const;
        const { override, audit } = await changeSelection(c.get('db'), s.scope, id, merkmal, change, c.get('caller'));
        recordAudit(c, audit);
        return c.json(override!, 200);
      });
    }
    router.openapi(unsetRoute(s), async (c) => {
      const { id, merkmal } = c.req.valid('param');
      const { audit } = await changeSelection(c.get('db'), s.scope, id, merkmal, { kind: 'unset' }, c.get('caller'));
      recordAudit(c, audit);
      return c.body(null, 204);
    });
  }
  return router;
}
