/**
 * Rollouts (api/rollouts/README.md): a select, deselect or unset of one Merkmal at an org
 * unit or a group, made in rings of the devices it alters and stopped by itself when too
 * many fail; created, listed, read (with its devices), paused, resumed and aborted here.
 */
import { recordAudit } from '../access/middleware.ts';
import { defineRoute, newRouter } from '../access/route.ts';
import { IdParams, json, jsonBody } from '../http/openapi.ts';
import * as ops from './operations.ts';
import { Rollout, RolloutCreate, RolloutDeviceList, RolloutDeviceQuery, RolloutList, RolloutQuery } from './schemas.ts';
import {
  abortRollout,
  createRollout,
  getRollout,
  listRolloutDevices,
  listRollouts,
  pauseRollout,
  resumeRollout,
} from './service.ts';

const tags = ['Rollouts'];

const createRolloutRoute = defineRoute({
  method: 'post',
  path: '/organizations/{id}/rollouts',
  operationId: 'createRollout',
  tags,
  summary: 'Start a rollout: a select, deselect or unset at an org unit or a group, in rings',
  description:
    "Takes the devices of the scope (an org unit's subtree, a group's members) whose effective state or `optionen` " +
    'of the Merkmal the change alters, not archived or deprovisioned, and puts each in a ring by a stable hash of ' +
    'rollout and device id. Ring 0 opens at once: its devices get the new state at their next check-in (their ETag ' +
    'changes), each with a `selected` / `deselected` event with `payload.cause: "rollout"`; every other device keeps ' +
    'its state. Devices that enter the scope later get the change when the rollout completes. Webhook ' +
    "`rollout.ring_opened` (ring 0). `scope_id` unknown, or another organization's for an organization key, is 404 " +
    "(the operator gets 422 `organization_mismatch` for another organization's). The Merkmal checks are those of a " +
    'selection (422 `unknown_merkmal`, `not_in_catalog`). 409 `rollout_in_progress` while another rollout of the ' +
    'scope and Merkmal is running or paused.\n\n' +
    'With `device_action` (`{ type, parameters? }` as `POST /devices/{id}/actions` takes them) instead of `merkmal`, ' +
    "`action` and `optionen` (which then read null): its devices are the scope's devices not archived or " +
    "deprovisioned at creation, online or not; each ring's devices get the action (with `rollout_id`) when the " +
    'ring opens, expiring 7 days later. The same judge counts `succeeded` as converged, `failed` and `expired` as ' +
    'failed, the rest as pending. Abort cancels its actions that have not started; devices entering the scope ' +
    'later get nothing; several may run on one scope. A `script` needs `expected_devices`, the count the admin ' +
    "confirmed: another count now is 409 `device_count_changed`. The audit keeps a script's SHA-256 and size.",
  operation: ops.createRollout,
  errors: [
    'not_found',
    'unknown_merkmal',
    'not_in_catalog',
    'organization_mismatch',
    'rollout_in_progress',
    'device_count_changed',
  ],
  request: { params: IdParams, body: jsonBody(RolloutCreate) },
  responses: { 201: json(Rollout, 'The rollout, running, ring 0 open') },
});

const listRolloutsRoute = defineRoute({
  method: 'get',
  path: '/organizations/{id}/rollouts',
  operationId: 'listRollouts',
  tags,
  summary: "List the organization's rollouts, newest first",
  operation: ops.listRollouts,
  errors: ['not_found'],
  request: { params: IdParams, query: RolloutQuery },
  responses: { 200: json(RolloutList, 'A page of rollouts, newest first, each with its rings') },
});

const getRolloutRoute = defineRoute({
  method: 'get',
  path: '/rollouts/{id}',
  operationId: 'getRollout',
  tags,
  summary: 'A rollout with the figures of each ring',
  operation: ops.getRollout,
  errors: ['not_found'],
  request: { params: IdParams },
  responses: { 200: json(Rollout, 'The rollout') },
});

const listRolloutDevicesRoute = defineRoute({
  method: 'get',
  path: '/rollouts/{id}/devices',
  operationId: 'listRolloutDevices',
  tags,
  summary: "The rollout's devices: each with its ring, convergence, last report and whether it is stale",
  description:
    'Every device the rollout took at its creation, by ring, serial and id; `ring` and `convergence` narrow it to ' +
    "a ring's figure (the portal links each ring's converged, pending and failed figures here). `convergence` is " +
    "the device's on the rollout's Merkmal since its last change, null while its ring is not opened; `reported` " +
    "the agent's last report of the Merkmal. Stale devices are listed (`stale: true`) though the ring figures and " +
    "the judge count only live ones. A `ring` the rollout does not have is 400; another organization's rollout 404.",
  operation: ops.listRolloutDevices,
  errors: ['not_found'],
  request: { params: IdParams, query: RolloutDeviceQuery },
  responses: { 200: json(RolloutDeviceList, 'A page of the devices') },
});

const transitions = [
  {
    verb: 'pause',
    operation: ops.pauseRollout,
    service: pauseRollout,
    summary: 'Pause a running rollout (reason `manual`)',
    description:
      'No further ring opens; the devices of the open rings keep the change. Webhook `rollout.paused`. ' +
      'A paused rollout is answered as it is. 409 `rollout_not_active` for a completed or aborted one.',
    result: 'The rollout, paused',
  },
  {
    verb: 'resume',
    operation: ops.resumeRollout,
    service: resumeRollout,
    summary: 'Resume a paused rollout',
    description:
      'Judging goes on at once. After an automatic pause (`paused_reason: "failure_ratio"`) the failures of the open ' +
      'ring so far are accepted: only failures beyond them count. A running rollout is answered as it is. ' +
      '409 `rollout_not_active` for a completed or aborted one.',
    result: 'The rollout, running',
  },
  {
    verb: 'abort',
    operation: ops.abortRollout,
    service: abortRollout,
    summary: 'Abort a running or paused rollout: every changed device gets its previous state back',
    description:
      'Every device of an opened ring gets its previous state back at its next check-in, with a `selected` / ' +
      '`deselected` event (`payload.cause: "rollout"`); nothing is written at the scope. Webhook `rollout.aborted`. ' +
      '409 `rollout_not_active` for a completed or aborted one.',
    result: 'The rollout, aborted',
  },
] as const;

function transitionRoute(t: (typeof transitions)[number]) {
  return defineRoute({
    method: 'post',
    path: `/rollouts/{id}/${t.verb}`,
    operationId: `${t.verb}Rollout`,
    tags,
    summary: t.summary,
    description: t.description,
    operation: t.operation,
    errors: ['not_found', 'rollout_not_active'],
    request: { params: IdParams },
    responses: { 200: json(Rollout, t.result) },
  });
}

export function rolloutRoutes() {
  const router = newRouter()
    .openapi(createRolloutRoute, async (c) => {
      const { id } = c.req.valid('param');
      const { rollout, audit } = await createRollout(
        c.get('db'),
        id,
        c.req.valid('json'),
        c.get('caller'),
        c.get('deps').config.agentPollIntervalSeconds,
      );
      recordAudit(c, audit);
      return c.json(rollout, 201);
    })
    .openapi(listRolloutsRoute, async (c) => {
      const { id } = c.req.valid('param');
      const page = await listRollouts(
        c.get('db'),
        id,
        c.req.valid('query'),
        c.get('deps').config.agentPollIntervalSeconds,
        c.get('caller'),
      );
      return c.json(page, 200);
    })
    .openapi(getRolloutRoute, async (c) => {
      const { id } = c.req.valid('param');
      return c.json(
        await getRollout(c.get('db'), id, c.get('deps').config.agentPollIntervalSeconds, c.get('caller')),
        200,
      );
    })
    .openapi(listRolloutDevicesRoute, async (c) => {
      const { id } = c.req.valid('param');
      const page = await listRolloutDevices(
        c.get('db'),
        id,
        c.req.valid('query'),
        c.get('deps').config.agentPollIntervalSeconds,
      );
      return c.json(page, 200);
    });
  for (const t of transitions) {
    router.openapi(transitionRoute(t), async (c) => {
      const { id } = c.req.valid('param');
      const { rollout, audit } = await t.service(
        c.get('db'),
        id,
        c.get('caller'),
        c.get('deps').config.agentPollIntervalSeconds,
      );
      recordAudit(c, audit);
      return c.json(rollout, 200);
    });
  }
  return router;
}
