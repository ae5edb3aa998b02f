/**
 * Device actions (api/actions/README.md): an admin asks a device to reboot, apply now,
 * apply updates or run a script; it waits for the device's next check-in. Created,
 * listed, read and canceled here; the agent starts and finishes them (api/agent/routes.ts).
 */
import { recordAudit } from '../access/middleware.ts';
import { defineRoute, newRouter } from '../access/route.ts';
import { IdParams, json, jsonBody } from '../http/openapi.ts';
import * as ops from './operations.ts';
import { Action, ActionCreate, ActionList, ActionQuery, MAX_OUTPUT_BYTES, MAX_SCRIPT_BYTES } from './schemas.ts';
import { cancelAction, createAction, getAction, listActions } from './service.ts';

const tags = ['Device actions'];

const VIEWER_SEES =
  'A viewer key reads type, status and times, never a script or an output: `parameters.script` and ' +
  '`result.output` are null.';

const createRoute = defineRoute({
  method: 'post',
  path: '/devices/{id}/actions',
  operationId: 'createDeviceAction',
  tags,
  summary: 'Ask a device to reboot, apply now, apply its updates or run a script',
  description:
    "The action waits (`pending`) for the device's next check-in, whose answer carries it (`delivered`); the agent " +
    'runs it once, after the apply of that cycle, and reports its result. Types and parameters (defaults filled in ' +
    'every read): `reboot` `{ delay_seconds? (0–3600, default 60), message? (≤ 200 characters, shown to logged-in ' +
    'users) }`; `apply_now` `{}` (a full apply at once); `apply_updates` `{ security_only? (default true) }`; `script` ' +
    `\`{ interpreter: "sh" | "bash" | "python3", script (1–${MAX_SCRIPT_BYTES} bytes of UTF-8), timeout_seconds? ` +
    '(1–3600, default 600) }`, run as root. `expires_at`: default 7 days ahead, at least 60 s and at most 30 days ' +
    '(else 400); not started by then, the action is `expired` and never runs. Audited as `action.create` (a ' +
    'script as its SHA-256 and size, never its text). 409 `device_archived` / `device_deprovisioned` for a device ' +
    'that can take no actions.',
  operation: ops.createAction,
  errors: ['not_found', ['device_archived', 409], ['device_deprovisioned', 409]],
  request: { params: IdParams, body: jsonBody(ActionCreate) },
  responses: { 201: json(Action, 'The action, pending') },
});

const listRoute = defineRoute({
  method: 'get',
  path: '/devices/{id}/actions',
  operationId: 'listDeviceActions',
  tags,
  summary: "A device's actions, newest first",
  description: `Its queue and its history; \`status\` narrows it. ${VIEWER_SEES}`,
  operation: ops.listActions,
  errors: ['not_found'],
  request: { params: IdParams, query: ActionQuery },
  responses: { 200: json(ActionList, 'A page of actions, newest first') },
});

const getRoute = defineRoute({
  method: 'get',
  path: '/actions/{id}',
  operationId: 'getDeviceAction',
  tags,
  summary: 'An action, with its result once the agent reported it',
  description:
    `\`result.output\` is the last ${MAX_OUTPUT_BYTES} bytes of stdout and stderr together. An action not started ` +
    `by its \`expires_at\` reads \`expired\`. ${VIEWER_SEES}`,
  operation: ops.getAction,
  errors: ['not_found'],
  request: { params: IdParams },
  responses: { 200: json(Action, 'The action') },
});

const cancelRoute = defineRoute({
  method: 'post',
  path: '/actions/{id}/cancel',
  operationId: 'cancelDeviceAction',
  tags,
  summary: 'Cancel an action that has not started',
  description:
    'A `pending` or `delivered` action becomes `canceled`: the agent is refused when it tries to start it. Any other ' +
    '(running, finished, expired, canceled) is 409 `action_not_cancelable`. Audited as `action.cancel`.',
  operation: ops.cancelAction,
  errors: ['not_found', 'action_not_cancelable'],
  request: { params: IdParams },
  responses: { 200: json(Action, 'The action, canceled') },
});

export function actionRoutes() {
  return newRouter()
    .openapi(createRoute, async (c) => {
      const { id } = c.req.valid('param');
      const { action, audit } = await createAction(c.get('db'), id, c.req.valid('json'), c.get('caller'));
      recordAudit(c, audit);
      return c.json(action, 201);
    })
    .openapi(listRoute, async (c) => {
      const { id } = c.req.valid('param');
      return c.json(await listActions(c.get('db'), id, c.req.valid('query'), c.get('caller')), 200);
    })
    .openapi(getRoute, async (c) => {
      const { id } = c.req.valid('param');
      return c.json(await getAction(c.get('db'), id, c.get('caller')), 200);
    })
    .openapi(cancelRoute, async (c) => {
      const { id } = c.req.valid('param');
      const { action, audit } = await cancelAction(c.get('db'), id);
      recordAudit(c, audit);
      return c.json(action, 200);
    });
}
