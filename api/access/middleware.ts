/**
 * The access middleware every declared route runs first (defineRoute puts it there): it
 * authenticates the operator token or an organization key, checks the key's role and
 * organization against the route's declaration, and runs each write in one transaction
 * that also records its audit event (authorizedWrite, shared with the portal). Installer,
 * bootstrap and agent routes check their own credentials in their handlers; for them this
 * only hands over the database.
 */
import type { Context, MiddlewareHandler } from 'hono';
import { matchedRoutes } from 'hono/route';
import type { AppEnv } from './app_env.ts';
import type { Db, Sql } from '../db/client.ts';
import { bearerToken } from '../http/auth.ts';
import { secretsEqual } from '../http/crypto.ts';
import { ApiError } from '../http/errors.ts';
import { insertAuditEvent } from './audit_events.ts';
import { authorizeCaller, authorizedWrite } from './authorize.ts';
import {
  type Access,
  type AuditEntry,
  type Caller,
  credentialRequired,
  declaredIds,
  type Operation,
  type RequestValues,
  takesOrgCredential,
} from './declaration.ts';
import { API_KEY_PREFIX, findUsableKey, isKeyUsable, touchApiKey } from './keys.ts';
import { organizationOf } from './owners.ts';
import { viewerResponse } from './viewer_view.ts';

/** What the middleware of one route goes by: its method and its declaration. */
export type RouteAccess = { method: string } & (
  | Operation
  | { access: Exclude<Access, Operation['access']>; tenant?: undefined; audit?: undefined }
);

function isOperation(route: RouteAccess): route is { method: string } & Operation {
  return takesOrgCredential(route.access);
}

/** Marks the middlewares made here, so the app can refuse a route that has none. */
const accessMiddlewares = new WeakSet<object>();

export function accessMiddleware(route: RouteAccess): MiddlewareHandler<AppEnv> {
  const middleware: MiddlewareHandler<AppEnv> = isOperation(route)
    ? route.method === 'get'
      ? (c, next) => authorizedRead(c, next, route)
      : (c, next) => writeThrough(c, next, route)
    : (c, next) => {
        c.set('db', c.get('deps').sql);
        return next();
      };
  accessMiddlewares.add(middleware);
  return middleware;
}

/**
 * Deny by default: a request that reached a route without a declared access middleware
 * (a route not made with defineRoute) is refused before its handler runs. A path that
 * matches no route at all is 404 only for a valid operator or organization credential,
 * so the API does not tell strangers which paths exist.
 */
export const denyUndeclaredRoutes: MiddlewareHandler<AppEnv> = async (c, next) => {
  const routes = matchedRoutes(c);
  if (routes.some((r) => accessMiddlewares.has(r.handler))) return next();
  if (routes.some((r) => r.method !== 'ALL')) {
    throw new ApiError('unauthorized', 'this route declares no callers, so nobody may call it');
  }
  await authenticate(c, c.get('deps').sql);
  return next();
};

/**
 * A read: a viewer's answer leaves out every installer credential (viewer_view.ts), and a
 * read of a credential (the activation code, an image) records its audit event once it
 * succeeded, before the answer leaves: no credential is read without its row.
 */
async function authorizedRead(c: Context<AppEnv>, next: () => Promise<void>, route: Operation) {
  const { sql } = c.get('deps');
  const caller = await authenticate(c, sql, route.access);
  await authorizeCaller(sql, caller, route.access, () => requestIds(c, route));
  c.set('db', sql);
  await next();
  // HEAD hands out no credential, only its size.
  if (route.audit !== undefined && c.req.method !== 'HEAD' && !c.error && c.res.status < 400) {
    try {
      await insertAuditEvent(sql, {
        ...(c.get('audit') ?? (await readTarget(c, sql, caller, route))),
        action: route.audit,
        caller,
        requestId: c.get('requestId'),
      });
    } catch (err) {
      await c.res.body?.cancel().catch(() => {});
      throw err;
    }
  }
  if (caller.type === 'api_key' && caller.role === 'viewer') {
    const res = await viewerResponse(c.res);
    // Unset first, or Hono would copy the old headers (Content-Length) onto the new answer.
    c.res = undefined;
    c.res = res;
  }
}

/** An audited read's target, unless its handler named one: the resource its path names. */
async function readTarget(c: Context<AppEnv>, db: Db, caller: Caller, route: Operation): Promise<AuditEntry> {
  const [kind, id] = declaredIds({ param: route.tenant?.param }, { param: c.req.param() })[0] ?? [];
  if (kind === undefined || id === undefined) throw new Error(`${route.audit}: an audited read names no resource`);
  const organizationId =
    caller.type === 'api_key'
      ? caller.organizationId
      : kind === 'organization'
        ? id
        : await organizationOf(db, kind, id);
  if (organizationId === null) throw new Error(`${route.audit}: ${kind} ${id} has no organization`);
  return { organizationId, targetType: kind, targetId: id };
}

/** Rolls the transaction back after a refused or failed write; never leaves this module. */
const rollback = Symbol('rollback');

/**
 * A write: the credential checked when the request starts and again inside the write's
 * transaction, without a lock, so a revoke neither waits for the writes under way nor lets
 * one through that started after it answered (api/README.md, Access). The key's last use
 * moves once the write has committed (a refused write changes nothing), outside the
 * transaction, whose row lock on the key would make a revoke wait.
 */
async function writeThrough(c: Context<AppEnv>, next: () => Promise<void>, route: Operation) {
  const { sql, log } = c.get('deps');
  const { caller, staleUse } = await identify(c, sql, route.access);
  try {
    await authorizedWrite(sql, route, c.get('requestId'), {
      caller: async (tx) => {
        if (caller.type === 'api_key' && !(await isKeyUsable(tx, caller.apiKeyId))) throw unauthorized(route.access);
        return { caller };
      },
      ids: () => requestIds(c, route),
      change: async (tx) => {
        c.set('db', tx);
        await next();
        if (c.error || c.res.status >= 400) throw rollback;
        const audit = c.get('audit');
        if (audit === undefined) throw new Error(`${route.audit ?? 'a write'} recorded no audit event`);
        return { audit, result: undefined };
      },
    });
  } catch (err) {
    if (err !== rollback) throw err;
    return;
  }
  if (staleUse && caller.type === 'api_key') {
    // The write is done; a failed move of last_used_at is retried by the key's next use.
    await touchApiKey(sql, caller.apiKeyId).catch((err) =>
      log.warn('last_used_at not moved', { requestId: c.get('requestId'), error: String(err) }),
    );
  }
}

/** The handler of a write says what it changed; the access middleware records it on success. */
export function recordAudit(c: Context<AppEnv>, entry: AuditEntry) {
  c.set('audit', entry);
}

function unauthorized(access: Access | undefined): ApiError {
  return new ApiError('unauthorized', credentialRequired(access), { headers: { 'WWW-Authenticate': 'Bearer' } });
}

/** The operator or the organization key the request carries (401 for none), its last use moved. */
async function authenticate(c: Context<AppEnv>, sql: Sql, access?: Access): Promise<Caller> {
  const { caller, staleUse } = await identify(c, sql, access);
  if (staleUse && caller.type === 'api_key') await touchApiKey(sql, caller.apiKeyId);
  return caller;
}

/** The operator or the organization key the request carries (401 for none), and whether its last use should move. */
async function identify(c: Context<AppEnv>, sql: Sql, access?: Access): Promise<{ caller: Caller; staleUse: boolean }> {
  const token = bearerToken(c.req.header('authorization'));
  if (token === null) throw unauthorized(access);
  if (secretsEqual(token, c.get('deps').config.adminToken)) {
    c.set('caller', { type: 'operator' });
    return { caller: { type: 'operator' }, staleUse: false };
  }
  if (!token.startsWith(API_KEY_PREFIX)) throw unauthorized(access);
  const key = await findUsableKey(sql, token);
  if (key === null) throw unauthorized(access);
  const caller: Caller = {
    type: 'api_key',
    apiKeyId: key.id,
    name: key.name,
    organizationId: key.organization_id,
    role: key.role,
  };
  c.set('caller', caller);
  return { caller, staleUse: key.stale_use };
}

/**
 * The ids the declaration names in this request. A value that is not a UUID is left to the
 * route's validation (a 404 in the path, a 400 in the query or body).
 */
async function requestIds(c: Context<AppEnv>, route: Operation) {
  const request: RequestValues = { param: c.req.param(), query: c.req.query() };
  if (route.tenant?.json) request.json = await c.req.json().catch(() => null);
  return declaredIds(route.tenant, request);
}
