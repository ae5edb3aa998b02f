/**
 * Transaction-level advisory locks named by a credential's hash (an organization key, a
 * portal session). Writes made with the credential take its lock shared and then read it
 * again; revoking or ending it takes the lock exclusively first. Not a row share lock:
 * PostgreSQL lets a new row share lock past an update or delete waiting for the old ones,
 * so a credential in constant use could never be revoked, while its lock manager queues a
 * shared request behind a waiting exclusive one.
 */
import type { Db } from './client.ts';

export type SecretKind = 'api_key' | 'portal_session';

/** The lock's name for a hash given as an SQL expression of type bytea (a value or a column). */
export function secretLockName(db: Db, kind: SecretKind, hash: ReturnType<Db>) {
  return db`hashtextextended(${`fleet:${kind}:`} || encode(${hash}, 'hex'), 0)`;
}

/** Takes the lock of the credential with this hash for the rest of the transaction. */
export async function lockSecret(
  db: Db,
  kind: SecretKind,
  hash: Uint8Array,
  mode: 'shared' | 'exclusive',
): Promise<void> {
  const name = secretLockName(db, kind, db`${hash}::bytea`);
  await (mode === 'shared'
    ? db`select pg_advisory_xact_lock_shared(${name})`
    : db`select pg_advisory_xact_lock(${name})`);
}
