/**
 * createApp(deps) builds the whole HTTP API (no I/O on import). The same app is served
 * by Node (main_node.ts) and Deno (main_deno.ts) and called in-process by the tests.
 */
import { OpenAPIHono } from '@hono/zod-openapi';
import { HTTPException } from 'hono/http-exception';
import { requestId } from 'hono/request-id';
import type { Context } from 'hono';
import { denyUndeclaredRoutes } from './access/middleware.ts';
import { activationRoutes } from './activation/routes.ts';
import { diskKeyRoutes } from './disk_keys/routes.ts';
import { actionRoutes } from './actions/routes.ts';
import { agentRoutes } from './agent/routes.ts';
import { apiKeyRoutes } from './api_keys/routes.ts';
import { webhookRoutes } from './webhooks/routes.ts';
import { auditRoutes } from './audit/routes.ts';
import { recordEffectiveChange } from './catalog/effective_changes.ts';
import { catalogRoutes } from './catalog/routes.ts';
import { DEFAULT_DATABASE_TIMEOUT_SECONDS, isDatabaseUnavailable, isPgError, pgError } from './db/client.ts';
import { deviceLifecycleRoutes } from './devices/lifecycle_routes.ts';
import { deviceRoutes } from './devices/routes.ts';
import { deviceVulnerabilityRoutes } from './devices/vulnerability_routes.ts';
import { vulnerabilityRoutes } from './vulnerabilities/routes.ts';
import { apiDescription } from './docs/description.ts';
import { docsRoutes, openapiDocumentRoutes } from './docs/routes.ts';
import { enrollmentSessionRoutes } from './enrollment_sessions/routes.ts';
import { groupRoutes } from './groups/routes.ts';
import { healthRoutes } from './health/routes.ts';
import { inventoryTooLarge } from './inventory/body.ts';
import { inventoryRoutes } from './inventory/routes.ts';
import { MAX_INVENTORY_BYTES } from './inventory/schemas.ts';
import { limitBodySize } from './http/body.ts';
import { busyMessage, CheckinGate } from './http/shed.ts';
import type { AppEnv, HandlerDeps } from './access/app_env.ts';
import type { CheckinPath } from './agent/checkin_path.ts';
import { ApiError, errorBody } from './http/errors.ts';
import { validationHook } from './http/openapi.ts';
import { CHECKIN, observeRequests, RefusedCheckins } from './metrics/observe.ts';
import { Deadlines } from './http/deadlines.ts';
import { methodNotAllowed, routeTemplate } from './http/routes_table.ts';
import { isoBuildRoutes } from './iso_builds/routes.ts';
import { orgUnitRoutes } from './org_units/routes.ts';
import { organizationRoutes } from './organizations/routes.ts';
import { Metrics, UNMATCHED_ROUTE } from './metrics/metrics.ts';
import { metricsRoutes } from './metrics/routes.ts';
import { referenceDataRoutes } from './reference_data/routes.ts';
import { rolloutRoutes } from './rollouts/routes.ts';
import { templateRoutes } from './templates/routes.ts';
import { portalRoutes } from './portal/routes.tsx';

export const MAX_BODY_BYTES = 1024 * 1024;
const INVENTORY_PATH = '/api/v1/agent/inventory';

/** What the app is built from: what every handler reaches, and the agent's check-in path. */
export interface AppDeps extends HandlerDeps {
  /** Where check-ins read and write: built by `createCheckinPath`, the same in the service and the tests. */
  checkin: CheckinPath;
}

export function createApp(appDeps: AppDeps) {
  const deps: AppDeps = {
    ...appDeps,
    checkinGate: appDeps.checkinGate ?? new CheckinGate(appDeps.config.checkin),
  };
  const app = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });

  app.use('*', requestId({ limitLength: 64 }));
  app.use('*', async (c, next) => {
    c.set('deps', deps);
    await next();
  });
  const metrics = new Metrics({ heartbeats: deps.checkin.heartbeats, checkinReads: deps.checkin.reads });
  const refused = new RefusedCheckins(deps.log, () => deps.checkinGate!.takeRefused());
  app.use('*', observeRequests(metrics, refused));
  app.use('*', methodNotAllowed(app));
  // Half a second under the budget, so the 503 itself is out within it.
  const databaseBudgetMs = (deps.config.databaseTimeoutSeconds ?? DEFAULT_DATABASE_TIMEOUT_SECONDS) * 1000;
  app.use('/api/v1/*', requestDeadline(databaseBudgetMs - 500));
  const limitBody = limitBodySize(MAX_BODY_BYTES, () => {
    throw new ApiError('payload_too_large', `the request body is larger than ${MAX_BODY_BYTES} bytes`);
  });
  // An agent's inventory is the one larger body (its own bound, checked again uncompressed).
  const limitInventory = limitBodySize(MAX_INVENTORY_BYTES, () => {
    throw inventoryTooLarge();
  });
  // GET and HEAD carry no body; skipping them spares building a body stream per read.
  app.use('/api/v1/*', (c, next) =>
    c.req.method === 'GET' || c.req.method === 'HEAD'
      ? next()
      : c.req.path === INVENTORY_PATH
        ? limitInventory(c, next)
        : limitBody(c, next),
  );
  app.use('/api/v1/*', denyUndeclaredRoutes);

  const v1 = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
  for (const routes of [
    healthRoutes(),
    organizationRoutes(),
    referenceDataRoutes(),
    templateRoutes(),
    activationRoutes(),
    enrollmentSessionRoutes(),
    deviceRoutes(recordEffectiveChange),
    deviceLifecycleRoutes(),
    deviceVulnerabilityRoutes(),
    vulnerabilityRoutes(),
    orgUnitRoutes(recordEffectiveChange),
    groupRoutes(recordEffectiveChange),
    catalogRoutes(),
    rolloutRoutes(),
    agentRoutes(deps.checkin),
    inventoryRoutes(),
    diskKeyRoutes(),
    actionRoutes(),
    isoBuildRoutes(),
    apiKeyRoutes(),
    auditRoutes(),
    webhookRoutes(),
    docsRoutes(),
  ]) {
    v1.route('/', routes);
  }
  app.route('/api/v1', v1);
  app.route('/', metricsRoutes(metrics));
  app.route('/portal', portalRoutes());

  app.openAPIRegistry.registerComponent('securitySchemes', 'AdminToken', {
    type: 'http',
    scheme: 'bearer',
    description: 'The operator token (ADMIN_TOKEN, or the file named at start-up): every organization.',
  });
  app.openAPIRegistry.registerComponent('securitySchemes', 'OrganizationKey', {
    type: 'http',
    scheme: 'bearer',
    description:
      'An organization API key (`fpk_...`): its own organization only, within its role (`admin` or `viewer`).',
  });
  app.openAPIRegistry.registerComponent('securitySchemes', 'AgentSecret', {
    type: 'http',
    scheme: 'bearer',
    description: 'The agent secret issued once by POST /api/v1/agent/bootstrap.',
  });
  const document = {
    openapi: '3.1.0',
    info: {
      title: 'Fleet provisioning API',
      version: '1.0.0',
      description: apiDescription,
    },
    servers: [{ url: '/' }],
  };
  app.route(
    '/api/v1',
    openapiDocumentRoutes(() => app.getOpenAPI31Document(document)),
  );

  app.notFound((c) => c.json(errorBody('not_found', `no route for ${c.req.method} ${c.req.path}`), 404));
  app.onError((err, c) => renderError(err, c));
  return Object.assign(app, { refuseEarly: earlyRefusal(deps.checkinGate!, metrics, refused) });
}

/** A 503 the runtime's HTTP front sends without calling the app. */
export interface EarlyAnswer {
  status: 503;
  headers: Record<string, string>;
  body: string;
}

const utf8 = new TextEncoder();

/**
 * A check-in the gate refuses, answered before the app (api/agent/README.md, Load shedding): under a herd most
 * requests are refused, and the full middleware chain per refusal would keep the process
 * saturated by refusals alone. The same gate, the same error body and `Retry-After`, the
 * same metrics as the route's own refusal. Anything but the plain check-in URL goes on.
 */
function earlyRefusal(gate: CheckinGate, metrics: Metrics, refused: RefusedCheckins) {
  // The body and its length per Retry-After (the base to twice the base), made once each.
  const bodies = new Map<number, { body: string; length: string }>();
  return (method: string, url: string): EarlyAnswer | null => {
    if (method !== 'POST' || url !== CHECKIN) return null;
    const retryAfter = gate.refusal();
    if (retryAfter === null) return null;
    metrics.observe(method, CHECKIN, 503, 0);
    refused.add();
    let prepared = bodies.get(retryAfter);
    if (!prepared) {
      const body = JSON.stringify(errorBody('service_unavailable', busyMessage(retryAfter)));
      prepared = { body, length: String(utf8.encode(body).byteLength) };
      bodies.set(retryAfter, prepared);
    }
    return {
      status: 503,
      headers: {
        'content-type': 'application/json',
        'content-length': prepared.length,
        'retry-after': String(retryAfter),
        'x-request-id': crypto.randomUUID(),
      },
      body: prepared.body,
    };
  };
}

export type App = ReturnType<typeof createApp>;

function renderError(err: Error, c: Context<AppEnv>) {
  if (err instanceof ApiError) {
    for (const [name, value] of Object.entries(err.headers ?? {})) c.header(name, value);
    return c.json(errorBody(err.code, err.message, err.details), err.status);
  }
  if (isDatabaseUnavailable(err)) {
    c.get('deps').log.warn('database unavailable', {
      request_id: c.get('requestId'),
      method: c.req.method,
      error: errorCodeOf(err),
    });
    c.header('Retry-After', RETRY_AFTER_SECONDS);
    return c.json(errorBody('service_unavailable', 'the database is not available; retry later'), 503);
  }
  if (err instanceof HTTPException && err.status === 413) {
    return c.json(errorBody('payload_too_large', `the request body is larger than ${MAX_BODY_BYTES} bytes`), 413);
  }
  if (isPgError(err, pgError.characterNotInRepertoire) || isPgError(err, pgError.untranslatableCharacter)) {
    // A NUL character (\u0000) in a string or JSON value of the request: valid JSON, but
    // PostgreSQL stores neither text nor jsonb with it. The transaction was rolled back.
    return c.json(
      errorBody('invalid_request', 'the request contains a NUL character (\\u0000), which cannot be stored'),
      400,
    );
  }
  if (err instanceof HTTPException && err.status < 500) {
    // Malformed JSON, a wrong Content-Type and the like: the request is not valid.
    const message =
      err.status === 415 ? 'the request body must be application/json' : 'the request body is not valid JSON';
    return c.json(errorBody('invalid_request', message), 400);
  }
  c.get('deps').log.error('unhandled error', {
    request_id: c.get('requestId'),
    method: c.req.method,
    route: routeTemplate(c) ?? UNMATCHED_ROUTE,
    error: err.name,
    detail: err.message,
  });
  return c.json(errorBody('internal_error', `an unexpected error occurred (request id ${c.get('requestId')})`), 500);
}

const RETRY_AFTER_SECONDS = '5';

function errorCodeOf(err: unknown): string {
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' ? code : 'unknown';
}

/**
 * A database that stalls (a stopped server answers nothing, and no server-side timeout
 * fires) must not hold a request: at the deadline the request answers 503. Streamed
 * bodies (ISO downloads) are past this point once their headers are out.
 */
function requestDeadline(ms: number) {
  const deadlines = new Deadlines(ms);
  const late = () =>
    new ApiError('service_unavailable', `no answer from the database in time; retry later`, {
      headers: { 'Retry-After': RETRY_AFTER_SECONDS },
    });
  return (_c: Context<AppEnv>, next: () => Promise<void>) => deadlines.within(next(), late);
}
