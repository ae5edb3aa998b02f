/**
 * One chunk of a bulk change: the operation made for each item, each in a savepoint with its
 * own audit event, as its single change would be. The portal's bulk forms and the worker's
 * bulk jobs both change their items through it.
 */
import { insertAuditEvent } from './audit_events.ts';
import type { AuditEntry, Caller, Operation, RequestValues } from './declaration.ts';
import type postgres from 'postgres';
import type { Db } from '../db/client.ts';
import { ApiError } from '../http/errors.ts';

/** How many items one transaction of a bulk change changes: no transaction (nor lock) is held over all of them. */
export const BULK_CHUNK = 200;

/** What a bulk change did: the items it changed, and those a rule of the domain refused with its error. */
export interface BulkOutcome<T> {
  changed: T[];
  failed: Array<{ item: T; error: ApiError }>;
}

/** The steps of a bulk change: each item's request (as its API call would name it), a chunk's locks, each item's change. */
export interface BulkSteps<T> {
  requestOf(item: T): RequestValues;
  /** Before any change of a chunk: the rows the changes will lock, in the order single changes take them. */
  lock?(tx: Db, chunk: readonly T[]): Promise<void>;
  change(tx: Db, caller: Caller, item: T): Promise<{ audit: AuditEntry }>;
}

/** The refusals of a single item that leave the others to go on: a rule of the domain (an archived device's 409). */
const itemRefusals = new Set([400, 404, 409, 422]);

/**
 * Changes the chunk's items inside the caller's transaction `tx` (already authorized): the
 * chunk's locks first, then each item in a savepoint with its audit event, so an item a
 * rule refuses is rolled back alone and reported. Anything else is thrown (the chunk's
 * transaction is then rolled back whole).
 */
export async function changeChunk<T>(
  tx: postgres.TransactionSql,
  operation: Operation,
  caller: Caller,
  requestId: string,
  chunk: readonly T[],
  steps: BulkSteps<T>,
): Promise<BulkOutcome<T>> {
  const action = operation.audit;
  if (action === undefined) throw new Error('a write must declare its audit action');
  await steps.lock?.(tx, chunk);
  const outcome: BulkOutcome<T> = { changed: [], failed: [] };
  for (const item of chunk) {
    try {
      await tx.savepoint(async (sp) => {
        const { audit } = await steps.change(sp, caller, item);
        await insertAuditEvent(sp, { ...audit, action, caller, requestId });
      });
      outcome.changed.push(item);
    } catch (err) {
      if (!(err instanceof ApiError) || !itemRefusals.has(err.status)) throw err;
      outcome.failed.push({ item, error: err });
    }
  }
  return outcome;
}
