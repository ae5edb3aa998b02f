/**
 * Admin authentication (CONTRACT §2): `Authorization: Bearer <ADMIN_TOKEN>` on every
 * endpoint except the public ones below. Default-deny: a new route is admin-only unless
 * it is added here, and the installer's and agent's routes carry their own credentials.
 */
import type { MiddlewareHandler } from 'hono';
import type { AppEnv } from './context.ts';
import { secretsEqual } from './crypto.ts';
import { ApiError } from './errors.ts';

const publicRoutes: ReadonlyArray<{ method: string; path: RegExp }> = [
  { method: 'GET', path: /^\/api\/v1\/health(\/live)?$/ },
  { method: 'GET', path: /^\/api\/v1\/openapi\.json$/ },
  { method: 'GET', path: /^\/api\/v1\/docs(\/.*)?$/ },
  { method: 'POST', path: /^\/api\/v1\/activate$/ },
  { method: 'POST', path: /^\/api\/v1\/templates\/[^/]+\/resolve$/ },
  { method: 'POST', path: /^\/api\/v1\/agent\/(bootstrap|checkin|report)$/ },
];

export function isPublicRoute(method: string, path: string): boolean {
  const m = method === 'HEAD' ? 'GET' : method;
  return publicRoutes.some((r) => r.method === m && r.path.test(path));
}

/**
 * Reads a bearer credential; null when the header is missing or not a bearer. The scheme
 * name is case-insensitive (RFC 9110 §11.1): `bearer <token>` is the same credential.
 */
export function bearerToken(header: string | undefined): string | null {
  const match = header?.match(/^Bearer ([\x21-\x7e]{1,512})$/i);
  return match?.[1] ?? null;
}

export const adminAuth: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (isPublicRoute(c.req.method, c.req.path)) return next();
  const token = bearerToken(c.req.header('authorization'));
  if (token === null || !secretsEqual(token, c.get('deps').config.adminToken)) {
    throw new ApiError('unauthorized', 'a valid admin token is required (Authorization: Bearer <ADMIN_TOKEN>)', {
      headers: { 'WWW-Authenticate': 'Bearer' },
    });
  }
  return next();
};
