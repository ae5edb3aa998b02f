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

/** Devices archived per transaction, and transactions per run: a run stays short. */
const BATCH = 100;
const BATCHES_PER_RUN = 20;

interface Due {
  id: string;
  days: number;
  last_checkin: Date | null;
}

export function archiveStaleDevicesTask(deps: TaskDeps): Task {
  return async (_payload, helpers) => {
    const requestId = `job:${helpers.job.id}`;
    const staleAfter = staleAfterSeconds(deps.config);
    let archived = 0;
    for (let i = 0; i < BATCHES_PER_RUN; i++) {
      const ids = await archiveStaleDevices(deps.sql, staleAfter, requestId, BATCH);
      archived += ids.length;
      if (ids.length < BATCH) break;
      // More are due: the next run follows at once, and the dead build check beside it gets its turn.
      if (i === BATCHES_PER_RUN - 1) await helpers.addJob(ARCHIVE_STALE_DEVICES_TASK, {}, { maxAttempts: 3 });
    }
    if (archived > 0) deps.log.info('archived stale devices', { devices: archived });
  };
}

/**
 * Archives up to `limit` devices that are due, in one transaction; returns their ids. The
 * devices are locked (`skip locked`) and checked again as they are once locked, so two
 * sweeps at once never archive, audit or announce one device twice.
 */
export async function archiveStaleDevices(
  db: Db,
  staleAfter: number,
  requestId: string,
  limit = BATCH,
): Promise<string[]> {
  return transaction(db, async (tx) => {
    // Read by the trigger that emits `device.archived`, for this transaction only.
    await tx`select set_config('fleet.archive_reason', 'stale', true)`;
    // Each unit's value, inherited down the tree; only organizations that set one anywhere.
    const due = await tx<Due[]>`
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
             + make_interval(days => l.days) < now()
       order by d.id
       limit ${limit}
       for update of d skip locked`;
    for (const device of due) {
      const { audit } = await transitionDevice(tx, 'archive', device.id);
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
