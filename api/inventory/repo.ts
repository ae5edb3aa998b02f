/**
 * SQL of the software inventory: storing an agent's inventory by content (package sets
 * shared by every device with the same list), and the admins' reads of it.
 */
import { verifyDiskKeys } from '../disk_keys/service.ts';
import { Buffer } from 'node:buffer';
import type { Db, Sql } from '../db/client.ts';
import { ApiError, notFound } from '../http/errors.ts';
import { type AgentDeviceState, requireLiveDevice } from '../agent/auth.ts';
import { type InventoryPackage, packageSetHash, releaseOf, sortedPending } from './content.ts';
import type { InventoryRequestType } from './schemas.ts';
import { queueVulnerabilityMatch } from '../vulnerabilities/match_jobs.ts';

/** What storing an inventory did, for what runs after it (the disk keys' check of `luks`). */
export interface StoredInventory {
  deviceId: string;
  organizationId: string;
  packageSetId: string;
  release: string;
  /** The device's (package set, release) differs from before (or it is its first inventory): a match was queued. */
  matchQueued: boolean;
}

/**
 * Stores a live device's inventory (its `hash` checked by the caller) in one transaction:
 * the package set found or created by its content hash, the device's inventory row
 * replaced, `devices.inventory_hash` set, and, when the device's (package set, release)
 * changed, the organization's vulnerability match queued. A device deprovisioned
 * or archived meanwhile is 403 and nothing is written.
 */
export async function storeInventory(
  sql: Sql,
  deviceId: string,
  inventory: InventoryRequestType,
): Promise<StoredInventory> {
  const release = releaseOf(inventory.os);
  const pending = sortedPending(inventory.pending);
  const securityPending = pending.filter((p) => p.security).length;
  return sql.begin(async (tx) => {
    const setId = await findOrCreatePackageSet(tx, inventory.packages);
    // The device's row locked: a deprovision or archive racing this store waits or is seen.
    const [device] = await tx<Array<AgentDeviceState & { organization_id: string }>>`
      select id, organization_id, deprovisioned_at, archived_at from devices where id = ${deviceId} for update`;
    requireLiveDevice(device);
    const [row] = await tx<Array<{ old_set: string | null; old_release: string | null }>>`
      with old as (select package_set_id, release from device_inventories where device_id = ${deviceId})
      insert into device_inventories as di (device_id, organization_id, package_set_id, os_id, os_version_id,
        os_codename, release, kernel, pending, security_pending_count, reboot_required, luks, inventory_at)
      values (${deviceId}, ${device!.organization_id}, ${setId}, ${inventory.os.id}, ${inventory.os.version_id},
        ${inventory.os.codename}, ${release}, ${inventory.kernel}, ${tx.json(pending as never)}, ${securityPending},
        ${inventory.reboot_required}, ${inventory.luks === undefined ? null : tx.json(inventory.luks as never)}, now_ms())
      on conflict (device_id) do update set
        organization_id = excluded.organization_id, package_set_id = excluded.package_set_id,
        os_id = excluded.os_id, os_version_id = excluded.os_version_id, os_codename = excluded.os_codename,
        release = excluded.release, kernel = excluded.kernel, pending = excluded.pending,
        security_pending_count = excluded.security_pending_count, reboot_required = excluded.reboot_required,
        luks = excluded.luks, inventory_at = excluded.inventory_at
      returning (select package_set_id from old)::text as old_set, (select release from old) as old_release`;
    await tx`update devices set inventory_hash = ${Buffer.from(inventory.hash, 'hex')} where id = ${deviceId}`;
    // The escrowed disk keys are checked against the key slots the device reports, in the same transaction.
    if (inventory.luks !== undefined) await verifyDiskKeys(tx, deviceId, inventory.luks);
    const matchQueued = row!.old_set !== setId || row!.old_release !== release;
    if (matchQueued) {
      await queueVulnerabilityMatch(tx, device!.organization_id);
    }
    return { deviceId, organizationId: device!.organization_id, packageSetId: setId, release, matchQueued };
  });
}

/**
 * The id of the package set with exactly these packages, created with its packages when
 * new. Two devices sending the same new list at once: the second insert waits on the
 * content hash's unique key until the first commits, then finds its row.
 */
async function findOrCreatePackageSet(tx: Db, packages: readonly InventoryPackage[]): Promise<string> {
  const hash = packageSetHash(packages);
  // Locked until this transaction ends: the sweep of unused sets skips it (or, when the
  // sweep deleted it first, none is found and it is created anew).
  const [known] = await tx<{ id: string }[]>`
    select id::text from package_sets where content_hash = ${hash} for key share`;
  if (known) return known.id;
  const [created] = await tx<{ id: string }[]>`
    insert into package_sets (content_hash, packages_count) values (${hash}, ${packages.length})
    on conflict (content_hash) do nothing
    returning id::text`;
  if (!created) {
    const [other] = await tx<{ id: string }[]>`
      select id::text from package_sets where content_hash = ${hash} for key share`;
    return other!.id;
  }
  await tx`
    insert into package_set_packages (set_id, name, arch, version, source, source_version)
    select ${created.id}::bigint, p.name, p.arch, p.version, p.source, p.source_version
    from unnest(${packages.map((p) => p.name)}::text[], ${packages.map((p) => p.arch)}::text[],
                ${packages.map((p) => p.version)}::text[], ${packages.map((p) => p.source)}::text[],
                ${packages.map((p) => p.source_version)}::text[]) as p (name, arch, version, source, source_version)`;
  return created.id;
}

/** Sets deleted per transaction (with their packages: 2,000 rows a set). */
const SWEEP_BATCH = 100;

/**
 * Deletes the package sets no device's inventory refers to any more (each device moved
 * on to another list, or was deleted), with their packages and matches; returns how many.
 * A set an upload holds (found, not yet referred to) is skipped and looked at next time;
 * one referred to between the two statements is kept (the second reads anew, and no
 * upload can take a set this transaction holds).
 */
export async function deleteUnusedPackageSets(sql: Sql, batch = SWEEP_BATCH): Promise<number> {
  let deleted = 0;
  for (;;) {
    const { candidates, gone } = await sql.begin(async (tx) => {
      const found = await tx<{ id: number }[]>`
        select p.id from package_sets p
         where not exists (select 1 from device_inventories i where i.package_set_id = p.id)
         order by p.id limit ${batch}
           for update skip locked`;
      if (found.length === 0) return { candidates: 0, gone: 0 };
      const rows = await tx`
        delete from package_sets p
         where p.id = any(${found.map((f) => f.id)}::bigint[])
           and not exists (select 1 from device_inventories i where i.package_set_id = p.id)
        returning p.id`;
      return { candidates: found.length, gone: rows.length };
    });
    deleted += gone;
    if (candidates < batch) return deleted;
  }
}

export interface InventoryRow {
  os_id: string;
  os_version_id: string;
  os_codename: string;
  kernel: string;
  packages_count: number;
  pending: Array<{ name: string; installed: string; candidate: string; security: boolean }>;
  security_pending_count: number;
  reboot_required: boolean;
  inventory_at: Date;
}

function noInventory(deviceId: string): ApiError {
  return new ApiError(
    'no_inventory',
    `device ${deviceId} has sent no inventory yet; its agent sends it at its next check-in`,
  );
}

/** The device's inventory; 404 `not_found` for no such device, `no_inventory` before its first. */
export async function readInventory(db: Db, deviceId: string): Promise<InventoryRow> {
  const [row] = await db<Array<InventoryRow & { known: boolean; has: boolean }>>`
    select true as known, di.device_id is not null as has, di.os_id, di.os_version_id, di.os_codename, di.kernel,
           ps.packages_count, di.pending, di.security_pending_count, di.reboot_required, di.inventory_at
    from devices d
    left join device_inventories di on di.device_id = d.id
    left join package_sets ps on ps.id = di.package_set_id
    where d.id = ${deviceId}`;
  if (!row) throw notFound('device', deviceId);
  if (!row.has) throw noInventory(deviceId);
  return row;
}

/** A position in a device's package list: after this name and architecture. */
export interface PackageCursor {
  name: string;
  arch: string;
}

export function encodePackageCursor(p: PackageCursor): string {
  return Buffer.from(JSON.stringify([p.name, p.arch])).toString('base64url');
}

export function decodePackageCursor(cursor: string | undefined): PackageCursor | null {
  if (cursor === undefined) return null;
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (Array.isArray(value) && value.length === 2 && value.every((v) => typeof v === 'string')) {
      return { name: value[0] as string, arch: value[1] as string };
    }
  } catch {
    // below
  }
  throw new ApiError('invalid_request', 'the cursor is not one this list made', {
    details: [{ path: ['cursor'], message: 'not a cursor of this list' }],
  });
}

/** `q` as a LIKE prefix pattern (escape character: backslash): its `%`, `_` and backslashes match literally. */
function prefixPattern(q: string): string {
  return `${q.replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`;
}

/**
 * Up to `limit + 1` of the device's packages by name, then architecture (code point order,
 * whatever the database's collation), after the cursor; `q` a name prefix. 404 as `readInventory`.
 */
export async function listPackages(
  db: Db,
  deviceId: string,
  options: { q: string | undefined; after: PackageCursor | null; limit: number },
): Promise<InventoryPackage[]> {
  const [device] = await db<{ set_id: string | null }[]>`
    select di.package_set_id::text as set_id
    from devices d left join device_inventories di on di.device_id = d.id where d.id = ${deviceId}`;
  if (!device) throw notFound('device', deviceId);
  if (device.set_id === null) throw noInventory(deviceId);
  const { q, after, limit } = options;
  return db<InventoryPackage[]>`
    select p.name, p.version, p.arch, p.source, p.source_version
    from package_set_packages p
    where p.set_id = ${device.set_id}::bigint
      and ${q === undefined ? db`true` : db`p.name like ${prefixPattern(q)} escape '\\'`}
      and ${
        after === null
          ? db`true`
          : db`(p.name collate "C", p.arch collate "C") > (${after.name}::text collate "C", ${after.arch}::text collate "C")`
      }
    order by p.name collate "C", p.arch collate "C"
    limit ${limit + 1}`;
}
