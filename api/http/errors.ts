/**
 * The error registry: every error code of CONTRACT.md §1 with its HTTP status, the
 * `ApiError` handlers throw, and the OpenAPI descriptions of error responses.
 */
import { z } from '@hono/zod-openapi';
import type { ContentfulStatusCode } from 'hono/utils/http-status';

export const errorCodes = [
  'invalid_request',
  'unauthorized',
  'invalid_agent_secret',
  'invalid_bootstrap_token',
  'invalid_activation_code',
  'template_not_allowed',
  'device_deprovisioned',
  'device_archived',
  'not_found',
  'agent_already_bootstrapped',
  'protected_org_unit',
  'org_unit_not_empty',
  'org_unit_cycle',
  'iso_not_ready',
  'payload_too_large',
  'range_not_satisfiable',
  'unknown_merkmal',
  'not_in_catalog',
  'invalid_event_type',
  'organization_mismatch',
  'too_many_requests',
  'forbidden',
  'method_not_allowed',
  'device_already_enrolled',
  'internal_error',
  'service_unavailable',
] as const;

export type ErrorCode = (typeof errorCodes)[number];

/**
 * The statuses a code may carry; the first is its default. Only `device_archived` has
 * two: 403 for the agent's calls, 409 for admin operations on an archived device.
 */
export function statusesOf(code: ErrorCode): readonly [ContentfulStatusCode, ...ContentfulStatusCode[]] {
  switch (code) {
    case 'invalid_request':
      return [400];
    case 'unauthorized':
    case 'invalid_agent_secret':
    case 'invalid_bootstrap_token':
      return [401];
    case 'invalid_activation_code':
    case 'template_not_allowed':
    case 'device_deprovisioned':
    case 'forbidden':
      return [403];
    case 'device_archived':
      return [403, 409];
    case 'not_found':
      return [404];
    case 'agent_already_bootstrapped':
    case 'protected_org_unit':
    case 'org_unit_not_empty':
    case 'org_unit_cycle':
    case 'iso_not_ready':
    case 'device_already_enrolled':
      return [409];
    case 'method_not_allowed':
      return [405];
    case 'payload_too_large':
      return [413];
    case 'range_not_satisfiable':
      return [416];
    case 'unknown_merkmal':
    case 'not_in_catalog':
    case 'invalid_event_type':
    case 'organization_mismatch':
      return [422];
    case 'too_many_requests':
      return [429];
    case 'internal_error':
      return [500];
    case 'service_unavailable':
      return [503];
  }
}

export class ApiError extends Error {
  readonly status: ContentfulStatusCode;
  readonly details?: unknown;
  readonly headers?: Record<string, string>;

  constructor(
    readonly code: ErrorCode,
    message: string,
    options: { status?: ContentfulStatusCode; details?: unknown; headers?: Record<string, string> } = {},
  ) {
    super(message);
    const allowed = statusesOf(code);
    if (options.status !== undefined && !allowed.includes(options.status)) {
      throw new Error(`status ${options.status} is not registered for error code ${code}`);
    }
    this.status = options.status ?? allowed[0];
    this.details = options.details;
    this.headers = options.headers;
  }
}

/** Shorthand for the most common error. */
export function notFound(what: string, id: string): ApiError {
  return new ApiError('not_found', `${what} ${id} not found`);
}

export const ErrorBody = z
  .object({
    error: z.enum(errorCodes).openapi({ example: 'not_found' }),
    message: z.string().openapi({ example: 'organization 3f1c... not found' }),
    details: z.unknown().optional().openapi({ description: 'For validation errors: the offending fields.' }),
  })
  .openapi('Error');

export type ErrorBodyType = z.infer<typeof ErrorBody>;

export function errorBody(code: ErrorCode, message: string, details?: unknown): ErrorBodyType {
  return details === undefined ? { error: code, message } : { error: code, message, details };
}

/** A code, or a code with the status it has on this route (only `device_archived` needs it). */
export type ErrorSpec = ErrorCode | readonly [ErrorCode, ContentfulStatusCode];

/**
 * OpenAPI `responses` entries for the given error codes, grouped by status. Every route
 * lists exactly the codes it can return; the route helpers add `invalid_request`,
 * `payload_too_large` and `internal_error` themselves.
 */
export function errorResponses(...specs: ErrorSpec[]) {
  const byStatus = new Map<number, Set<ErrorCode>>();
  for (const spec of specs) {
    const [code, status] = typeof spec === 'string' ? [spec, statusesOf(spec)[0]] : spec;
    byStatus.set(status, (byStatus.get(status) ?? new Set()).add(code));
  }
  const responses: Record<
    string,
    { description: string; content: { 'application/json': { schema: typeof ErrorBody } } }
  > = {};
  for (const [status, codes] of [...byStatus].sort(([a], [b]) => a - b)) {
    responses[String(status)] = {
      description: `Error: ${[...codes].map((c) => '`' + c + '`').join(', ')}`,
      content: { 'application/json': { schema: ErrorBody } },
    };
  }
  return responses;
}
