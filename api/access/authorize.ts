/**
 * The decision and the write transaction the API and the portal share: the caller's role
 * against an operation's declaration, then the owner of every id it names; and each write
 * in one transaction with its audit event, the caller checked again inside it.
 */
import type { Db, Sql } from '../db/client.ts';
import { ApiError } from '../http/errors.ts';
import { insertAuditEvent } from './audit_events.ts';
import { type Access, type AuditEntry, type Caller, type Ids, type Operation, resourceLabel } from './declaration.ts';
import { organizationOf } from './owners.ts';

/**
 * The caller's role against the access a call declares, then the owner of each id it
 * names: 403 `forbidden` or 404 `not_found`. `organizationId` is the organization every id
 * must belong to: a key's own; for the operator none, unless (a portal session) it has
 * chosen one.
 */
export async function authorizeCaller(
  db: Db,
  caller: Caller,
  access: Access,
  ids: () => Ids | Promise<Ids>,
  organizationId: string | null = caller.type === 'api_key' ? caller.organizationId : null,
): Promise<void> {
  if (caller.type === 'api_key') {
    if (access === 'operator') {
      throw new ApiError('forbidden', 'only the operator may make this call, not an organization API key');
    }
    if (access === 'org_admin' && caller.role !== 'admin') {
      throw new ApiError('forbidden', `an API key with role ${caller.role} may not make this call`);
    }
  }
  if (organizationId === null) return;
  for (const [kind, id] of await ids()) {
    const owner = kind === 'organization' ? id : await organizationOf(db, kind, id);
    if (owner !== organizationId) throw new ApiError('not_found', `${resourceLabel[kind]} ${id} not found`);
  }
}

/** What a write does inside its transaction, in this order. */
export interface WriteSteps<T> {
  /**
   * Who writes, its credential checked again inside the transaction (a revoke or sign-out
   * that answered while the write waited for its transaction is seen; no lock is taken, so
   * neither waits for the other), and the organization its ids must belong to.
   */
  caller(tx: Db): Promise<{ caller: Caller; organizationId?: string | null }>;
  /** The ids the operation's declaration names in this request. */
  ids(): Ids | Promise<Ids>;
  /** The change, by the feature's service, and what it reports for the audit log. */
  change(tx: Db, caller: Caller): Promise<{ audit: AuditEntry; result: T }>;
}

/**
 * Runs one write of an operation: in one transaction, the caller found and authorized,
 * the change made, its audit event recorded. A refusal or a failure (anything thrown)
 * changes nothing. The API's access middleware and the portal's forms both write so.
 */
export async function authorizedWrite<T>(
  sql: Sql,
  operation: Operation,
  requestId: string,
  steps: WriteSteps<T>,
): Promise<T> {
  const action = operation.audit;
  if (action === undefined) throw new Error('a write must declare its audit action');
  return sql.begin(async (tx) => {
    const { caller, organizationId } = await steps.caller(tx);
    await authorizeCaller(tx, caller, operation.access, steps.ids, organizationId);
    const { audit, result } = await steps.change(tx, caller);
    await insertAuditEvent(tx, { ...audit, action, caller, requestId });
    return result;
  }) as Promise<T>;
}
