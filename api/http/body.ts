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

/**
 * The text of a small, optional JSON body: blank is no body; a non-blank one needs a
 * Content-Type (400 otherwise). Read with `parseSmallJsonBody`.
 */
export async function smallJsonBodyText(c: Context): Promise<string> {
  const text = await c.req.text();
  if (c.req.header('content-type') === undefined && text.trim() !== '') {
    throw new ApiError('invalid_request', 'a request body must come with Content-Type: application/json');
  }
  return text;
}

/** @hono/zod-openapi's test of a Content-Type against a body declared as `application/json`. */
const JSON_MEDIA_TYPE = /^application\/([a-z-.]+\+)?json(;\s*[a-zA-Z0-9-]+=([^;]+))*$/i;

/**
 * An optional JSON body, checked as @hono/zod-openapi's validators check one its route
 * declares (the route is documented with it, served without them): another media type,
 * malformed JSON and a schema mismatch are the same errors, blank is `{}`. In one call
 * instead of their three middleware layers (with the body's and the header's own, five),
 * which cost the check-in 0.1–0.2 of a health request's CPU (test/bench/README.md).
 */
export function parseSmallJsonBody<T>(c: Context, text: string, schema: z.ZodType<T>): T {
  const contentType = c.req.header('content-type');
  if (contentType !== undefined && !JSON_MEDIA_TYPE.test(contentType)) {
    throw new HTTPException(415, { message: 'Unsupported Media Type' });
  }
  let value: unknown = {};
  if (text.trim() !== '') {
    try {
      value = JSON.parse(text);
    } catch {
      throw new HTTPException(400, { message: 'Malformed JSON in request body' });
    }
  }
  const result = schema.safeParse(value);
  if (!result.success) validationHook({ ...result, target: 'json' }, c);
  return result.data as T;
}
