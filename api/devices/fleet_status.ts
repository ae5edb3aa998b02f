/**
 * The fleet status of an organization (or of an org unit's subtree, or a group): how many
 * of its devices are in each status, and per catalog Merkmal how many are meant to have it
 * and how far they converged. One statement; the rules are the database's
 * (`device_status`, `device_catalog_outcomes`).
 */
import type { Db } from '../db/client.ts';
import { requireOrganization } from '../organizations/repo.ts';
import { requireOrgUnitOf } from '../org_units/repo.ts';
import { requireGroupOf } from './organize_repo.ts';
import { effectiveTemplateOf, statusOf } from './repo.ts';

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
      ? db`d.oe_id in (
          with recursive sub (id) as (
            select ${scope.oe_id}::uuid
            union all
            select u.id from org_units u join sub on u.parent_id = sub.id
          )
          select id from sub)`
      : scope.group_id !== undefined
        ? db`d.id in (select m.device_id from group_members m where m.group_id = ${scope.group_id})`
        : db`true`;
  const [row] = await db<Array<{ devices: FleetStatus['devices']; merkmale: FleetStatus['merkmale'] }>>`
    with fleet as materialized (
      select d.id, d.agent_secret_issued_at, dt.backend, dt.workspace, st.status
      from devices d
      left join device_heartbeats h on h.device_id = d.id
      ${effectiveTemplateOf(db)}
      ${statusOf(db, pollIntervalSeconds)}
      where d.organization_id = ${organizationId} and d.archived_at is null and ${inScope}
    ),
    counts as (
      select c.merkmal,
             count(*) filter (where c.state = 'present')::int as present,
             count(*) filter (where c.state = 'absent')::int as absent,
             count(*) filter (where c.convergence = 'converged')::int as converged,
             count(*) filter (where c.convergence = 'pending')::int as pending,
             count(*) filter (where c.convergence = 'failed')::int as failed
      from fleet f
      cross join lateral device_catalog_outcomes(f.id, f.backend, f.workspace, f.agent_secret_issued_at) c
      where f.status in ('active', 'stale')
      group by c.merkmal
    )
    select
      (select json_build_object(
         'total', count(*)::int,
         'enrolled', count(*) filter (where status = 'enrolled')::int,
         'active', count(*) filter (where status = 'active')::int,
         'stale', count(*) filter (where status = 'stale')::int,
         'deprovisioned', count(*) filter (where status = 'deprovisioned')::int)
       from fleet) as devices,
      (select coalesce(json_agg(json_build_object(
         'merkmal', m.key, 'name', m.name,
         'present', coalesce(n.present, 0), 'absent', coalesce(n.absent, 0),
         'converged', coalesce(n.converged, 0), 'pending', coalesce(n.pending, 0), 'failed', coalesce(n.failed, 0)
       ) order by m.key), '[]')
       from merkmale m left join counts n on n.merkmal = m.key
       where m.im_auftragskatalog and exists (select 1 from blueprints b where b.merkmal = m.key)) as merkmale`;
  return row!;
}
