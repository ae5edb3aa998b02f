/**
 * How a portal page reads and writes: by the very declaration its API twin is defined
 * with (the feature's operations.ts), with the session's key as the caller. A write runs
 * in the API's write transaction (`authorizedWrite`), the portal adding only its session
 * re-check; its audit event names the session's key. An operator session is held to the
 * organization it chose, so its pages never mix organizations.
 */
import type { Context, Hono } from 'hono';
import { insertAuditEvent } from '../access/audit_events.ts';
import { BULK_CHUNK, type BulkOutcome, type BulkSteps, changeChunk } from '../access/bulk.ts';
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

/** A bulk form's writer: the operation made for each item, chunk by chunk. */
export type PortalBulkWriter = <T>(items: readonly T[], steps: BulkSteps<T>) => Promise<BulkOutcome<T>>;

/**
 * A form that makes one operation for each of many items (a bulk action on devices), each
 * exactly as its API call would: the same declaration, change and one audit event per item.
 */
export function postBulkWrite<P extends string>(
  app: Hono<PortalEnv>,
  path: P,
  operation: Operation,
  handler: (c: Context<PortalEnv, P>, writeEach: PortalBulkWriter) => Response | Promise<Response>,
) {
  portalWrites.set(`POST /portal${path}`, operation);
  app.post(path, async (c) => {
    // The role before anything is read from the form: a viewer's forged post is 403, whatever it names.
    await authorizeEach(c, operation, []);
    return handler(c, (items, steps) => portalWriteEach(c, operation, items, steps));
  });
}

/**
 * The session may make the operation with each of these requests: its role, then every id
 * they name (another organization's is 404), as `portalRead` checks one request.
 */
export async function authorizeEach(
  c: Context<PortalEnv>,
  operation: Operation,
  requests: readonly RequestValues[],
): Promise<Db> {
  const db = c.get('deps').sql;
  const named = new Map<string, Ids[number]>();
  for (const request of requests) for (const id of idsOf(operation, request)) named.set(id.join(':'), id);
  const { caller, organizationId } = principalOf(c.get('session'));
  await authorizeCaller(db, caller, operation.access, () => [...named.values()], organizationId);
  return db;
}

/**
 * Runs the operation for each item. First, before any change, the session's role and every
 * id the requests name (another organization's id is 404 and nothing changes). Then chunks
 * of `BULK_CHUNK` items, each in a transaction that checks the session again; each item in
 * a savepoint with its own audit event, so an item a rule refuses is rolled back alone and
 * reported, and the others go on. A chunk that fails otherwise is rolled back whole; the
 * chunks before it stay done.
 */
async function portalWriteEach<T>(
  c: Context<PortalEnv>,
  operation: Operation,
  items: readonly T[],
  steps: BulkSteps<T>,
): Promise<BulkOutcome<T>> {
  await authorizeEach(c, operation, items.map(steps.requestOf));
  const sql = c.get('deps').sql;
  const requestId = c.get('requestId');
  const outcome: BulkOutcome<T> = { changed: [], failed: [] };
  for (let start = 0; start < items.length; start += BULK_CHUNK) {
    const chunk = items.slice(start, start + BULK_CHUNK);
    const done = await sql.begin(async (tx) => {
      const session = await currentSession(c, tx);
      if (session === null) throw new ApiError('unauthorized', 'the session has ended; please sign in again');
      const { caller, organizationId } = principalOf(session);
      // The role again (a key demoted meanwhile); the ids' owners do not change.
      await authorizeCaller(tx, caller, operation.access, () => [], organizationId);
      return changeChunk(tx, operation, caller, requestId, chunk, steps);
    });
    outcome.changed.push(...done.changed);
    outcome.failed.push(...done.failed);
  }
  return outcome;
}

/**
 * A form that hands its work to the worker (a bulk action over many devices): in one
 * transaction the session (and its key) checked again and its role for the operation, then
 * `queue` records and queues the work as that caller. The items' own changes and audit
 * events are the worker's, made as `postBulkWrite` makes them.
 */
export async function queueWrite(
  c: Context<PortalEnv>,
  operation: Operation,
  queue: (tx: Db, caller: Caller, organizationId: string) => Promise<string>,
): Promise<string> {
  return c.get('deps').sql.begin(async (tx) => {
    const session = await currentSession(c, tx);
    if (session === null || session.organizationId === null) {
      throw new ApiError('unauthorized', 'the session has ended; please sign in again');
    }
    const { caller, organizationId } = principalOf(session);
    await authorizeCaller(tx, caller, operation.access, () => [], organizationId);
    return queue(tx, caller, session.organizationId);
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
