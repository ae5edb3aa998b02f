/**
 * Escrowed disk recovery keys (the device side: jobs/iso/README.md, Disk encryption), shared
 * by the API routes and the portal. A key is sealed with AES-256-GCM under
 * DISK_KEY_ENCRYPTION_KEY, bound to its device, LUKS UUID and key slot; it is opened only to
 * answer a reveal or to hand a revealed key to its device's agent for rotation.
 */
import type { AuditEntry } from '../access/declaration.ts';
import type { AppConfig } from '../config.ts';
import type { Db, Sql } from '../db/client.ts';
import { bearerToken } from '../http/auth.ts';
import { hashSecret } from '../http/crypto.ts';
import { ApiError, notFound } from '../http/errors.ts';
import { open, seal } from '../http/sealed_box.ts';
import * as repo from './repo.ts';
import type { EscrowInput, LuksVolumeType } from './schemas.ts';

export function diskEncryptionUnavailable(): ApiError {
  return new ApiError(
    'disk_encryption_unavailable',
    'disk encryption is not available: the service has no key for escrowed recovery keys (DISK_KEY_ENCRYPTION_KEY)',
  );
}

function keyOf(config: Pick<AppConfig, 'diskKeyEncryptionKey'>): Uint8Array {
  if (config.diskKeyEncryptionKey === undefined) throw diskEncryptionUnavailable();
  return config.diskKeyEncryptionKey;
}

/** What the sealed key is bound to: the row's fields that never change. */
function sealContext(row: { device_id: string; luks_uuid: string; keyslot: number }): string {
  return `disk_key:${row.device_id}:${row.luks_uuid}:${row.keyslot}`;
}

const refusals = {
  device_archived: 'this device is archived; its agent may no longer call in',
  device_deprovisioned: 'this device is deprovisioned; an admin must reprovision it before its agent can call in again',
} as const;

/**
 * The device of the bearer credential: an agent secret, or a bootstrap token (which stays
 * unused: the agent bootstraps with it at first boot). Unknown: 401 `invalid_agent_secret`;
 * an expired bootstrap token: 401 `invalid_bootstrap_token`; a device no longer live: 403.
 */
export async function escrowingDevice(db: Db, authorization: string | undefined): Promise<repo.CredentialDevice> {
  const token = bearerToken(authorization);
  const device =
    token !== null && /^[A-Za-z0-9_-]{43}$/.test(token)
      ? await repo.credentialDevice(db, hashSecret(token))
      : undefined;
  if (!device) {
    throw new ApiError(
      'invalid_agent_secret',
      'a valid agent secret or bootstrap token is required (Authorization: Bearer <agent_secret> or Bearer <bootstrap_token>)',
      { headers: { 'WWW-Authenticate': 'Bearer' } },
    );
  }
  if (device.expired) {
    throw new ApiError('invalid_bootstrap_token', 'the bootstrap token has expired; an admin reprovisions the device', {
      headers: { 'WWW-Authenticate': 'Bearer' },
    });
  }
  if (device.archived_at !== null) throw new ApiError('device_archived', refusals.device_archived);
  if (device.deprovisioned_at !== null) throw new ApiError('device_deprovisioned', refusals.device_deprovisioned);
  return device;
}

export async function escrow(
  sql: Sql,
  config: Pick<AppConfig, 'diskKeyEncryptionKey'>,
  device: repo.CredentialDevice,
  input: EscrowInput,
): Promise<repo.DiskKeyRow> {
  const key = keyOf(config);
  const sealed = await seal(
    key,
    sealContext({ device_id: device.id, luks_uuid: input.luks_uuid, keyslot: input.keyslot }),
    input.recovery_key,
  );
  const row = await repo.insertKey(sql, {
    organizationId: device.organization_id,
    deviceId: device.id,
    devicePath: input.device_path,
    luksUuid: input.luks_uuid,
    keyslot: input.keyslot,
    sealed,
    replaces: input.replaces,
  });
  if (row === null) {
    const message = `disk key ${input.replaces} is no key of this device`;
    throw new ApiError('invalid_request', message, { details: [{ path: ['replaces'], message }] });
  }
  return row;
}

/**
 * Opens a key for an admin: marks it revealed (so the device's next check-in rotates it),
 * fires `disk_key.revealed` in the same transaction, and returns the audit entry with the
 * reason. Never the key in the audit entry or the webhook.
 */
export async function reveal(
  db: Db,
  config: Pick<AppConfig, 'diskKeyEncryptionKey'>,
  id: string,
  reason: string,
): Promise<{ recoveryKey: string; row: repo.DiskKeyRow; audit: AuditEntry }> {
  const key = keyOf(config);
  const row = await repo.markRevealed(db, id);
  if (!row) throw notFound('disk key', id);
  const recoveryKey = await open(key, sealContext(row), row.key_sealed);
  await db`
    select emit_webhook_event(${row.organization_id}, 'disk_key.revealed',
      jsonb_build_object('device_id', ${row.device_id}::uuid, 'key_id', ${row.id}::uuid, 'reason', ${reason}::text))`;
  const { key_sealed: _sealed, ...plain } = row;
  return {
    recoveryKey,
    row: plain,
    audit: {
      organizationId: row.organization_id,
      targetType: 'disk_key',
      targetId: row.id,
      details: { reason, device_id: row.device_id, luks_uuid: row.luks_uuid, keyslot: row.keyslot },
    },
  };
}

/**
 * The rotation a check-in hands the agent for a revealed key (`keyId`, from the check-in's
 * read), or null when there is none or the service cannot open it.
 */
export async function rotationOf(
  db: Db,
  config: Pick<AppConfig, 'diskKeyEncryptionKey'>,
  keyId: string | null,
): Promise<{ key_id: string; luks_uuid: string; recovery_key: string } | null> {
  if (keyId === null || config.diskKeyEncryptionKey === undefined) return null;
  const row = await repo.keyToRotate(db, keyId);
  if (!row) return null;
  const recoveryKey = await open(config.diskKeyEncryptionKey, sealContext(row), row.key_sealed);
  return { key_id: row.id, luks_uuid: row.luks_uuid, recovery_key: recoveryKey };
}

/**
 * What an inventory's `luks` (each encrypted volume with its used key slots) says of the
 * device's escrowed keys: `verified` when the slot is there, `missing` when it is gone.
 * Call it in the transaction that stores the inventory.
 */
export async function verifyDiskKeys(db: Db, deviceId: string, luks: LuksVolumeType[]): Promise<repo.DiskKeyRow[]> {
  return repo.verifyKeys(db, deviceId, luks);
}
