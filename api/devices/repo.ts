/** SQL reads of devices shared by every feature that returns a Device. */
import type { Db } from '../db/client.ts';
import { ApiError } from '../http/errors.ts';
import { iso } from '../http/openapi.ts';
import { isUuid } from '../http/uuid.ts';
import type { DeviceType } from './schemas.ts';

export interface DeviceRow {
  id: string;
  organization_id: string;
  serial: string;
  hostname: string | null;
  oe_id: string;
  group_ids: string[];
  template_id: string;
  backend: string;
  enrollment_session_id: string | null;
  deprovisioned_at: Date | null;
  archived_at: Date | null;
  agent_secret_issued_at: Date | null;
  agent_last_checkin: Date | null;
  agent_version: string | null;
  created_at: Date;
  status: DeviceStatus;
  convergence: Convergence | null;
}

/** A device's status, by the database's `device_status` (the one definition). */
export type DeviceStatus = 'archived' | 'deprovisioned' | 'enrolled' | 'stale' | 'active';
/** A Merkmal's or a device's convergence, by the database's `merkmal_convergence` and `worst_convergence`. */
export type Convergence = 'converged' | 'pending' | 'failed';

/**
 * 409 `device_archived`: an archived device changes no more (reprovision, org unit, group
 * membership, catalog selections). Callers decide it on the device's row as locked or
 * updated by their own statement (`archived_at is not null`), so an archive racing the
 * change either waits for it or is seen by it.
 */
export function deviceArchived(deviceId: string, refusal: string): ApiError {
  return new ApiError('device_archived', `device ${deviceId} is archived: ${refusal}`, { status: 409 });
}

/**
 * The select list of a Device, over `devices d`, with its heartbeat `h`, its effective
 * template `dt` and its status `st` joined. Template and backend follow the
 * default-template rule (`effectiveTemplateOf`); the stale rule needs the agent's poll
 * interval. `extra` adds columns over the same joins (a list's sort key).
 */
export function deviceSelect(db: Db, pollIntervalSeconds: number, extra = db``) {
  return db`
    select d.id, d.organization_id, d.serial, d.hostname, d.oe_id,
           array(select gm.group_id from group_members gm where gm.device_id = d.id order by gm.group_id) as group_ids,
           dt.template_id, dt.backend, d.enrollment_session_id, d.deprovisioned_at, d.archived_at,
           d.agent_secret_issued_at, h.at as agent_last_checkin, d.agent_version, d.created_at,
           st.status, ${deviceConvergence(db)} as convergence ${extra}
    from devices d
    left join device_heartbeats h on h.device_id = d.id
    ${effectiveTemplateOf(db)}
    ${statusOf(db, pollIntervalSeconds)}`;
}

/**
 * Joins the status of the device `d` (heartbeat `h`) as `st.status`, by the database's
 * `device_status`: stale after three poll intervals without a check-in.
 */
export function statusOf(db: Db, pollIntervalSeconds: number) {
  return db`
    cross join lateral (
      select device_status(d.archived_at, d.deprovisioned_at, d.agent_secret_issued_at, h.at,
                           make_interval(secs => ${3 * pollIntervalSeconds}::int)) as status
    ) st`;
}

/**
 * The convergence of the device `d` (template `dt`, status `st`): the worst over its catalog
 * (`device_catalog_outcomes`, `worst_convergence`; an empty catalog has nothing to do),
 * null while it has no agent that reports (enrolled, deprovisioned, archived).
 */
function deviceConvergence(db: Db) {
  return db`(case when st.status in ('active', 'stale') then coalesce((
      select worst_convergence(c.convergence)
      from device_catalog_outcomes(d.id, dt.backend, dt.workspace, d.agent_secret_issued_at) c
    ), 'converged') end)`;
}

/**
 * Joins the effective template of the device `d` as `dt` (template_id, backend,
 * workspace), by the default-template rule of `effective_template_id`.
 *
 * A lateral lookup by the template's key, not a join with the device_templates view: the
 * view reads `devices` a second time, and PostgreSQL cannot estimate a join on a
 * function's result, so it underestimates the rows and a list with a LIMIT reads and sorts
 * the whole organization instead of stopping early. The join is a left one so the planner
 * knows it keeps every device; it drops none anyway, since templates are seed data with a
 * default for the preferred backend. The default is looked up once per statement
 * (`effective_template_id(null)` in a subquery of its own), not once per device: a call per
 * row ran the function's own query for each device of a fleet-wide read.
 */
export function effectiveTemplateOf(db: Db) {
  return db`
    left join lateral (
      select t.id as template_id, t.backend, t.workspace from templates t
      where t.id = coalesce(d.template_id, (select effective_template_id(null)))
    ) dt on true`;
}

/**
 * A device's latest answered check-in, over `devices d`: the time its heartbeat holds
 * (`device_heartbeats`, written in batches: api/agent/README.md), null before its first.
 */
export function lastCheckin(db: Db) {
  return db`(select h.at from device_heartbeats h where h.device_id = d.id)`;
}

export async function getDevice(db: Db, id: string, pollIntervalSeconds: number): Promise<DeviceRow | null> {
  const [row] = await db<DeviceRow[]>`${deviceSelect(db, pollIntervalSeconds)} where d.id = ${id}`;
  return row ?? null;
}

/** The organization's device with this serial (exact, preferred) or id; null if none. */
export async function findDeviceBySerialOrId(db: Db, organizationId: string, value: string): Promise<string | null> {
  const [row] = await db<{ id: string }[]>`
    select id from devices where organization_id = ${organizationId}
    and (serial = ${value} or ${isUuid(value) ? value.toLowerCase() : null}::uuid = id)
    order by (serial = ${value}) desc limit 1`;
  return row?.id ?? null;
}

export function serializeDevice(row: DeviceRow): DeviceType {
  return {
    ...row,
    deprovisioned_at: iso(row.deprovisioned_at),
    archived_at: iso(row.archived_at),
    agent_secret_issued_at: iso(row.agent_secret_issued_at),
    agent_last_checkin: iso(row.agent_last_checkin),
    created_at: iso(row.created_at),
  };
}
