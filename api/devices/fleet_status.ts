/**
 * The fleet status of an organization (or of an org unit's subtree, or a group): how many
 * of its devices are in each status, and per catalog Merkmal how many are meant to have it
 * and how far they converged. One statement over the devices' fleet rows (`device_fleet`,
 * kept by triggers from the rules of `device_status` and `device_catalog_outcomes`), which
 * group by their catalog's text, so the Merkmal counts sum a few distinct catalogs; only
 * whether a reporting device is stale is decided here, by its heartbeat and the clock.
 */
import type { Db } from '../db/client.ts';
import { encryptedDevices } from './disk_encryption.ts';
import { requireOrganization } from '../organizations/repo.ts';
import { requireOrgUnitOf } from '../org_units/repo.ts';
import { updateCounts } from '../vulnerabilities/repo.ts';
import { requireGroupOf } from './organize_repo.ts';

export interface FleetStatus {
  devices: { total: number; enrolled: number; active: number; stale: number; deprovisioned: number };
  merkmale: Array<{
    merkmal: string;
    name: string;
    present: number;
    absent: number;
    converged: number;
    pending: number;
    failed: number;
  }>;
  /** Devices with pending security updates, needing a reboot, with a `high` or `critical` CVE. */
  updates: { security_pending: number; reboot_required: number; vulnerable_high: number };
  disk_encryption: { encrypted: number; escrowed: number; missing: number; unencrypted: number };
}

export interface FleetScope {
  /** That org unit's subtree. */
  oe_id?: string | undefined;
  /** That group's members. */
  group_id?: string | undefined;
}

/**
 * Over the organization's devices that are not archived (within the scope); the Merkmal
 * counts over the active and stale ones, every catalog Merkmal listed (by key), zero where
 * no device has it in its catalog. Unknown ids are 404, another organization's 422.
 */
export async function readFleetStatus(
  db: Db,
  organizationId: string,
  scope: FleetScope,
  pollIntervalSeconds: number,
): Promise<FleetStatus> {
  await requireOrganization(db, organizationId);
  if (scope.oe_id !== undefined) await requireOrgUnitOf(db, scope.oe_id, organizationId, 'oe_id');
  if (scope.group_id !== undefined) await requireGroupOf(db, scope.group_id, organizationId);
  const inScope =
    scope.oe_id !== undefined
      ? db`f.oe_id in (
          with recursive sub (id) as (
            select ${scope.oe_id}::uuid
            union all
            select u.id from org_units u join sub on u.parent_id = sub.id
          )
          select id from sub)`
      : scope.group_id !== undefined
        ? db`f.device_id in (select m.device_id from group_members m where m.group_id = ${scope.group_id})`
        : db`true`;
  const staleAfter = db`make_interval(secs => ${3 * pollIntervalSeconds}::int)`;
  const [row] = await db<Array<Omit<FleetStatus, 'disk_encryption'>>>`
    with kinds as materialized (
      select f.bucket, f.catalog, count(*)::int as n,
             count(*) filter (where device_status(null, null, f.issued_at, h.at, ${staleAfter}) = 'stale')::int as stale
      from device_fleet f
      left join device_heartbeats h on h.device_id = f.device_id
      where f.organization_id = ${organizationId} and ${inScope}
      group by f.bucket, f.catalog
    ),
    items as (
      select split_part(item, ':', 1) as merkmal, split_part(item, ':', 2) as state,
             split_part(item, ':', 3) as convergence, k.n
      from kinds k cross join lateral string_to_table(k.catalog, ' ') item
      where k.bucket = 'reporting' and k.catalog <> ''
    ),
    counts as (
      select merkmal,
             coalesce(sum(n) filter (where state = 'present'), 0)::int as present,
             coalesce(sum(n) filter (where state = 'absent'), 0)::int as absent,
             coalesce(sum(n) filter (where convergence = 'converged'), 0)::int as converged,
             coalesce(sum(n) filter (where convergence = 'pending'), 0)::int as pending,
             coalesce(sum(n) filter (where convergence = 'failed'), 0)::int as failed
      from items
      group by merkmal
    )
    select
      (select json_build_object(
         'total', coalesce(sum(n), 0)::int,
         'enrolled', coalesce(sum(n) filter (where bucket = 'enrolled'), 0)::int,
         'active', coalesce(sum(n - stale) filter (where bucket = 'reporting'), 0)::int,
         'stale', coalesce(sum(stale), 0)::int,
         'deprovisioned', coalesce(sum(n) filter (where bucket = 'deprovisioned'), 0)::int)
       from kinds) as devices,
      (select coalesce(json_agg(json_build_object(
         'merkmal', m.key, 'name', m.name,
         'present', coalesce(n.present, 0), 'absent', coalesce(n.absent, 0),
         'converged', coalesce(n.converged, 0), 'pending', coalesce(n.pending, 0), 'failed', coalesce(n.failed, 0)
       ) order by m.key), '[]')
       from merkmale m left join counts n on n.merkmal = m.key
       where m.im_auftragskatalog and exists (select 1 from blueprints b where b.merkmal = m.key)) as merkmale,
      ${updateCounts(
        db,
        db`i.organization_id = ${organizationId}
           and exists (select 1 from device_fleet f where f.device_id = i.device_id and ${inScope})`,
      )} as updates`;
  // The devices of the scope with keys that are not rotated (a partial index of the organization's keys).
  const [keys] = await db<Array<{ encrypted: number; escrowed: number }>>`
    select count(*)::int as encrypted, count(*) filter (where e.held)::int as escrowed
    from (${encryptedDevices(db, organizationId)}) e join device_fleet f on f.device_id = e.device_id
    where ${inScope}`;
  const { encrypted, escrowed } = keys!;
  return {
    ...row!,
    disk_encryption: {
      encrypted,
      escrowed,
      missing: encrypted - escrowed,
      unencrypted: Math.max(0, row!.devices.total - encrypted),
    },
  };
}
