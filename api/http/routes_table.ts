/**
 * The route template of a request and the methods a path serves, both read from the
 * routes registered on the app: the one place that knows which paths exist.
 */
import type { Context, MiddlewareHandler } from 'hono';
import { matchedRoutes } from 'hono/route';
import { ApiError } from './errors.ts';

interface RegisteredRoute {
  method: string;
  path: string;
}

/**
 * The template of the route that answers the request (`/api/v1/devices/{id}`), or null
 * when no route matched its method and path. Middleware is registered for every method
 * (`ALL`), endpoints for their own.
 */
export function routeTemplate(c: Context): string | null {
  const routes = matchedRoutes(c);
  for (let i = routes.length - 1; i >= 0; i--) {
    const route = routes[i];
    if (route && route.method !== 'ALL') return toTemplate(route.path);
  }
  return null;
}

/** Every request asks twice (405 check, metrics); the registered paths are a fixed, small set. */
const templates = new Map<string, string>();

/** Hono's `/devices/:id` (optionally `:id{regex}`) as OpenAPI's `/devices/{id}`. */
function toTemplate(path: string): string {
  let template = templates.get(path);
  if (template === undefined) {
    template = path.replace(/:([A-Za-z0-9_]+)(\{[^}]*\})?/g, '{$1}');
    templates.set(path, template);
  }
  return template;
}

interface PathMethods {
  pattern: RegExp;
  methods: Set<string>;
}

function buildTable(routes: readonly RegisteredRoute[]): PathMethods[] {
  const byPath = new Map<string, Set<string>>();
  for (const route of routes) {
    if (route.method === 'ALL') continue;
    byPath.set(route.path, (byPath.get(route.path) ?? new Set()).add(route.method));
  }
  return [...byPath].map(([path, methods]) => {
    if (methods.has('GET')) methods.add('HEAD');
    const source = path
      .split('/')
      .map((part) =>
        part.startsWith(':') ? '[^/]+' : part === '*' ? '.*' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'),
      )
      .join('/');
    return { pattern: new RegExp(`^${source}$`), methods };
  });
}

/**
 * 405 `method_not_allowed` with `Allow` for a known path asked with a method it does not
 * serve. Runs before authentication: which methods a path takes is public
 * (the OpenAPI document lists them), and a client with the wrong method should learn that
 * rather than get a 401 it cannot fix with a credential.
 */
export function methodNotAllowed(app: { routes: readonly RegisteredRoute[] }): MiddlewareHandler {
  let table: PathMethods[] | undefined;
  return async (c, next) => {
    if (routeTemplate(c) !== null) return next();
    table ??= buildTable(app.routes);
    const allowed = new Set<string>();
    for (const entry of table) {
      if (entry.pattern.test(c.req.path)) for (const m of entry.methods) allowed.add(m);
    }
    if (allowed.size === 0) return next();
    const list = [...allowed].sort().join(', ');
    throw new ApiError('method_not_allowed', `${c.req.method} is not allowed here; allowed: ${list}`, {
      headers: { Allow: list },
    });
  };
}
