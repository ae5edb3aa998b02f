/**
 * The shared OpenAPI pieces of the HTTP layer: the validation hook that turns zod failures
 * into the registry's errors, and the parameter and body schemas every feature uses. It
 * imports no feature: who may call a route is declared in `access/route.ts`.
 */
import { z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { ApiError } from './errors.ts';
import { uuidPattern } from './uuid.ts';

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
  c: Context,
) {
  if (result.success) return;
  if (result.target === 'param') throw new ApiError('not_found', `no resource at ${c.req.path}`);
  throw invalidRequest(result.target, result.error?.issues ?? []);
}

/**
 * The 400 of a request part (`json`, `query`, `header`) that fails its schema, with the
 * failing fields; the OpenAPI examples are made with it too, so they read as the server answers.
 */
export function invalidRequest(
  target: string,
  issues: ReadonlyArray<{ path: PropertyKey[]; message: string }>,
): ApiError {
  const details = issues.map((i) => ({ path: i.path.map(String), message: i.message }));
  const where = target === 'json' ? 'body' : target;
  return new ApiError('invalid_request', `the request ${where} is not valid: ${describe(details)}`, { details });
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
