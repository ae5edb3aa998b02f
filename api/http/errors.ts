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
  'headers_too_large',
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
 * The statuses a code may carry; the first is its default. `device_archived` has two: 403
 * for the agent's calls, 409 for admin operations on an archived device; so have
 * `invalid_activation_code` and `template_not_allowed`: 403 for the installer, 422 for an
 * ISO build bound to a session or template that cannot be used.
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
      // 422 when an admin binds an ISO build to a session or template that cannot be used (§10).
      return [403, 422];
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
    case 'headers_too_large':
      return [431];
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

const Details = z
  .array(z.object({ path: z.array(z.string()), message: z.string() }))
  .openapi({ description: 'For validation errors: the offending fields.' });

export const ErrorBody = z
  .object({
    error: z.enum(errorCodes).openapi({ description: 'The error code; the statuses each code carries are fixed.' }),
    message: z.string().openapi({ description: 'A human readable explanation; never a secret, SQL or a stack trace.' }),
    details: Details.optional(),
  })
  .openapi('Error');

export type ErrorBodyType = z.infer<typeof ErrorBody>;

export function errorBody(code: ErrorCode, message: string, details?: unknown): ErrorBodyType {
  if (details === undefined) return { error: code, message };
  return { error: code, message, details: details as ErrorBodyType['details'] };
}

/** An example message per code, for the examples of the OpenAPI document. */
const exampleMessages: Record<ErrorCode, string> = {
  invalid_request: 'the request body is not valid: name: Too small: expected string to have >=1 characters',
  unauthorized: 'a valid admin token is required (Authorization: Bearer <ADMIN_TOKEN>)',
  invalid_agent_secret: 'the agent secret is missing or unknown',
  invalid_bootstrap_token: 'the bootstrap token is wrong, used or expired',
  invalid_activation_code: 'the activation code is not valid',
  template_not_allowed: 'this credential does not offer the template',
  device_deprovisioned: 'the device is deprovisioned',
  device_archived: 'the device is archived',
  not_found: 'device 3f1c2b7e-8d4a-4c55-9b1e-2a7d6c0f9e41 not found',
  agent_already_bootstrapped: 'the device has already bootstrapped its agent',
  protected_org_unit: 'the org unit "Neue Geräte" is protected',
  org_unit_not_empty: 'the org unit still has devices or child org units',
  org_unit_cycle: 'the move would make the org unit its own ancestor',
  iso_not_ready: 'the ISO build is not completed',
  payload_too_large: 'the request body is larger than 1048576 bytes',
  range_not_satisfiable: 'the range lies outside the file',
  headers_too_large: 'the request line and headers are larger than 16 KiB',
  unknown_merkmal: 'unknown Merkmal: textverarbeitung',
  not_in_catalog: 'the Merkmal basis is not in the order catalog',
  invalid_event_type: 'not an agent event type: selected',
  organization_mismatch: 'the device and the group belong to different organizations',
  too_many_requests: 'too many failed attempts; retry later',
  forbidden: 'this API key may not make this call',
  method_not_allowed: 'DELETE is not allowed here; allowed: GET, HEAD',
  device_already_enrolled: 'the device is under management; reprovision it first',
  internal_error: 'an unexpected error occurred (request id 9f6c1e0a)',
  service_unavailable: 'the database did not answer in time; retry later',
};

/** The OpenAPI `examples` of an error response: one per code. */
export function errorExamples(...codes: ErrorCode[]) {
  return Object.fromEntries(codes.map((code) => [code, example(code)]));
}

function example(code: ErrorCode) {
  const value =
    code === 'invalid_request'
      ? errorBody(code, exampleMessages[code], [
          { path: ['name'], message: 'Too small: expected string to have >=1 characters' },
        ])
      : errorBody(code, exampleMessages[code]);
  return { summary: code, value };
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
    {
      description: string;
      content: {
        'application/json': { schema: typeof ErrorBody; examples: Record<string, ReturnType<typeof example>> };
      };
    }
  > = {};
  for (const [status, codes] of [...byStatus].sort(([a], [b]) => a - b)) {
    responses[String(status)] = {
      description: `Error: ${[...codes].map((c) => '`' + c + '`').join(', ')}`,
      content: {
        'application/json': {
          schema: ErrorBody,
          examples: errorExamples(...codes),
        },
      },
    };
  }
  return responses;
}
