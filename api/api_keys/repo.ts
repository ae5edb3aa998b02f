/**
 * Organization API keys: created with a random secret shown once, stored only as its
 * SHA-256 hash (access/keys.ts finds a key by it), revoked for good.
 */
import { afterCursor } from '../db/keyset.ts';
import type { Db } from '../db/client.ts';
import { API_KEY_PREFIX } from '../access/keys.ts';
import { hashSecret, randomToken } from '../http/crypto.ts';
import type { Cursor } from '../http/pagination.ts';

/** How much of a key a list shows: enough to recognise it, far too little to use it. */
const SHOWN_PREFIX_LENGTH = 12;

export type ApiKeyRole = 'admin' | 'viewer';

export interface ApiKeyRow {
  id: string;
  organization_id: string;
  name: string;
  role: ApiKeyRole;
  prefix: string;
  created_at: Date;
  expires_at: Date | null;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

/** A new key: 160 random bits after the `fpk_` prefix. Returns the row and the key, once. */
export async function createApiKey(
  db: Db,
  input: { organizationId: string; name: string; role: ApiKeyRole; expiresAt: Date | null },
): Promise<{ row: ApiKeyRow; key: string }> {
  const key = API_KEY_PREFIX + randomToken(20);
  const [row] = await db<ApiKeyRow[]>`
    insert into api_keys (organization_id, name, role, prefix, key_hash, expires_at)
    values (${input.organizationId}, ${input.name}, ${input.role}, ${key.slice(0, SHOWN_PREFIX_LENGTH)},
            ${hashSecret(key)}, ${input.expiresAt})
    returning id, organization_id, name, role, prefix, created_at, expires_at, last_used_at, revoked_at`;
  return { row: row!, key };
}

export async function listApiKeys(db: Db, organizationId: string, cursor: Cursor | null, limit: number) {
  return db<ApiKeyRow[]>`
    select id, organization_id, name, role, prefix, created_at, expires_at, last_used_at, revoked_at
    from api_keys
    where organization_id = ${organizationId} and ${afterCursor(db, cursor)}
    order by created_at, id
    limit ${limit + 1}`;
}

/**
 * Sets `revoked_at` once; a second revoke keeps the first time. Null: no such key. One
 * update of the key's row, on which no request made with the key holds a lock (access/keys.ts
 * reads the key without one), so it never waits for the requests under way with the key;
 * every request that starts after it committed finds the key revoked.
 */
export async function revokeApiKey(db: Db, id: string): Promise<ApiKeyRow | null> {
  const [row] = await db<ApiKeyRow[]>`
    update api_keys set revoked_at = coalesce(revoked_at, clock_timestamp())
    where id = ${id}
    returning id, organization_id, name, role, prefix, created_at, expires_at, last_used_at, revoked_at`;
  return row ?? null;
}

export async function getApiKey(db: Db, id: string): Promise<ApiKeyRow | null> {
  const [row] = await db<ApiKeyRow[]>`
    select id, organization_id, name, role, prefix, created_at, expires_at, last_used_at, revoked_at
    from api_keys where id = ${id}`;
  return row ?? null;
}
