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

/**
 * One scan of the fleet per run finds at most SCAN_LIMIT devices (the rest wait for the
 * next run); they are announced BATCH per statement, each an event and a delivery job per
 * subscribed webhook, so a site that loses its network (thousands stale at once) never
 * makes a statement run into the database's time limit.
 */
const SCAN_LIMIT = 20_000;
const BATCH = 500;

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

/** Announces the devices that went stale and were not yet announced for this silence; returns their ids. */
export async function sweepStaleDevices(db: Db, staleAfter: number, batch = BATCH): Promise<string[]> {
  const found = await db<{ id: string }[]>`
    select d.id
      from devices d
      left join device_heartbeats h on h.device_id = d.id
     where device_status(d.archived_at, d.deprovisioned_at, d.agent_secret_issued_at, h.at,
                         make_interval(secs => ${staleAfter})) = 'stale'
       and not exists (select from device_stale_marks m
                        where m.device_id = d.id and m.silent_since = greatest(h.at, d.agent_secret_issued_at))
     order by d.id
     limit ${SCAN_LIMIT}`;
  const ids = found.map((r) => r.id);
  const announced: string[] = [];
  for (let i = 0; i < ids.length; i += batch) {
    announced.push(...(await announce(db, staleAfter, ids.slice(i, i + batch))));
  }
  return announced;
}

/**
 * Marks those of `ids` that are still stale and not yet marked for this silence, and
 * emits `device.stale` for each in the same statement. The upsert settles two sweeps at
 * once: the second waits for the first's row and then finds it marked already. Both take
 * the rows in id order, so neither waits for the other while holding a row it needs.
 */
async function announce(db: Db, staleAfter: number, ids: string[]): Promise<string[]> {
  const rows = await db<{ device_id: string }[]>`
    with stale as (
      select d.id, d.organization_id, d.serial, d.hostname, d.oe_id, h.at as last_checkin,
             greatest(h.at, d.agent_secret_issued_at) as silent_since
        from devices d
        left join device_heartbeats h on h.device_id = d.id
       where d.id = any(${ids}::uuid[])
         and device_status(d.archived_at, d.deprovisioned_at, d.agent_secret_issued_at, h.at,
                           make_interval(secs => ${staleAfter})) = 'stale'
    ), marked as (
      insert into device_stale_marks as m (device_id, silent_since)
      select id, silent_since from stale order by id
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
