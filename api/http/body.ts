/**
 * Request bodies on the hot path without a web stream per request.
 *
 * On Node, @hono/node-server builds the web `Request` lazily, and its first touch of
 * `body` wraps Node's IncomingMessage in a ReadableStream (an AbortController, an undici
 * Request). Hono's bodyLimit touches `body` on every request that has one, so the limit here
 * checks a declared Content-Length without it (the HTTP server cuts the body at that length),
 * and only a body without one is counted as it streams. Reading the text (`c.req.text()`)
 * needs no stream: the adapter (v2) reads it from the IncomingMessage itself.
 */
import type { z } from '@hono/zod-openapi';
import type { Context, MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { HTTPException } from 'hono/http-exception';
import { ApiError } from './errors.ts';
import { requireWellFormedJson } from './json_value.ts';
import { validationHook } from './openapi.ts';

/** A Content-Length that alone decides the body's size (none with Transfer-Encoding). */
function declaredLength(c: Context): number | undefined {
  const length = c.req.header('content-length');
  if (length === undefined || c.req.header('transfer-encoding') !== undefined || !/^\d+$/.test(length))
    return undefined;
  return Number(length);
}

/**
 * The body limit: a declared Content-Length is checked without touching the body (the
 * HTTP server cuts the body at that length); anything else is counted as it streams, by
 * Hono's bodyLimit. `onTooLarge` throws the API's 413.
 */
export function limitBodySize(maxBytes: number, onTooLarge: () => never): MiddlewareHandler {
  const streaming = bodyLimit({ maxSize: maxBytes, onError: onTooLarge });
  return (c, next) => {
    const length = declaredLength(c);
    if (length === undefined) return streaming(c, next);
    if (length > maxBytes) onTooLarge();
    return next();
  };
}

/** A small, optional JSON body: its Content-Type and its value, parsed once. */
export interface SmallJsonBody {
  contentType: string | undefined;
  /** `{}` for a blank body; `MALFORMED` for text that is not JSON. */
  value: unknown;
}

const MALFORMED = Symbol('malformed JSON');

/**
 * Reads a small, optional JSON body: blank is no body; a non-blank one needs a
 * Content-Type (400 otherwise). A JSON body is held to `wellFormedJsonBody`'s rule here,
 * where that middleware would have run, so the text is parsed once. Checked further by
 * `parseSmallJsonBody`.
 */
export async function readSmallJsonBody(c: Context): Promise<SmallJsonBody> {
  const text = await c.req.text();
  const contentType = c.req.header('content-type');
  const blank = text.trim() === '';
  if (contentType === undefined && !blank) {
    throw new ApiError('invalid_request', 'a request body must come with Content-Type: application/json');
  }
  let value: unknown = {};
  if (!blank) {
    try {
      value = JSON.parse(text);
    } catch {
      value = MALFORMED;
    }
  }
  if (value !== MALFORMED && contentType?.toLowerCase().includes('json')) requireWellFormedJson(value);
  return { contentType, value };
}

/** @hono/zod-openapi's test of a Content-Type against a body declared as `application/json`. */
const JSON_MEDIA_TYPE = /^application\/([a-z-.]+\+)?json(;\s*[a-zA-Z0-9-]+=([^;]+))*$/i;

/**
 * An optional JSON body, checked as @hono/zod-openapi's validators check one its route
 * declares (the route is documented with it, served without them, so the hot path skips
 * their middleware layers): another media type, malformed JSON and a schema mismatch are
 * the same errors, blank is `{}`.
 */
export function parseSmallJsonBody<T>(c: Context, body: SmallJsonBody, schema: z.ZodType<T>): T {
  if (body.contentType !== undefined && !JSON_MEDIA_TYPE.test(body.contentType)) {
    throw new HTTPException(415, { message: 'Unsupported Media Type' });
  }
  if (body.value === MALFORMED) throw new HTTPException(400, { message: 'Malformed JSON in request body' });
  const result = schema.safeParse(body.value);
  if (!result.success) validationHook({ ...result, target: 'json' }, c);
  return result.data as T;
}
