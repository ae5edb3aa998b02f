/**
 * What a request may carry beyond what its route declares: nothing. A query parameter the
 * route's query schema does not name is a 400 naming it, as an unknown body field is, so a
 * misspelt filter never answers with the unfiltered list; and a call that declares no body
 * refuses one (malformed JSON included). An empty JSON object counts as no body, for
 * clients that always send one.
 */
import type { MiddlewareHandler } from 'hono';
import { invalidRequest } from './openapi.ts';

export interface RequestShape {
  /** The query parameters the route's schema names. */
  query: ReadonlySet<string>;
  /** Whether the route declares a body. */
  body: boolean;
}

/** The names of a query schema: the keys of its object shape. */
export function queryNames(schema: unknown): string[] {
  const shape = (schema as { shape?: Record<string, unknown> } | undefined)?.shape;
  if (schema !== undefined && (shape === undefined || typeof shape !== 'object')) {
    throw new Error('a route’s query schema must be an object schema, so its parameters can be named');
  }
  return shape ? Object.keys(shape) : [];
}

export function requestShape(shape: RequestShape): MiddlewareHandler {
  return async (c, next) => {
    const url = c.req.url;
    const mark = url.indexOf('?');
    if (mark !== -1 && mark < url.length - 1) {
      const unknown = [...new Set(new URLSearchParams(url.slice(mark + 1)).keys())].filter((n) => !shape.query.has(n));
      if (unknown.length > 0) {
        throw invalidRequest(
          'query',
          unknown.map((name) => ({ path: [name], message: 'not a parameter of this call' })),
        );
      }
    }
    if (!shape.body && c.req.method !== 'GET' && c.req.method !== 'HEAD' && c.req.raw.body !== null) {
      const text = await c.req.text();
      if (text.trim() !== '' && !/^\s*\{\s*\}\s*$/.test(text)) {
        throw invalidRequest('body', [{ path: [], message: 'this call takes no body' }]);
      }
    }
    await next();
  };
}
