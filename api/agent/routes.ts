/**
 * The provisioning agent's protocol (api/agent/README.md): bootstrap with the one-time token from
 * resolve, periodic check-in, and reports of what the agent applied or removed.
 *
 * Order of the answers on check-in: load shedding (503), the shape of the bearer (401), the
 * body (400), then the device behind the secret (401, 403). On report the device is looked
 * up before the body is validated, then what the body means (422). Nothing is written
 * unless every step passes.
 */
import { z } from '@hono/zod-openapi';
import type { Context, MiddlewareHandler } from 'hono';
import { parseSmallJsonBody, readSmallJsonBody } from '../http/body.ts';
import type { AppEnv } from '../access/app_env.ts';
import { hashSecret } from '../http/crypto.ts';
import { ApiError } from '../http/errors.ts';
import { IdParams, json, jsonBody, validationHook } from '../http/openapi.ts';
import { ActionResultRequest } from '../actions/schemas.ts';
import { finishAction, startAction } from '../actions/service.ts';
import { transaction } from '../db/client.ts';
import { scheduleJudge } from '../rollouts/schedule.ts';
import { defineRoute, newRouter, withoutBodyLayer } from '../access/route.ts';
import { agentSecretHash, issueAgentSecret, liveAgentDevice } from './auth.ts';
import { checkIn } from './checkin.ts';
import type { CheckinPath } from './checkin_path.ts';
import * as repo from './repo.ts';
import {
  agentEventTypes,
  BootstrapRequest,
  BootstrapResponse,
  CheckinRequest,
  CheckinResponse,
  ReportRequest,
  ReportResponse,
  type AgentEventType,
} from './schemas.ts';

const tags = ['Agent'];

/**
 * Load shedding comes first (api/agent/README.md, Load shedding): the app's gate, which the runtime's front asks
 * too; then the bearer's shape. One layer of middleware for both: the route is the fleet's
 * hottest, and each layer costs a turn of promises.
 */
const shedThenAgentSecret: MiddlewareHandler<AppEnv> = (c, next) =>
  c.get('deps').checkinGate!.admit(() => {
    c.set('agentSecretHash', agentSecretHash(c.req.header('authorization')));
    return next();
  });

/** The check-in's one header: documented with the route, checked by `checkinRequest`. */
const CheckinHeaders = z.object({
  'if-none-match': z
    .string()
    .max(1000)
    .optional()
    .openapi({ description: 'The `ETag` of the last answer: 304 while the desired state is unchanged.' }),
});

/**
 * The check-in's body and header, checked by the handler with the schemas the OpenAPI
 * document shows and the same 400s as the layers a route with a body gets (the body's
 * well-formedness, the validators @hono/zod-openapi derives from the schemas), in the order
 * they ran: a body without a Content-Type or with a lone surrogate, the header, then the
 * body's media type, JSON and schema. Those layers cost a turn of middleware each (Hono's
 * header validator alone copied every request header into an object), and the body was
 * parsed twice, on the fleet's hottest route.
 */
async function checkinRequest(c: Context<AppEnv>) {
  const body = await readSmallJsonBody(c);
  const headers = CheckinHeaders.safeParse({ 'if-none-match': c.req.header('if-none-match') });
  if (!headers.success) validationHook({ ...headers, target: 'header' }, c);
  return { body: parseSmallJsonBody(c, body, CheckinRequest), ifNoneMatch: headers.data!['if-none-match'] };
}

const bootstrap = defineRoute({
  method: 'post',
  path: '/agent/bootstrap',
  operationId: 'agentBootstrap',
  tags,
  summary: 'Exchange the one-time bootstrap token for the agent secret',
  description:
    'The token comes from the Runtime Blueprint (`agent.bootstrap_token`) and is used up here. The agent secret is ' +
    'returned exactly once and stored only as its SHA-256 hash. A device that already holds an agent secret is 409 ' +
    '`agent_already_bootstrapped` whatever the token (an admin must reprovision it). Otherwise a wrong, used or ' +
    'expired token is 401 `invalid_bootstrap_token` whether or not the device exists (an admin reprovisions the ' +
    'device to issue a new one), and only a caller with a live token of the device learns its state (403 archived ' +
    'or deprovisioned). A rejected bootstrap leaves the token unused.',
  access: 'bootstrap',
  errors: ['invalid_bootstrap_token', 'device_deprovisioned', 'device_archived', 'agent_already_bootstrapped'],
  request: { body: jsonBody(BootstrapRequest) },
  responses: { 201: json(BootstrapResponse, 'The agent secret, shown only this once') },
});

const checkin = defineRoute({
  method: 'post',
  path: '/agent/checkin',
  operationId: 'agentCheckin',
  tags,
  summary: 'Check in: heartbeat, optional hardware report, and what the device should look like',
  description:
    'Sets `agent_last_checkin` every time and replaces the stored hardware when `hardware` is sent; keeps ' +
    "`agent_version` as the device's `agent_version` (written only when it changed). Answers the " +
    "blueprints of the device's template, the role repository, the poll interval and the full order state " +
    '(`auftraege`, each with the `ansible_role` that applies it), with an `ETag` of that desired state. Send it back as `If-None-Match`: while nothing changed, ' +
    'the answer is 304 without a body (the check-in still counts). Under overload a check-in is refused at once ' +
    'with 503 `service_unavailable` and a `Retry-After` (seconds, with jitter): come back then.',
  access: 'agent',
  middleware: [shedThenAgentSecret] as const,
  errors: ['invalid_agent_secret', 'device_deprovisioned', 'device_archived', 'service_unavailable'],
  request: {
    headers: CheckinHeaders,
    body: {
      required: false,
      description: 'Optional: an empty body (with or without a Content-Type) is the same as `{}`.',
      content: { 'application/json': { schema: CheckinRequest } },
    },
  },
  responses: {
    200: {
      ...json(CheckinResponse, 'What the agent should apply'),
      headers: { ETag: { schema: { type: 'string' }, description: 'A strong tag of the desired state' } },
    },
    304: { description: 'The desired state is the one the `If-None-Match` tag names; no body' },
  },
});

const report = defineRoute({
  method: 'post',
  path: '/agent/report',
  operationId: 'agentReport',
  tags,
  summary: 'Report what the agent applied or removed',
  description:
    `1–500 entries, each \`event\` one of ${agentEventTypes.map((t) => '`' + t + '`').join(', ')}; they become device ` +
    'Merkmal events with `payload: { detail }` (`{}` without detail). One bad entry (unknown Merkmal: 422 ' +
    '`unknown_merkmal`; any other event type, `selected` and `deselected` included: 422 `invalid_event_type`) ' +
    'rejects the whole report and nothing is written.',
  access: 'agent',
  middleware: [liveAgentDevice(repo.findAgentDevice)] as const,
  errors: ['invalid_agent_secret', 'device_deprovisioned', 'device_archived', 'unknown_merkmal', 'invalid_event_type'],
  request: { body: jsonBody(ReportRequest) },
  responses: { 200: json(ReportResponse, 'How many events were stored') },
});

const actionStart = defineRoute({
  method: 'post',
  path: '/agent/actions/{id}/start',
  operationId: 'agentStartAction',
  tags,
  summary: 'The agent starts one of its actions (from the check-in), before it runs it',
  description:
    'A `pending` or `delivered` action becomes `running`; an action already `running` answers 204 again (a retry ' +
    'after a lost answer: the agent never runs an id twice). Run it only after a 204: a canceled or expired ' +
    'action (not started by its `expires_at`) is 409 `action_not_pending`, a finished one 409 `action_finished`. ' +
    "Another device's action, or none, is 404.",
  access: 'agent',
  middleware: [liveAgentDevice(repo.findAgentDevice)] as const,
  errors: [
    'invalid_agent_secret',
    'device_deprovisioned',
    'device_archived',
    'not_found',
    'action_not_pending',
    'action_finished',
  ],
  request: { params: IdParams },
  responses: { 204: { description: 'The action is running' } },
});

const actionResult = defineRoute({
  method: 'post',
  path: '/agent/actions/{id}/result',
  operationId: 'agentActionResult',
  tags,
  summary: 'The agent reports how a running action ended',
  description:
    '`succeeded` when `exit_code` is 0, else `failed`; `output` is kept as its last 65536 bytes (webhook ' +
    '`action.finished`). One result per action: a second is 409 `action_finished` and changes nothing (a retry ' +
    'whose first answer was lost: the first was taken). A result for an action that is not `running` is 409 ' +
    "`action_not_running`. Another device's action, or none, is 404.",
  access: 'agent',
  middleware: [liveAgentDevice(repo.findAgentDevice)] as const,
  errors: [
    'invalid_agent_secret',
    'device_deprovisioned',
    'device_archived',
    'not_found',
    'action_not_running',
    'action_finished',
  ],
  request: { params: IdParams, body: jsonBody(ActionResultRequest) },
  responses: { 204: { description: 'The result is stored' } },
});

const agentEvents: ReadonlySet<string> = new Set(agentEventTypes);

/** The agent's routes; check-ins go through `checkinPath`, the one the service built. */
export function agentRoutes(checkinPath: CheckinPath) {
  const router = newRouter();

  router.openapi(bootstrap, async (c) => {
    const body = c.req.valid('json');
    const { secret, hash } = issueAgentSecret();
    await repo.bootstrap(c.get('deps').sql, {
      deviceId: body.device_id,
      tokenHash: hashSecret(body.bootstrap_token),
      secretHash: hash,
      hardware: body.hardware,
    });
    return c.json({ device_id: body.device_id, agent_secret: secret }, 201);
  });

  // Documented with its header and body; served without the validators and the body's
  // well-formedness layer, which checkinRequest does in their place.
  const { middleware, ...documented } = checkin;
  router.openAPIRegistry.registerPath(documented);
  const served = { ...checkin, hide: true, request: undefined, middleware: withoutBodyLayer(middleware) };
  router.openapi(served, async (c) => {
    const { body, ifNoneMatch } = await checkinRequest(c);
    const deps = c.get('deps');
    const answer = await checkIn(
      c.get('db'),
      deps.config,
      {
        secretHash: c.get('agentSecretHash'),
        hardware: body.hardware,
        agentVersion: body.agent_version,
        ifNoneMatch,
        inventoryHash: body.inventory_hash,
      },
      checkinPath,
    );
    c.header('ETag', answer.etag);
    return answer.notModified ? c.body(null, 304) : c.json(answer.body, 200);
  });

  router.openapi(report, async (c) => {
    const { sql } = c.get('deps');
    const { entries } = c.req.valid('json');
    const device = c.get('agentDevice');
    const badTypes = entries.flatMap((e, i) =>
      agentEvents.has(e.event)
        ? []
        : [{ path: ['entries', String(i), 'event'], message: `not an agent event type: ${e.event}` }],
    );
    if (badTypes.length > 0) {
      throw new ApiError(
        'invalid_event_type',
        `an agent reports only ${agentEventTypes.join(', ')}; nothing was stored`,
        { details: badTypes },
      );
    }
    const result = await repo.insertReport(
      sql,
      device,
      entries.map((e) => ({
        merkmal: e.merkmal,
        type: e.event as AgentEventType,
        payload: e.detail === undefined ? {} : { detail: e.detail },
      })),
    );
    if (result.unknown.length > 0) {
      throw new ApiError(
        'unknown_merkmal',
        `unknown Merkmal: ${result.unknown.slice(0, 10).join(', ')}; nothing was stored`,
        {
          details: result.unknown.map((merkmal) => ({
            path: ['entries', 'merkmal'],
            message: `unknown Merkmal: ${merkmal}`,
          })),
        },
      );
    }
    return c.json({ accepted: result.accepted }, 200);
  });

  router.openapi(actionStart, async (c) => {
    const { id } = c.req.valid('param');
    await startAction(c.get('deps').sql, c.get('agentDevice').id, id);
    return c.body(null, 204);
  });

  router.openapi(actionResult, async (c) => {
    const { id } = c.req.valid('param');
    const body = c.req.valid('json');
    const deviceId = c.get('agentDevice').id;
    await transaction(c.get('deps').sql, async (tx) => {
      const { rolloutId } = await finishAction(tx, deviceId, id, body);
      // The rollout's open ring may have moved: judged within a second.
      if (rolloutId !== null) await scheduleJudge(tx, rolloutId, { kind: 'soon' });
    });
    return c.body(null, 204);
  });

  return router;
}
