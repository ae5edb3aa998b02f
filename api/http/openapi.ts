/**
 * Route helpers: every route declares who may call it and which error codes it can
 * return, and gets the matching OpenAPI security and error responses, so that
 * `/api/v1/openapi.json` stays complete and honest. Also the shared parameter schemas.
 */
import { createRoute, OpenAPIHono, z, type RouteConfig } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { type Access, callersOf, takesOrgCredential, type TenantIds } from '../access/declaration.ts';
import { accessMiddleware } from '../access/middleware.ts';
import type { AppEnv } from './context.ts';
import { ApiError, errorResponses, type ErrorSpec } from './errors.ts';
import { isUuid, uuidPattern } from './uuid.ts';

/** The declaration every route makes: who may call it, whose ids it takes, what it audits. */
export interface RouteDeclaration {
  access: Access;
  /** For operator and organization routes: the ids an organization key must own. */
  tenant?: TenantIds;
  /** For operator and organization writes: the audit action (CONTRACT §13). */
  audit?: string;
  errors?: readonly ErrorSpec[];
}

export function defineRoute<const R extends RouteConfig>(config: R & RouteDeclaration) {
  const { access, tenant, audit, errors = [], ...route } = config;
  checkDeclaration(route.method, route.path, { access, tenant, audit });
  const request = route.request;
  const codes: ErrorSpec[] = [...errors];
  if (request?.params || request?.query || request?.body) codes.push('invalid_request');
  if (request?.body) codes.push('payload_too_large');
  if (takesOrgCredential(access)) {
    codes.push('unauthorized');
    if (access !== 'org_viewer') codes.push('forbidden');
    if (tenant && !codes.includes('not_found')) codes.push('not_found');
  }
  codes.push('internal_error');
  const middleware = [accessMiddleware({ method: route.method, access, tenant, audit }), ...asArray(route.middleware)];
  return createRoute({
    ...route,
    middleware,
    security: securityOf(access),
    'x-callers': callersOf(access),
    ...(audit ? { 'x-audit-action': audit } : {}),
    responses: { ...route.responses, ...errorResponses(...codes) },
  } as unknown as R);
}

function asArray<T>(value: T | readonly T[] | undefined): T[] {
  return value === undefined ? [] : Array.isArray(value) ? [...value] : [value as T];
}

function securityOf(access: Access) {
  switch (access) {
    case 'operator':
      return [{ AdminToken: [] }];
    case 'org_admin':
    case 'org_viewer':
      return [{ AdminToken: [] }, { OrganizationKey: [] }];
    case 'agent':
      return [{ AgentSecret: [] }];
    default:
      return [];
  }
}

/**
 * Fails at start-up, not at the first request: an organization route must account for
 * every path parameter (an id an organization key must own, or `null`), and every write
 * of the operator or an organization key must name its audit action.
 */
function checkDeclaration(method: string, path: string, d: { access: Access; tenant?: TenantIds; audit?: string }) {
  const where = `${method.toUpperCase()} ${path}`;
  if (!takesOrgCredential(d.access)) {
    if (d.tenant || d.audit) throw new Error(`${where}: tenant and audit are for operator and organization routes`);
    return;
  }
  for (const name of path.matchAll(/\{([^}]+)\}/g)) {
    if (!(d.tenant?.param && name[1]! in d.tenant.param)) {
      throw new Error(`${where}: path parameter ${name[1]} is not declared in tenant.param`);
    }
  }
  if (method !== 'get' && !d.audit) throw new Error(`${where}: a write must declare its audit action`);
  if (method === 'get' && d.audit) throw new Error(`${where}: a read records no audit event`);
}

/** A new feature router with the shared validation hook. */
export function newRouter() {
  return new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
}

/**
 * zod failures become 400 `invalid_request` with the failing fields, except a malformed
 * id in the path, which names nothing that exists: 404 `not_found`.
 */
export function validationHook(
  result: {
    success: boolean;
    target: string;
    error?: { issues: ReadonlyArray<{ path: PropertyKey[]; message: string; code?: string }> };
  },
  c: Context<AppEnv>,
) {
  if (result.success) return;
  if (result.target === 'param') throw new ApiError('not_found', `no resource at ${c.req.path}`);
  const details = (result.error?.issues ?? []).map((i) => ({
    path: i.path.map(String),
    message: i.message,
  }));
  const where = result.target === 'json' ? 'body' : result.target;
  throw new ApiError('invalid_request', `the request ${where} is not valid: ${describe(details)}`, { details });
}

function describe(details: Array<{ path: string[]; message: string }>): string {
  return details
    .slice(0, 5)
    .map((d) => (d.path.length ? `${d.path.join('.')}: ${d.message}` : d.message))
    .join('; ');
}

/**
 * A UUID in a body, query or path (any version, as PostgreSQL accepts it), in lower case
 * after parsing: handlers compare ids with the ones PostgreSQL returns (always lower case)
 * and echo them, so an upper-case UUID must name the same resource and come back the same.
 */
export const Uuid = z
  .string()
  .regex(uuidPattern, 'must be a UUID')
  .toLowerCase()
  .openapi({ format: 'uuid', example: '3f1c2b7e-8d4a-4c55-9b1e-2a7d6c0f9e41' });

/**
 * A UUID in an optional query filter: no example, since the docs pre-fill examples into
 * "Try it out" and an example id filters everything away (or answers 404).
 */
export const UuidFilter = z.string().regex(uuidPattern, 'must be a UUID').toLowerCase().openapi({ format: 'uuid' });

export { isUuid };

/** `{id}` path parameter. */
export const IdParams = z.object({
  id: Uuid.openapi({ param: { name: 'id', in: 'path' } }),
});

/** An ISO 8601 timestamp in UTC, or null. */
export const Timestamp = z.string().openapi({ format: 'date-time', example: '2026-11-21T13:38:00.000Z' });

/** 10000-01-01T00:00:00Z: the first instant a 4-digit ISO 8601 year cannot show. */
const LATEST_EXPIRY = Date.UTC(10000, 0, 1);

/** An expiry in a request body: an ISO 8601 time with offset, in the future. */
export const FutureTimestamp = z.iso
  .datetime({ offset: true })
  .refine((value) => Date.parse(value) > Date.now(), 'must be in the future')
  // An offset can push 9999-12-31 into year 10000 (UTC), which no ISO 8601 response could show.
  .refine((value) => Date.parse(value) < LATEST_EXPIRY, 'must be before the year 10000 (UTC)');

export function iso(value: Date): string;
export function iso(value: Date | null): string | null;
export function iso(value: Date | null): string | null {
  return value === null ? null : value.toISOString();
}

/** `{ content: { 'application/json': { schema } } }` with a description, for responses. */
export function json<T extends z.ZodType>(schema: T, description: string) {
  return { description, content: { 'application/json': { schema } } };
}

/** A required JSON request body. */
export function jsonBody<T extends z.ZodType>(schema: T, description?: string) {
  return { required: true, ...(description ? { description } : {}), content: { 'application/json': { schema } } };
}
