/**
 * The access middleware every declared route runs first (defineRoute puts it there): it
 * authenticates the operator token or an organization key, checks the key's role and
 * organization against the route's declaration, and runs each write in one transaction
 * that also records its audit event (api/README.md, Access). Installer, bootstrap and agent
 * routes check their own credentials in their handlers; for them this only hands over
 * the database.
 */
import type { Context, MiddlewareHandler } from 'hono';
import { matchedRoutes } from 'hono/route';
import { findUsableKey, touchApiKey, API_KEY_PREFIX } from '../api_keys/repo.ts';
import type { Db } from '../db/client.ts';
import { bearerToken } from '../http/auth.ts';
import type { AppEnv } from '../app_env.ts';
import { secretsEqual } from '../http/crypto.ts';
import { ApiError } from '../http/errors.ts';
import { isUuid } from '../http/uuid.ts';
import { insertAuditEvent, type AuditEntry } from '../audit/repo.ts';
import {
  type Access,
  credentialRequired,
  resourceLabel,
  type ResourceKind,
  takesOrgCredential,
  type TenantIds,
} from './declaration.ts';
import { organizationOf } from './owners.ts';
import { viewerResponse } from './viewer_view.ts';

/** Who is calling an operator or organization route. */
export type Caller =
  | { type: 'operator' }
  | { type: 'api_key'; apiKeyId: string; name: string; organizationId: string; role: 'admin' | 'viewer' };

/** The audit log's form of a caller: never the key itself. */
export function actorOf(caller: Caller) {
  return caller.type === 'operator'
    ? { type: 'operator' as const }
    : { type: 'api_key' as const, api_key_id: caller.apiKeyId, name: caller.name };
}

export interface RouteAccess {
  method: string;
  access: Access;
  tenant?: TenantIds;
  audit?: string;
}

/** Marks the middlewares made here, so the app can refuse a route that has none. */
export const accessMiddlewares = new WeakSet<object>();

export function accessMiddleware(route: RouteAccess): MiddlewareHandler<AppEnv> {
  const middleware: MiddlewareHandler<AppEnv> = takesOrgCredential(route.access)
    ? route.method === 'get'
      ? (c, next) => authorizedRead(c, next, route)
      : (c, next) => authorizedWrite(c, next, route)
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
  await authenticate(c, c.get('deps').sql, false);
  return next();
};

/**
 * A read: a viewer's answer leaves out every installer credential (viewer_view.ts), and a
 * read of a credential (the activation code, an image) records its audit event once it
 * succeeded, before the answer leaves: no credential is read without its row.
 */
async function authorizedRead(c: Context<AppEnv>, next: () => Promise<void>, route: RouteAccess) {
  const { sql } = c.get('deps');
  const caller = await authenticate(c, sql, false, route.access);
  await authorize(c, sql, caller, route);
  c.set('db', sql);
  await next();
  // HEAD hands out no credential, only its size.
  if (route.audit !== undefined && c.req.method !== 'HEAD' && !c.error && c.res.status < 400) {
    try {
      await insertAuditEvent(sql, {
        ...(c.get('audit') ?? (await readTarget(c, sql, caller, route))),
        action: route.audit,
        actor: actorOf(caller),
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
async function readTarget(c: Context<AppEnv>, db: Db, caller: Caller, route: RouteAccess): Promise<AuditEntry> {
  const [kind, id] = (await declaredIds(c, { param: route.tenant?.param }))[0] ?? [];
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

async function authorizedWrite(c: Context<AppEnv>, next: () => Promise<void>, route: RouteAccess) {
  try {
    await c.get('deps').sql.begin(async (tx) => {
      const caller = await authenticate(c, tx, true, route.access);
      await authorize(c, tx, caller, route);
      c.set('db', tx);
      await next();
      if (c.error || c.res.status >= 400) throw rollback;
      const entry = c.get('audit');
      if (entry === undefined) throw new Error(`${route.audit ?? 'a write'} recorded no audit event`);
      await insertAuditEvent(tx, {
        ...entry,
        action: route.audit!,
        actor: actorOf(caller),
        requestId: c.get('requestId'),
      });
    });
  } catch (err) {
    if (err !== rollback) throw err;
  }
}

/** The handler of a write says what it changed; the access middleware records it on success. */
export function recordAudit(c: Context<AppEnv>, entry: AuditEntry) {
  c.set('audit', entry);
}

function unauthorized(access: Access | undefined): ApiError {
  return new ApiError('unauthorized', credentialRequired(access), { headers: { 'WWW-Authenticate': 'Bearer' } });
}

async function authenticate(c: Context<AppEnv>, db: Db, lock: boolean, access?: Access): Promise<Caller> {
  const token = bearerToken(c.req.header('authorization'));
  if (token === null) throw unauthorized(access);
  if (secretsEqual(token, c.get('deps').config.adminToken)) {
    c.set('caller', { type: 'operator' });
    return { type: 'operator' };
  }
  if (!token.startsWith(API_KEY_PREFIX)) throw unauthorized(access);
  const key = await findUsableKey(db, token, lock);
  if (key === null) throw unauthorized(access);
  if (key.stale_use) await touchApiKey(db, key.id);
  const caller: Caller = {
    type: 'api_key',
    apiKeyId: key.id,
    name: key.name,
    organizationId: key.organization_id,
    role: key.role,
  };
  c.set('caller', caller);
  return caller;
}

/** Role first (a refusal that does not depend on any id), then every declared id's owner. */
async function authorize(c: Context<AppEnv>, db: Db, caller: Caller, route: RouteAccess) {
  if (caller.type === 'operator') return;
  await authorizeCaller(db, caller, route.access, await declaredIds(c, route.tenant));
}

/**
 * The caller's role against the access a call declares, then the owner of each id it
 * names: 403 `forbidden` or 404 `not_found`. The API's routes and the portal's pages
 * both decide with this.
 */
export async function authorizeCaller(
  db: Db,
  caller: Caller,
  access: Access,
  ids: ReadonlyArray<readonly [ResourceKind, string]>,
): Promise<void> {
  if (caller.type === 'operator') return;
  if (access === 'operator') {
    throw new ApiError('forbidden', 'only the operator may make this call, not an organization API key');
  }
  if (access === 'org_admin' && caller.role !== 'admin') {
    throw new ApiError('forbidden', `an API key with role ${caller.role} may not make this call`);
  }
  for (const [kind, id] of ids) {
    const owner = kind === 'organization' ? id : await organizationOf(db, kind, id);
    if (owner !== caller.organizationId) throw new ApiError('not_found', `${resourceLabel[kind]} ${id} not found`);
  }
}

/**
 * The ids the declaration names, in lower case. A value that is not a UUID is left to the
 * route's validation (a 404 in the path, a 400 in the query or body).
 */
async function declaredIds(c: Context<AppEnv>, tenant: TenantIds | undefined): Promise<Array<[ResourceKind, string]>> {
  if (tenant === undefined) return [];
  const ids: Array<[ResourceKind, string | undefined]> = [];
  for (const [name, kind] of Object.entries(tenant.param ?? {})) if (kind) ids.push([kind, c.req.param(name)]);
  for (const [name, kind] of Object.entries(tenant.query ?? {})) ids.push([kind, c.req.query(name)]);
  if (tenant.json) {
    const body = await c.req.json().catch(() => null);
    if (body !== null && typeof body === 'object') {
      for (const [name, kind] of Object.entries(tenant.json))
        ids.push([kind, (body as Record<string, unknown>)[name] as string]);
    }
  }
  return ids.flatMap(([kind, id]) => (typeof id === 'string' && isUuid(id) ? [[kind, id.toLowerCase()]] : []));
}
