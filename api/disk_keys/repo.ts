/** SQL of escrowed disk recovery keys. The key is stored sealed only (service.ts seals it). */
import type { Db, Sql } from '../db/client.ts';
import type { SealedType } from '../http/sealed_box.ts';
import type { LuksVolumeType } from './schemas.ts';

export interface DiskKeyRow {
  id: string;
  organization_id: string;
  device_id: string;
  device_path: string;
  luks_uuid: string;
  keyslot: number;
  status: 'escrowed' | 'verified' | 'missing' | 'rotated';
  escrowed_at: Date;
  verified_at: Date | null;
  revealed_at: Date | null;
}

const columns = (db: Db) =>
  db`id, organization_id, device_id, device_path, luks_uuid, keyslot, status, escrowed_at, verified_at, revealed_at`;

/** The device a bearer credential belongs to: its agent secret, or its bootstrap token (not used up here). */
export interface CredentialDevice {
  id: string;
  organization_id: string;
  deprovisioned_at: Date | null;
  archived_at: Date | null;
  /** A bootstrap token that has expired: the device is not told more than that. */
  expired: boolean;
}

export async function credentialDevice(db: Db, hash: Uint8Array): Promise<CredentialDevice | undefined> {
  const [row] = await db<CredentialDevice[]>`
    select d.id, d.organization_id, d.deprovisioned_at, d.archived_at, false as expired
    from devices d where d.agent_secret_hash = ${hash}
    union all
    select d.id, d.organization_id, d.deprovisioned_at, d.archived_at, t.expires_at <= now() as expired
    from bootstrap_tokens t join devices d on d.id = t.device_id
    where t.token_hash = ${hash}
    limit 1`;
  return row;
}

/**
 * Stores an escrowed key. A retried escrow of the same slot (the 201 was lost) replaces the
 * row that is not rotated yet; `replaces` (one of the device's keys) becomes `rotated` in the
 * same statement. Returns null when `replaces` names no key of the device.
 */
export async function insertKey(
  sql: Sql,
  input: {
    organizationId: string;
    deviceId: string;
    devicePath: string;
    luksUuid: string;
    keyslot: number;
    sealed: SealedType;
    replaces: string | undefined;
  },
): Promise<DiskKeyRow | null> {
  return sql.begin(async (tx) => {
    if (input.replaces !== undefined) {
      const [old] = await tx<{ id: string }[]>`
        select id from disk_keys where id = ${input.replaces} and device_id = ${input.deviceId} for update`;
      if (!old) return null;
    }
    const [row] = await tx<DiskKeyRow[]>`
      insert into disk_keys (organization_id, device_id, device_path, luks_uuid, keyslot, key_sealed)
      values (${input.organizationId}, ${input.deviceId}, ${input.devicePath}, ${input.luksUuid}, ${input.keyslot},
              ${tx.json(input.sealed as never)})
      on conflict (device_id, luks_uuid, keyslot) where status <> 'rotated' do update
        set device_path = excluded.device_path, key_sealed = excluded.key_sealed, status = 'escrowed',
            escrowed_at = now_ms(), verified_at = null, revealed_at = null
      returning ${columns(tx)}`;
    if (input.replaces !== undefined && input.replaces !== row!.id) {
      await tx`
        update disk_keys set status = 'rotated', rotated_at = now_ms(), replaced_by = ${row!.id}
        where id = ${input.replaces} and status <> 'rotated'`;
    }
    return row!;
  });
}

/** A device's keys, oldest first (keyset on escrowed_at, id). */
export async function listKeys(
  db: Db,
  deviceId: string,
  after: { at: Date; id: string } | null,
  limit: number,
): Promise<DiskKeyRow[]> {
  return db<DiskKeyRow[]>`
    select ${columns(db)} from disk_keys
    where device_id = ${deviceId}
      and ${after === null ? db`true` : db`(escrowed_at, id) > (${after.at}, ${after.id})`}
    order by escrowed_at, id
    limit ${limit + 1}`;
}

/** Marks the key revealed and returns it with its sealed value; null when there is none. */
export async function markRevealed(db: Db, id: string): Promise<(DiskKeyRow & { key_sealed: SealedType }) | null> {
  const [row] = await db<Array<DiskKeyRow & { key_sealed: SealedType }>>`
    update disk_keys set revealed_at = now_ms() where id = ${id}
    returning ${columns(db)}, key_sealed`;
  return row ?? null;
}

/** The revealed key a check-in hands the agent to rotate, with its sealed value. */
export async function keyToRotate(db: Db, id: string): Promise<(DiskKeyRow & { key_sealed: SealedType }) | null> {
  const [row] = await db<Array<DiskKeyRow & { key_sealed: SealedType }>>`
    select ${columns(db)}, key_sealed from disk_keys
    where id = ${id} and revealed_at is not null and status in ('escrowed', 'verified')`;
  return row ?? null;
}

/**
 * What an inventory's `luks` says of the device's keys that are not rotated: a key whose
 * slot is listed is `verified` (verified_at: now), else `missing`. Returns the keys changed.
 */
export async function verifyKeys(db: Db, deviceId: string, luks: LuksVolumeType[]): Promise<DiskKeyRow[]> {
  const slots = luks.flatMap((v) => v.keyslots.map((slot) => ({ luks_uuid: v.luks_uuid.toLowerCase(), slot })));
  return db<DiskKeyRow[]>`
    with seen as (
      select s.luks_uuid, s.slot
      from jsonb_to_recordset(${db.json(slots as never)}::jsonb) as s (luks_uuid text, slot int)
    )
    update disk_keys k
    set status = case when exists (select 1 from seen where seen.luks_uuid = k.luks_uuid and seen.slot = k.keyslot)
                      then 'verified' else 'missing' end,
        verified_at = case when exists (select 1 from seen where seen.luks_uuid = k.luks_uuid and seen.slot = k.keyslot)
                           then now_ms() else k.verified_at end
    where k.device_id = ${deviceId} and k.status <> 'rotated'
    returning ${columns(db)}`;
}
