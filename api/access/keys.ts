/**
 * Finding the organization key a request or a portal session carries: usable only while
 * neither revoked nor expired. The access layer owns this lookup; the API keys feature
 * creates, lists and revokes keys.
 */
import { constantTimeEqual } from '@oslojs/crypto/subtle';
import type { Db } from '../db/client.ts';
import { hashSecret } from '../http/crypto.ts';

/** Every organization key starts with this, so it is never mistaken for the operator token. */
export const API_KEY_PREFIX = 'fpk_';

export interface UsableKey {
  id: string;
  organization_id: string;
  name: string;
  role: 'admin' | 'viewer';
  key_hash: Uint8Array;
  /** Whether `last_used_at` is a minute old or more (or unset), so this use should move it. */
  stale_use: boolean;
}

/**
 * The key with this hash if it is neither revoked nor expired. It takes no lock: a revoke
 * (one update of the key's row) never waits for the requests made with the key, and each
 * request sees a revoke that has answered, because it reads the key after it started.
 */
export async function findUsableKey(db: Db, key: string): Promise<UsableKey | null> {
  const hash = hashSecret(key);
  const [row] = await db<UsableKey[]>`
    select id, organization_id, name, role, key_hash,
           coalesce(last_used_at <= now() - interval '1 minute', true) as stale_use
    from api_keys
    where key_hash = ${hash} and revoked_at is null and (expires_at is null or expires_at > now())`;
  // The index found the row by the hash; confirming it in constant time keeps the one
  // comparison TypeScript makes free of timing differences too.
  return row !== undefined && constantTimeEqual(row.key_hash, hash) ? row : null;
}

/** Whether the key is still neither revoked nor expired: a write asks again inside its transaction. */
export async function isKeyUsable(db: Db, id: string): Promise<boolean> {
  const usable = await db`
    select 1 from api_keys
    where id = ${id} and revoked_at is null and (expires_at is null or expires_at > now())`;
  return usable.length > 0;
}

/**
 * Moves `last_used_at`, at most once a minute per key whichever process asks. Never inside
 * a write's transaction: the row lock it takes would be held until that commits, and a
 * revoke of the key would wait for it.
 */
export async function touchApiKey(db: Db, id: string): Promise<void> {
  await db`
    update api_keys set last_used_at = now()
    where id = ${id} and (last_used_at is null or last_used_at <= now() - interval '1 minute')`;
}
