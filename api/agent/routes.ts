/**
 * The provisioning agent's protocol (CONTRACT §7): bootstrap with the one-time token from
 * resolve, periodic check-in, and reports of what the agent applied or removed.
 *
 * Order of the answers on check-in and report: the shape of the bearer (401), then the
 * body's syntax (400), then the device behind the secret (401, 403), then what the body
 * means (422). Nothing is written unless every step passes.
 */
import type { Context } from 'hono';
import { readBodyText } from '../http/body.ts';
import { ApiError } from '../http/errors.ts';
import { hashSecret } from '../http/crypto.ts';
import type { AppEnv } from '../http/context.ts';
import { defineRoute, json, jsonBody, newRouter, validationHook } from '../http/openapi.ts';
import { agentSecret, invalidAgentSecret, issueAgentSecret, requireLiveDevice, type AgentSecretEnv } from './auth.ts';
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
  type CheckinRequestType,
} from './schemas.ts';

const tags = ['Agent'];

const bootstrap = defineRoute({
  method: 'post',
  path: '/agent/bootstrap',
  operationId: 'agentBootstrap',
  tags,
  summary: 'Exchange the one-time bootstrap token for the agent secret',
  description:
    'The token comes from the Runtime Blueprint (`agent.bootstrap_token`) and is used up here. The agent secret is ' +
    'returned exactly once and stored only as its SHA-256 hash. The token is checked first: a wrong, used or ' +
    'expired token is 401 `invalid_bootstrap_token` whether or not the device exists, and only a caller with a ' +
    'live token of the device learns its state (403 archived or deprovisioned, 409 when it already holds a secret: ' +
    'an admin must reprovision it). A rejected bootstrap leaves the token unused.',
  auth: 'credential',
  errors: ['invalid_bootstrap_token', 'device_deprovisioned', 'device_archived', 'agent_already_bootstrapped'],
  request: { body: jsonBody(BootstrapRequest) },
  responses: { 201: json(BootstrapResponse, 'The agent secret, shown only this once') },
});

const checkinBody = {
  required: false,
  description: 'Optional: an empty body (with or without a Content-Type) is the same as `{}`.',
  content: { 'application/json': { schema: CheckinRequest } },
};

const checkin = defineRoute({
  method: 'post',
  path: '/agent/checkin',
  operationId: 'agentCheckin',
  tags,
  summary: 'Check in: heartbeat, optional hardware report, and what the device should look like',
  description:
    'Sets `agent_last_checkin` every time and replaces the stored hardware when `hardware` is sent. Answers the ' +
    "blueprints of the device's template, the role repository, the poll interval and the full order state " +
    '(`auftraege`).',
  auth: 'agent',
  errors: ['invalid_agent_secret', 'device_deprovisioned', 'device_archived'],
  request: { body: checkinBody },
  responses: { 200: json(CheckinResponse, 'What the agent should apply') },
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
  auth: 'agent',
  errors: ['invalid_agent_secret', 'device_deprovisioned', 'device_archived', 'unknown_merkmal', 'invalid_event_type'],
  request: { body: jsonBody(ReportRequest) },
  responses: { 200: json(ReportResponse, 'How many events were stored') },
});

const agentEvents: ReadonlySet<string> = new Set(agentEventTypes);

export function agentRoutes() {
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

  // Check-in reads its optional body itself (see readCheckinBody); the route is registered
  // for the OpenAPI document with the same schema that validates it.
  router.openAPIRegistry.registerPath(checkin);
  router.post('/agent/checkin', agentSecret, async (c) => {
    const { sql, config } = c.get('deps');
    const body = await readCheckinBody(c);
    const result = await repo.checkin(sql, c.get('agentSecretHash'), body.hardware);
    if (!result.live) {
      requireLiveDevice(result.device); // 401 or 403
      throw invalidAgentSecret(); // not reached: a secret that missed a live device finds none
    }
    const { device, auftraege } = result.live;
    const blueprints = await repo.cachedTemplateBlueprints(sql, device.template_id);
    const response = {
      device_id: device.id,
      blueprints,
      repository_url: config.roleRepositoryUrl,
      poll_interval_seconds: config.agentPollIntervalSeconds,
      auftraege: auftraege.map((s) => ({ merkmal: s.merkmal, state: s.state, optionen: s.optionen })),
    };
    return c.json(response, 200);
  });

  router.openapi({ ...report, middleware: [agentSecret] as const }, async (c) => {
    const { sql } = c.get('deps');
    const { entries } = c.req.valid('json');
    const device = requireLiveDevice(await repo.findAgentDevice(sql, c.get('agentSecretHash')));
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
      device.id,
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

  return router;
}

/**
 * The check-in body: empty (no body at all, or an empty one, with or without a
 * Content-Type) means `{}`, so the simplest agent can POST nothing; anything else must be
 * a JSON object matching CheckinRequest. Failures are the same 400 `invalid_request` the
 * validation hook gives everywhere else.
 */
async function readCheckinBody<E extends AppEnv>(c: Context<E>): Promise<CheckinRequestType> {
  const text = await readBodyText(c);
  if (text.trim() === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ApiError('invalid_request', 'the request body is not valid JSON');
  }
  const parsed = CheckinRequest.safeParse(value);
  if (!parsed.success)
    validationHook({ success: false, target: 'json', error: parsed.error }, c as unknown as Context<AppEnv>);
  return parsed.data!;
}
