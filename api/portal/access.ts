/**
 * How a portal page reads and writes: through the same caller declaration as the API
 * (`authorizeCaller`: the role, then the owner of every id), with the session's key as the
 * caller, and each write in one transaction with its audit event, the actor being the
 * session's key (api/README.md, Audit log). An operator session is held to the organization it
 * chose, so its pages never mix organizations.
 */
import type { Context } from 'hono';
import { actorOf, authorizeCaller } from '../access/middleware.ts';
import type { Access, ResourceKind } from '../access/declaration.ts';
import type { AppEnv } from '../app_env.ts';
import { type AuditEntry, insertAuditEvent } from '../audit/repo.ts';
import type { Db } from '../db/client.ts';
import { ApiError } from '../http/errors.ts';
import { isUuid } from '../http/uuid.ts';
import { organizationOf } from '../access/owners.ts';
import { currentSession, type PortalSession } from './session.ts';

export type PortalEnv = AppEnv & { Variables: AppEnv['Variables'] & { session: PortalSession } };

export type Ids = ReadonlyArray<readonly [ResourceKind, string]>;

/** Not a UUID: 404 as for an unknown id, before any query. */
function checkedIds(ids: Ids): Ids {
  for (const [kind, id] of ids) if (!isUuid(id)) throw new ApiError('not_found', `${kind} ${id} not found`);
  return ids.map(([kind, id]) => [kind, id.toLowerCase()] as const);
}

async function authorize(db: Db, session: PortalSession, access: Access, ids: Ids) {
  await authorizeCaller(db, session.caller, access, ids);
  if (session.caller.type === 'operator') {
    for (const [kind, id] of ids) {
      const owner = kind === 'organization' ? id : await organizationOf(db, kind, id);
      if (owner !== session.organizationId) throw new ApiError('not_found', `${kind} ${id} not found`);
    }
  }
}

/** The database for a page's reads, once the session may read these ids. */
export async function portalRead(c: Context<PortalEnv>, access: Access, ids: Ids = []): Promise<Db> {
  const db = c.get('deps').sql;
  await authorize(db, c.get('session'), access, checkedIds(ids));
  return db;
}

export interface PortalWrite {
  access: Access;
  /** The audit action, as the API route of the same change declares it. */
  audit: string;
  ids: Ids;
}

/**
 * Runs a write as the API's access middleware does: in one transaction, the session
 * (and its key) checked again under a lock, the caller authorized, the change made by
 * the feature's service, its audit event recorded. A refusal or failure changes nothing.
 */
export async function portalWrite<T>(
  c: Context<PortalEnv>,
  write: PortalWrite,
  change: (tx: Db) => Promise<{ audit: AuditEntry; result: T }>,
): Promise<T> {
  const ids = checkedIds(write.ids);
  return c.get('deps').sql.begin(async (tx) => {
    const session = await currentSession(c, tx, true);
    if (session === null) throw new ApiError('unauthorized', 'the session has ended; please sign in again');
    await authorize(tx, session, write.access, ids);
    const { audit, result } = await change(tx);
    await insertAuditEvent(tx, {
      ...audit,
      action: write.audit,
      actor: actorOf(session.caller),
      requestId: c.get('requestId'),
    });
    return result;
  }) as Promise<T>;
}

/** Records a read of a credential (an image download) with the session's key as actor. */
export async function auditPortalRead(c: Context<PortalEnv>, action: string, kind: ResourceKind, id: string) {
  const db = c.get('deps').sql;
  const session = c.get('session');
  const organizationId = kind === 'organization' ? id : await organizationOf(db, kind, id);
  if (organizationId === null) return;
  await insertAuditEvent(db, {
    organizationId,
    targetType: kind,
    targetId: id.toLowerCase(),
    action,
    actor: actorOf(session.caller),
    requestId: c.get('requestId'),
  });
}

export function canWrite(session: PortalSession): boolean {
  return session.caller.type === 'operator' || session.caller.role === 'admin';
}
