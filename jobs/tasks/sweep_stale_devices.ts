/**
 * Task `sweep_stale_devices`, every five minutes from the crontab: each device that went
 * stale (the `device_status` rule: no check-in for three poll intervals since its last
 * check-in or its bootstrap) is announced once per stale period with the webhook
 * `device.stale`. A check-in starts a new period, so a device that goes stale again is
 * announced again. The mark lives in `device_stale_marks`, never in the device row.
 */
import type { Task } from 'graphile-worker';
import { DEFAULT_AGENT_POLL_INTERVAL_SECONDS } from '../../api/config.ts';
import type { Db } from '../../api/db/client.ts';
import type { TaskDeps, WorkerConfig } from '../worker_deps.ts';

export const SWEEP_STALE_DEVICES_TASK = 'sweep_stale_devices';

/** Three poll intervals without a check-in: the `stale_after` of `device_status`. */
export function staleAfterSeconds(config: Pick<WorkerConfig, 'agentPollIntervalSeconds'>): number {
  return 3 * (config.agentPollIntervalSeconds ?? DEFAULT_AGENT_POLL_INTERVAL_SECONDS);
}

export function sweepStaleDevicesTask(deps: TaskDeps): Task {
  return async () => {
    const announced = await sweepStaleDevices(deps.sql, staleAfterSeconds(deps.config));
    if (announced.length > 0) deps.log.info('devices went stale', { devices: announced.length });
  };
}

/**
 * Marks the devices that are stale and not yet marked for this silence, and emits
 * `device.stale` for each in the same statement; returns their ids. Devices marked already
 * are left out before the upsert, so a fleet that stays stale costs a read, not a row lock
 * per device and run. The upsert settles two sweeps at once: the second waits for the
 * first's row and then finds it marked already.
 */
export async function sweepStaleDevices(db: Db, staleAfter: number): Promise<string[]> {
  const rows = await db<{ device_id: string }[]>`
    with stale as (
      select d.id, d.organization_id, d.serial, d.hostname, d.oe_id, h.at as last_checkin,
             greatest(h.at, d.agent_secret_issued_at) as silent_since
        from devices d
        left join device_heartbeats h on h.device_id = d.id
       where device_status(d.archived_at, d.deprovisioned_at, d.agent_secret_issued_at, h.at,
                           make_interval(secs => ${staleAfter})) = 'stale'
         and not exists (select from device_stale_marks m
                          where m.device_id = d.id and m.silent_since = greatest(h.at, d.agent_secret_issued_at))
    ), marked as (
      insert into device_stale_marks as m (device_id, silent_since)
      select id, silent_since from stale
      on conflict (device_id) do update set silent_since = excluded.silent_since, marked_at = now_ms()
        where m.silent_since <> excluded.silent_since
      returning device_id
    )
    select s.id as device_id,
           emit_webhook_event(s.organization_id, 'device.stale', jsonb_build_object(
             'device_id', s.id, 'serial', s.serial, 'hostname', s.hostname, 'oe_id', s.oe_id,
             'agent_last_checkin', s.last_checkin))::text as emitted
      from stale s join marked m on m.device_id = s.id`;
  return rows.map((r) => r.device_id);
}
