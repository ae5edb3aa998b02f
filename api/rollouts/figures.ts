/**
 * Each ring's figures: its devices, and over those that are live and not stale, how many
 * converged, are pending or failed on the rollout's Merkmal, by the database's rules
 * (`device_status`, `merkmal_convergence`). The judge reads the open ring's; the Rollout
 * object shows every ring's (zeros for a ring not opened yet).
 */
import type { Db } from '../db/client.ts';
import { effectiveTemplateOf } from '../devices/repo.ts';

export interface RingFigures {
  ring: number;
  percent: number;
  devices: number;
  opened_at: string | null;
  converged: number;
  pending: number;
  failed: number;
  /** Failures an admin accepted by resuming after an automatic pause. */
  accepted_failures: number;
}

export async function ringFigures(db: Db, rolloutId: string, pollIntervalSeconds: number): Promise<RingFigures[]> {
  return db<RingFigures[]>`
    with counted as (
      select rd.ring, c.convergence
      from rollout_devices rd
      join rollouts r on r.id = rd.rollout_id
      join rollout_rings rr on rr.rollout_id = rd.rollout_id and rr.ring = rd.ring and rr.opened_at is not null
      join devices d on d.id = rd.device_id
      left join device_heartbeats h on h.device_id = d.id
      ${effectiveTemplateOf(db)}
      left join workspace_merkmale wm on wm.workspace = dt.workspace and wm.merkmal = r.merkmal
      left join device_merkmal_outcomes o on o.device_id = d.id and o.merkmal = r.merkmal
      cross join lateral (
        select merkmal_convergence(
                 coalesce(o.desired, case when wm.merkmal is null then 'absent' else 'present' end),
                 o.changed_seq, o.reported_event, o.reported_seq, o.reported_at, d.agent_secret_issued_at) as convergence
      ) c
      where rd.rollout_id = ${rolloutId}
        and device_status(d.archived_at, d.deprovisioned_at, d.agent_secret_issued_at, h.at,
                          make_interval(secs => ${3 * pollIntervalSeconds}::int)) = 'active'
    )
    select rr.ring::int, rr.percent::int, rr.devices, rr.opened_at, rr.accepted_failures,
           (select count(*) from counted c where c.ring = rr.ring and c.convergence = 'converged')::int as converged,
           (select count(*) from counted c where c.ring = rr.ring and c.convergence = 'pending')::int as pending,
           (select count(*) from counted c where c.ring = rr.ring and c.convergence = 'failed')::int as failed
    from rollout_rings rr
    where rr.rollout_id = ${rolloutId}
    order by rr.ring`;
}
