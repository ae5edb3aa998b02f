/**
 * The error registry (the table: api/README.md, Errors): every error code with its HTTP status, the
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
  'no_inventory',
  'agent_already_bootstrapped',
  'protected_org_unit',
  'org_unit_not_empty',
  'org_unit_cycle',
  'name_taken',
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
  'rollout_in_progress',
  'rollout_not_active',
  'inventory_hash_mismatch',
  'disk_encryption_unavailable',
  'action_not_cancelable',
  'action_not_pending',
  'action_not_running',
  'action_finished',
  'device_count_changed',
  'internal_error',
  'service_unavailable',
] as const;

export type ErrorCode = (typeof errorCodes)[number];

/**
 * The statuses a code may carry; the first is its default. Each code has one status, as
 * api/README.md's table gives it, except `device_archived` and `device_deprovisioned`, which
 * the table lists twice: 403 for the agent's calls, 409 for admin operations on such a device.
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
    case 'forbidden':
      return [403];
    case 'device_deprovisioned':
    case 'device_archived':
      return [403, 409];
    case 'not_found':
    case 'no_inventory':
      return [404];
    case 'agent_already_bootstrapped':
    case 'protected_org_unit':
    case 'org_unit_not_empty':
    case 'org_unit_cycle':
    case 'name_taken':
    case 'iso_not_ready':
    case 'device_already_enrolled':
    case 'rollout_in_progress':
    case 'rollout_not_active':
    case 'action_not_cancelable':
    case 'action_not_pending':
    case 'action_not_running':
    case 'action_finished':
    case 'device_count_changed':
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
    case 'inventory_hash_mismatch':
    case 'disk_encryption_unavailable':
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

/** One example of an error response: its key in `examples`, a short summary, the body. */
export interface ErrorExample {
  key: string;
  summary: string;
  /** Markdown: what the example answers, when that helps. */
  description?: string;
  value: ErrorBodyType;
}

/** The examples of a code on one operation; none leaves the code out of the operation. */
export type ExamplesOf = (code: ErrorCode, status: number) => ErrorExample[];

/** Without an operation at hand (a response written by hand): the code's plain example. */
const plainMessages: Partial<Record<ErrorCode, string>> = {
  too_many_requests: 'too many failed activation attempts; retry in 412 seconds',
};

/** The OpenAPI `examples` of an error response written by hand: one per code. */
export function errorExamples(...codes: ErrorCode[]) {
  return Object.fromEntries(
    codes.map((code) => [code, { summary: code, value: errorBody(code, plainMessages[code] ?? code) }]),
  );
}

/** A code, or a code with the status it has on this route (`device_archived`, `device_deprovisioned`). */
export type ErrorSpec = ErrorCode | readonly [ErrorCode, ContentfulStatusCode];

/**
 * OpenAPI `responses` entries for the given error codes, grouped by status, each with the
 * examples `examplesOf` gives for the operation (defineRoute makes them from the route's
 * declaration). A code without an example is one the operation cannot answer, and is left out.
 */
export function errorResponses(specs: readonly ErrorSpec[], examplesOf: ExamplesOf) {
  const byStatus = new Map<number, ErrorExample[]>();
  for (const spec of specs) {
    const [code, status] = typeof spec === 'string' ? [spec, statusesOf(spec)[0]] : spec;
    const examples = examplesOf(code, status);
    if (examples.length > 0) byStatus.set(status, [...(byStatus.get(status) ?? []), ...examples]);
  }
  const responses: Record<
    string,
    {
      description: string;
      content: {
        'application/json': {
          schema: typeof ErrorBody;
          examples: Record<string, Omit<ErrorExample, 'key'>>;
        };
      };
    }
  > = {};
  for (const [status, examples] of [...byStatus].sort(([a], [b]) => a - b)) {
    const codes = [...new Set(examples.map((e) => e.value.error))];
    responses[String(status)] = {
      description: `Error: ${codes.map((c) => '`' + c + '`').join(', ')}`,
      content: {
        'application/json': {
          schema: ErrorBody,
          examples: Object.fromEntries(examples.map(({ key, ...example }) => [key, example])),
        },
      },
    };
  }
  return responses;
}
