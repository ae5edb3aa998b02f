/**
 * A device's disk encryption as the fleet status counts it and the device list filters it,
 * from the escrowed recovery keys (api/disk_keys/ writes them; the counts and the filter
 * read them here, where the device views are).
 */
import type postgres from 'postgres';
import type { Db } from '../db/client.ts';

/** The states of a device's disk that fleet status counts (`disk_encryption`); each filters the device list too. */
export const DISK_ENCRYPTION_STATES = ['encrypted', 'escrowed', 'missing', 'unencrypted'] as const;
export type DiskEncryptionState = (typeof DISK_ENCRYPTION_STATES)[number];

/**
 * The organization's devices with a key that is not rotated (an encrypted disk), each with
 * whether one of those keys is held (escrowed or verified; else every one is missing): the
 * one rule of the fleet status's disk encryption counts and of the device list's filter.
 */
export function encryptedDevices(db: Db, organizationId: string) {
  return db`
    select k.device_id, bool_or(k.status in ('escrowed', 'verified')) as held
    from disk_keys k
    where k.organization_id = ${organizationId} and k.status <> 'rotated'
    group by k.device_id`;
}

/** Whether the device `deviceId` (a column) is in `state`: the devices fleet status counts in it. */
export function inDiskEncryptionState(
  db: Db,
  organizationId: string,
  deviceId: postgres.PendingQuery<postgres.Row[]>,
  state: DiskEncryptionState,
) {
  const encrypted = encryptedDevices(db, organizationId);
  switch (state) {
    case 'encrypted':
      return db`${deviceId} in (select e.device_id from (${encrypted}) e)`;
    case 'escrowed':
      return db`${deviceId} in (select e.device_id from (${encrypted}) e where e.held)`;
    case 'missing':
      return db`${deviceId} in (select e.device_id from (${encrypted}) e where not e.held)`;
    case 'unencrypted':
      return db`${deviceId} not in (select e.device_id from (${encrypted}) e)`;
  }
}
