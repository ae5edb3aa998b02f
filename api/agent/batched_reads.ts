/**
 * The reads of the check-ins of one turn of the event loop in one statement (api/agent/README.md,
 * Check-in). A check-in asking for its device joins the batch of its database (the replica or
 * the primary) and the batch is read by `setImmediate`, after the loop has handed every
 * request it read in this turn to its handler: under load one statement answers tens of
 * check-ins, which saves the API and the database a round trip each; a lone check-in waits
 * only for the end of the turn it is in. A batch that fails fails each of its check-ins
 * with the same error, so each falls back (replica → primary) or answers as it would alone.
 */
import { setImmediate } from 'node:timers';
import type { Db } from '../db/client.ts';
import { type CheckinRow, checkinStates } from './repo.ts';

interface Waiting {
  hash: Uint8Array;
  resolve: (row: CheckinRow | undefined) => void;
  reject: (err: unknown) => void;
}

/** The batch being gathered, per database; deleted when it is sent. */
const gathering = new WeakMap<Db, Waiting[]>();

/** The device behind the secret's hash (undefined: none), read with the other check-ins of this turn. */
export function checkinState(db: Db, hash: Uint8Array): Promise<CheckinRow | undefined> {
  return new Promise((resolve, reject) => {
    let batch = gathering.get(db);
    if (!batch) {
      batch = [];
      gathering.set(db, batch);
      setImmediate(readBatch, db, batch);
    }
    batch.push({ hash, resolve, reject });
  });
}

async function readBatch(db: Db, batch: Waiting[]): Promise<void> {
  gathering.delete(db);
  try {
    const rows = await checkinStates(
      db,
      batch.map((w) => w.hash),
    );
    for (let i = 0; i < batch.length; i++) batch[i]!.resolve(rows[i]);
  } catch (err) {
    for (const w of batch) w.reject(err);
  }
}
