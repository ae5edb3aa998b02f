/**
 * How a portal page reads and writes: by the very declaration its API twin is defined
 * with (the feature's operations.ts), with the session's key as the caller. A write runs
 * in the API's write transaction (`authorizedWrite`), the portal adding only its session
 * re-check; its audit event names the session's key. An operator session is held to the
 * organization it chose, so its pages never mix organizations.
 */
import type { Context, Hono } from 'hono';
import { insertAuditEvent } from '../access/audit_events.ts';
import { authorizeCaller, authorizedWrite } from '../access/authorize.ts';
import {
  type AuditEntry,
  type Caller,
  type Ids,
  namedValues,
  type Operation,
  type RequestValues,
  resourceLabel,
  type ResourceKind,
} from '../access/declaration.ts';
import { organizationOf } from '../access/owners.ts';
import type { AppEnv } from '../access/app_env.ts';
import type { Db } from '../db/client.ts';
import { ApiError } from '../http/errors.ts';
import { isUuid } from '../http/uuid.ts';
import { currentSession, type PortalSession } from './session.ts';

export type PortalEnv = AppEnv & { Variables: AppEnv['Variables'] & { session: PortalSession } };

/**
 * The ids the operation's declaration names in the page's request. Unlike the API, which
 * leaves a malformed id to the route's validation, the portal answers one with 404 as for
 * an unknown id, before any query.
 */
function idsOf(operation: Operation, request: RequestValues): Ids {
  return namedValues(operation.tenant, request).flatMap(([kind, id]) => {
    if (typeof id !== 'string') return [];
    if (!isUuid(id)) throw new ApiError('not_found', `${resourceLabel[kind]} ${id} not found`);
    return [[kind, id.toLowerCase()] as const];
  });
}

/** The session's caller, and the organization it works in (an operator's: the one it chose). */
const principalOf = (session: PortalSession) => ({ caller: session.caller, organizationId: session.organizationId });

/** The database for a page's reads, once the session may make this operation's read. */
export async function portalRead(c: Context<PortalEnv>, operation: Operation, request: RequestValues): Promise<Db> {
  const db = c.get('deps').sql;
  const ids = idsOf(operation, request);
  const { caller, organizationId } = principalOf(c.get('session'));
  await authorizeCaller(db, caller, operation.access, () => ids, organizationId);
  return db;
}

/** A page's write: the change, made with the request's values as the API route would get them. */
export type PortalWriter = <T>(
  request: RequestValues,
  change: (tx: Db, caller: Caller) => Promise<{ audit: AuditEntry; result: T }>,
) => Promise<T>;

/**
 * The portal's forms, each with the declaration of the operation it makes (`POST /portal/…`
 * → declaration): the auth matrix test holds each to its API twin.
 */
export const portalWrites = new Map<string, Operation>();

/**
 * A form that makes one operation: its handler gets a writer bound to that declaration,
 * so the form cannot check or audit anything but what the API route declares.
 */
export function postWrite<P extends string>(
  app: Hono<PortalEnv>,
  path: P,
  operation: Operation,
  handler: (c: Context<PortalEnv, P>, write: PortalWriter) => Response | Promise<Response>,
) {
  portalWrites.set(`POST /portal${path}`, operation);
  app.post(path, (c) => handler(c, (request, change) => portalWrite(c, operation, request, change)));
}

/**
 * Runs a write as the API does (`authorizedWrite`): the session (and its key) checked
 * again inside the transaction, then the same authorization, change and audit event. A
 * refusal or failure changes nothing.
 */
function portalWrite<T>(
  c: Context<PortalEnv>,
  operation: Operation,
  request: RequestValues,
  change: (tx: Db, caller: Caller) => Promise<{ audit: AuditEntry; result: T }>,
): Promise<T> {
  const ids = idsOf(operation, request);
  return authorizedWrite(c.get('deps').sql, operation, c.get('requestId'), {
    caller: async (tx) => {
      const session = await currentSession(c, tx);
      if (session === null) throw new ApiError('unauthorized', 'the session has ended; please sign in again');
      return principalOf(session);
    },
    ids: () => ids,
    change,
  });
}

/** Records a read of a credential (an image download) as its operation declares, the session's key as actor. */
export async function auditPortalRead(c: Context<PortalEnv>, operation: Operation, kind: ResourceKind, id: string) {
  if (operation.audit === undefined) return;
  const db = c.get('deps').sql;
  const organizationId = kind === 'organization' ? id : await organizationOf(db, kind, id);
  if (organizationId === null) return;
  await insertAuditEvent(db, {
    organizationId,
    targetType: kind,
    targetId: id.toLowerCase(),
    action: operation.audit,
    caller: c.get('session').caller,
    requestId: c.get('requestId'),
  });
}

export function canWrite(session: PortalSession): boolean {
  return session.caller.type === 'operator' || session.caller.role === 'admin';
}
