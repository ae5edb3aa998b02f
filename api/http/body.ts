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
import type { Context, MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { ApiError } from './errors.ts';

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
 * Route middleware for a small, optional JSON body: reads its text and leaves it in Hono's
 * body cache, so the route's standard validator parses and validates it. An empty body is
 * `{}`; a non-empty one needs `Content-Type: application/json` (400 otherwise).
 */
export const smallJsonBody: MiddlewareHandler = async (c, next) => {
  const text = await c.req.text();
  const typed = c.req.header('content-type') !== undefined;
  if (!typed && text.trim() !== '') {
    throw new ApiError('invalid_request', 'a request body must come with Content-Type: application/json');
  }
  // Blank is no body: `{}` for the JSON validator, nothing for the media-type check.
  const cached = text.trim() !== '' ? text : typed ? '{}' : '';
  // Hono caches bodies as promises; its type says string.
  (c.req.bodyCache as Record<string, unknown>).text = Promise.resolve(cached);
  await next();
};
