/**
 * A rollout's devices as the judge and its readers see them, by the database's rules
 * (`device_status`, `merkmal_convergence`): each device's ring, status and convergence on
 * the rollout's Merkmal, and its last report of it (`rolloutDevices`, which the device list
 * pages through), and each ring's figures counted over them (`ringFigures`: the judge
 * reads the open ring's; the Rollout object shows every ring's, zeros for a ring not
 * opened yet).
 */
import type { Db } from '../db/client.ts';
import { effectiveTemplateOf } from '../devices/repo.ts';

export interface RingFigures {
  ring: number;
  percent: number;
  devices: number;
  opened_at: string | null;
  /** Seconds since it opened, by the database's clock (the transaction's); null while closed. */
  soaked: number | null;
  /** Its devices that are still managed (not archived or deprovisioned): zero for an empty ring. */
  members: number;
  /** Of its live devices (status `active`): how many converged, are pending, failed. */
  converged: number;
  pending: number;
  failed: number;
  /** Failures an admin accepted by resuming after an automatic pause. */
  accepted_failures: number;
}

/**
 * Every device of the rollout, as SQL to select from: `ring`, `device_id`, `serial`,
 * `hostname`, `status` (`device_status`), `convergence` on the rollout's Merkmal, or of its
 * device action (null while its ring is closed, and for a device that has none: enrolled,
 * deprovisioned, archived) and its last report of the Merkmal (`reported_event`,
 * `reported_at`, `reported_detail`; none for a device action).
 */
export function rolloutDevices(db: Db, rolloutId: string, pollIntervalSeconds: number) {
  return db`
    select rd.ring::int as ring, d.id as device_id, d.serial, d.hostname, s.status,
           case when rr.opened_at is null or s.status not in ('active', 'stale') then null
                when r.device_action is null then
             merkmal_convergence(
               coalesce(o.desired, case when wm.merkmal is null then 'absent' else 'present' end),
               o.changed_seq, o.reported_event, o.reported_seq, o.reported_at, d.agent_secret_issued_at)
                -- A device action: succeeded is converged, failed or expired (an overdue one too) failed.
                else coalesce((
                  select case when a.status = 'succeeded' then 'converged'
                              when a.status in ('failed', 'expired')
                                or (a.status in ('pending', 'delivered') and a.expires_at <= now()) then 'failed'
                              else 'pending' end
                  from device_actions a where a.rollout_id = r.id and a.device_id = d.id
                  order by a.created_at desc limit 1), 'pending')
           end as convergence,
           o.reported_event, o.reported_at, o.reported_detail
    from rollout_devices rd
    join rollouts r on r.id = rd.rollout_id
    join rollout_rings rr on rr.rollout_id = rd.rollout_id and rr.ring = rd.ring
    join devices d on d.id = rd.device_id
    left join device_heartbeats h on h.device_id = d.id
    ${effectiveTemplateOf(db)}
    left join workspace_merkmale wm on wm.workspace = dt.workspace and wm.merkmal = r.merkmal
    left join device_merkmal_outcomes o on o.device_id = d.id and o.merkmal = r.merkmal
    cross join lateral (
      select device_status(d.archived_at, d.deprovisioned_at, d.agent_secret_issued_at, h.at,
                           make_interval(secs => ${3 * pollIntervalSeconds}::int)) as status
    ) s
    where rd.rollout_id = ${rolloutId}`;
}

export async function ringFigures(db: Db, rolloutId: string, pollIntervalSeconds: number): Promise<RingFigures[]> {
  return db<RingFigures[]>`
    with counted as (${rolloutDevices(db, rolloutId, pollIntervalSeconds)})
    select rr.ring::int, rr.percent::int, rr.devices, rr.opened_at, rr.accepted_failures,
           extract(epoch from now() - rr.opened_at)::float8 as soaked,
           (select count(*) from counted c
             where c.ring = rr.ring and c.status not in ('archived', 'deprovisioned'))::int as members,
           (select count(*) from counted c
             where c.ring = rr.ring and c.status = 'active' and c.convergence = 'converged')::int as converged,
           (select count(*) from counted c
             where c.ring = rr.ring and c.status = 'active' and c.convergence = 'pending')::int as pending,
           (select count(*) from counted c
             where c.ring = rr.ring and c.status = 'active' and c.convergence = 'failed')::int as failed
    from rollout_rings rr
    where rr.rollout_id = ${rolloutId}
    order by rr.ring`;
}
