/**
 * Request bodies on the hot path without a web stream per request.
 *
 * On Node, @hono/node-server builds the web `Request` lazily: the first touch of its body
 * wraps Node's IncomingMessage in a ReadableStream (Readable.toWeb, an AbortController, an
 * undici Request). For the agent's small check-in body that machinery took about a fifth of
 * the server's CPU per check-in (profiled under the bench). So the body limit is checked
 * against Content-Length, and the check-in reads its body straight from the
 * IncomingMessage when Node serves it. Every other runtime (Deno, in-process
 * `app.request`) and every body without a Content-Length takes the standard web path,
 * with the same limit and the same result.
 */
import { Buffer } from 'node:buffer';
import type { IncomingMessage } from 'node:http';
import type { Context, MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';

/** Node's request, when @hono/node-server serves this one (`c.env.incoming`). */
function nodeIncoming(c: Context): IncomingMessage | undefined {
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  return incoming && typeof incoming.on === 'function' && typeof incoming.headers === 'object' ? incoming : undefined;
}

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

/** The request body as UTF-8 text (the limit middleware has already checked its size). */
export async function readBodyText(c: Context): Promise<string> {
  const incoming = nodeIncoming(c);
  if (!incoming || declaredLength(c) === undefined || incoming.readableEnded) return c.req.text();
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.once('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    incoming.once('error', reject);
  });
}
