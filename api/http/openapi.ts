/**
 * Route helpers: every route declares who may call it and which error codes it can
 * return, and gets the matching OpenAPI security and error responses, so that
 * `/api/v1/openapi.json` stays complete and honest. Also the shared parameter schemas.
 */
import { createRoute, OpenAPIHono, z, type RouteConfig } from '@hono/zod-openapi';
import type { Context } from 'hono';
import type { AppEnv } from './context.ts';
import { ApiError, errorResponses, type ErrorSpec } from './errors.ts';

/** admin: ADMIN_TOKEN bearer; agent: agent-secret bearer; credential: in the body; public: none. */
export type RouteAuth = 'admin' | 'agent' | 'credential' | 'public';

export function defineRoute<const R extends RouteConfig>(
  config: R & { auth: RouteAuth; errors?: readonly ErrorSpec[] },
) {
  const { auth, errors = [], ...route } = config;
  const request = route.request;
  const codes: ErrorSpec[] = [...errors];
  if (request?.params || request?.query || request?.body) codes.push('invalid_request');
  if (request?.body) codes.push('payload_too_large');
  if (auth === 'admin') codes.push('unauthorized');
  codes.push('internal_error');
  const security = auth === 'admin' ? [{ AdminToken: [] }] : auth === 'agent' ? [{ AgentSecret: [] }] : [];
  return createRoute({
    ...route,
    security,
    responses: { ...route.responses, ...errorResponses(...codes) },
  } as unknown as R);
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

const uuidPattern = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

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

export function isUuid(value: string): boolean {
  return uuidPattern.test(value);
}

/** `{id}` path parameter. */
export const IdParams = z.object({
  id: Uuid.openapi({ param: { name: 'id', in: 'path' } }),
});

/** An ISO 8601 timestamp in UTC, or null. */
export const Timestamp = z.string().openapi({ format: 'date-time', example: '2026-11-21T13:38:00.000Z' });

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
