/**
 * Task `archive_stale_devices`, hourly from the crontab: a device stale for longer than
 * the `archive_stale_after_days` of the nearest org unit up its chain that has one is
 * archived, as an admin's archive does it (the same transition, hence the same
 * `device.archived` webhook, here with `reason: "stale"`), and audited as `device.archive`
 * by the system with `details.reason: "stale"`. A chain without a value never archives.
 */
import type { Task } from 'graphile-worker';
import { insertAuditEvent } from '../../api/access/audit_events.ts';
import { type Db, transaction } from '../../api/db/client.ts';
import { transitionDevice } from '../../api/devices/lifecycle_service.ts';
import { iso } from '../../api/http/openapi.ts';
import type { TaskDeps } from '../worker_deps.ts';
import { staleAfterSeconds } from './sweep_stale_devices.ts';

export const ARCHIVE_STALE_DEVICES_TASK = 'archive_stale_devices';

/**
 * One scan of the fleet per run finds at most SCAN_LIMIT due devices (more: the task runs
 * again at once); they are archived BATCH per transaction.
 */
const SCAN_LIMIT = 10_000;
const BATCH = 100;

interface Due {
  id: string;
  days: number;
  last_checkin: Date | null;
}

export function archiveStaleDevicesTask(deps: TaskDeps): Task {
  return async (_payload, helpers) => {
    const { archived, more } = await archiveStaleDevices(
      deps.sql,
      staleAfterSeconds(deps.config),
      `job:${helpers.job.id}`,
    );
    if (archived.length > 0) deps.log.info('archived stale devices', { devices: archived.length });
    // The next run follows at once, and the dead build check beside it gets its turn first.
    if (more) await helpers.addJob(ARCHIVE_STALE_DEVICES_TASK, {}, { maxAttempts: 3 });
  };
}

/**
 * Each unit's value, inherited down the tree (the nearest unit up the chain with a value
 * decides), over the organizations that set one anywhere; and the devices under a value
 * that are stale for longer than it. Over `limits l`, `devices d`, `device_heartbeats h`.
 */
function dueDevices(db: Db, staleAfter: number) {
  return db`
    with recursive limits (id, days) as (
      select id, archive_stale_after_days from org_units
       where parent_id is null
         and organization_id in (select organization_id from org_units where archive_stale_after_days is not null)
      union all
      select c.id, coalesce(c.archive_stale_after_days, l.days)
        from org_units c join limits l on c.parent_id = l.id
    )
    select d.id, l.days, h.at as last_checkin
      from devices d
      join limits l on l.id = d.oe_id
      left join device_heartbeats h on h.device_id = d.id
     where l.days is not null
       and device_status(d.archived_at, d.deprovisioned_at, d.agent_secret_issued_at, h.at,
                         make_interval(secs => ${staleAfter})) = 'stale'
       and greatest(h.at, d.agent_secret_issued_at) + make_interval(secs => ${staleAfter})
           + make_interval(days => l.days) < now()`;
}

/**
 * Archives the devices that are due, BATCH per transaction; returns their ids, and whether
 * the scan stopped at its limit. Each batch locks its devices (`skip locked`) and checks
 * them again as they are once locked, so two sweeps at once never archive, audit or
 * announce one device twice.
 */
export async function archiveStaleDevices(
  db: Db,
  staleAfter: number,
  requestId: string,
  batch = BATCH,
): Promise<{ archived: string[]; more: boolean }> {
  const found = await db<{ id: string }[]>`
    select id from (${dueDevices(db, staleAfter)}) due order by id limit ${SCAN_LIMIT}`;
  const ids = found.map((r) => r.id);
  const archived: string[] = [];
  for (let i = 0; i < ids.length; i += batch) {
    archived.push(...(await archiveBatch(db, staleAfter, requestId, ids.slice(i, i + batch))));
  }
  return { archived, more: ids.length === SCAN_LIMIT };
}

async function archiveBatch(db: Db, staleAfter: number, requestId: string, ids: string[]): Promise<string[]> {
  return transaction(db, async (tx) => {
    // Read by the trigger that emits `device.archived`, for this transaction only.
    await tx`select set_config('fleet.archive_reason', 'stale', true)`;
    const due = await tx<Due[]>`
      ${dueDevices(tx, staleAfter)} and d.id = any(${ids}::uuid[])
       order by d.id
       for update of d skip locked`;
    for (const device of due) {
      // The poll interval, for the device row it returns (stale after three intervals).
      const { audit } = await transitionDevice(tx, 'archive', device.id, staleAfter / 3);
      await insertAuditEvent(tx, {
        ...audit,
        action: 'device.archive',
        caller: 'system',
        requestId,
        details: {
          reason: 'stale',
          archive_stale_after_days: device.days,
          agent_last_checkin: iso(device.last_checkin),
        },
      });
    }
    return due.map((d) => d.id);
  });
}
