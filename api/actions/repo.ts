/**
 * SQL of device actions. An action past its `expires_at` that never started reads as
 * `expired` everywhere (finished at its expiry), before the sweep or a start writes it so:
 * one expression (`effective`) for every read and filter.
 */
import type { Actor } from '../access/declaration.ts';
import type { Db } from '../db/client.ts';
import { afterCursor } from '../db/keyset.ts';
import type { Cursor } from '../http/pagination.ts';
import type { ActionStatus, ActionType } from './schemas.ts';

export interface ActionRow {
  id: string;
  organization_id: string;
  device_id: string;
  type: ActionType;
  parameters: Record<string, unknown>;
  status: ActionStatus;
  created_by: Actor;
  created_at: Date;
  expires_at: Date;
  delivered_at: Date | null;
  started_at: Date | null;
  finished_at: Date | null;
  result: {
    exit_code: number;
    output: string;
    duration_ms: number;
    details: Record<string, unknown>;
  } | null;
  rollout_id: string | null;
}

/**
 * Lock order: a device's row before its actions' rows, as a deprovision or an archive
 * takes them (its trigger cancels the device's actions), and as the trigger that keeps
 * `devices.actions_open` does after a change of an action's openness. A write that opens
 * or closes actions therefore locks their devices first (`lockDevicesOf`).
 */
async function lockDevicesOf(db: Db, deviceIds: string[]): Promise<void> {
  if (deviceIds.length === 0) return;
  await db`select 1 from devices where id = any(${deviceIds}::uuid[]) order by id for no key update`;
}

/** Not started and past its expiry: expired, whether or not a sweep wrote it yet. */
const overdue = (db: Db) => db`(a.status in ('pending', 'delivered') and a.expires_at <= now())`;

const columns = (db: Db) => db`
  a.id, a.organization_id, a.device_id, a.type, a.parameters,
  case when ${overdue(db)} then 'expired' else a.status end as status,
  a.created_by, a.created_at, a.expires_at, a.delivered_at, a.started_at,
  case when ${overdue(db)} then a.expires_at else a.finished_at end as finished_at,
  a.result, a.rollout_id`;

/** The device an action is asked of, its row locked against a deprovision or archive until the insert commits. */
export interface ActionDevice {
  id: string;
  organization_id: string;
  deprovisioned_at: Date | null;
  archived_at: Date | null;
}

export async function lockDevice(db: Db, deviceId: string): Promise<ActionDevice | null> {
  const [row] = await db<ActionDevice[]>`
    select id, organization_id, deprovisioned_at, archived_at from devices where id = ${deviceId}
    for no key update`;
  return row ?? null;
}

export interface NewAction {
  organizationId: string;
  type: ActionType;
  parameters: Record<string, unknown>;
  createdBy: Actor;
  /** Seconds from now. */
  expiresInSeconds: number;
  rolloutId: string | null;
}

export async function insertAction(db: Db, deviceId: string, a: NewAction): Promise<ActionRow> {
  const [row] = await db<ActionRow[]>`
    insert into device_actions as a (organization_id, device_id, type, parameters, created_by, expires_at, rollout_id)
    values (${a.organizationId}, ${deviceId}, ${a.type}, ${db.json(a.parameters as never)},
            ${db.json(a.createdBy as never)}, now_ms() + make_interval(secs => ${a.expiresInSeconds}::double precision),
            ${a.rolloutId})
    returning ${columns(db)}`;
  return row!;
}

/**
 * The same action for each of `deviceIds` that is still managed (not deprovisioned or
 * archived), in one statement; returns how many were queued. The caller locks the devices.
 */
export async function insertActions(db: Db, deviceIds: string[], a: NewAction): Promise<number> {
  const rows = await db`
    insert into device_actions (organization_id, device_id, type, parameters, created_by, expires_at, rollout_id)
    select ${a.organizationId}, d.id, ${a.type}, ${db.json(a.parameters as never)}, ${db.json(a.createdBy as never)},
           now_ms() + make_interval(secs => ${a.expiresInSeconds}::double precision), ${a.rolloutId}
    from devices d
    where d.id = any(${deviceIds}::uuid[]) and d.deprovisioned_at is null and d.archived_at is null
    order by d.id
    returning 1`;
  return rows.length;
}

/** A rollout's actions that have not started, canceled (its abort). */
export async function cancelOfRollout(db: Db, rolloutId: string): Promise<number> {
  const open = await db<{ device_id: string }[]>`
    select distinct device_id from device_actions where rollout_id = ${rolloutId} and status in ('pending', 'delivered')`;
  await lockDevicesOf(
    db,
    open.map((r) => r.device_id),
  );
  const rows = await db`
    update device_actions set status = 'canceled', finished_at = now_ms()
    where rollout_id = ${rolloutId} and status in ('pending', 'delivered')
    returning 1`;
  return rows.length;
}

export async function getAction(db: Db, id: string, lock = false): Promise<ActionRow | null> {
  const [row] = lock
    ? await db<ActionRow[]>`select ${columns(db)} from device_actions a where a.id = ${id} for update`
    : await db<ActionRow[]>`select ${columns(db)} from device_actions a where a.id = ${id}`;
  return row ?? null;
}

/** The action, when it is one of the device's, its row locked after the device's (the agent's start and result). */
export async function lockDeviceAction(db: Db, deviceId: string, id: string): Promise<ActionRow | null> {
  await lockDevicesOf(db, [deviceId]);
  const [row] = await db<ActionRow[]>`
    select ${columns(db)} from device_actions a where a.id = ${id} and a.device_id = ${deviceId} for update`;
  return row ?? null;
}

/** A page of the device's actions, newest first (keyset on created_at, id descending); `status` one or any of several. */
export async function listActions(
  db: Db,
  deviceId: string,
  status: ActionStatus | readonly ActionStatus[] | undefined,
  cursor: Cursor | null,
  limit: number,
): Promise<ActionRow[]> {
  const effective = db`(case when ${overdue(db)} then 'expired' else a.status end)`;
  return db<ActionRow[]>`
    select ${columns(db)} from device_actions a
    where a.device_id = ${deviceId}
      and ${status === undefined ? db`true` : db`${effective} = any(${typeof status === 'string' ? [status] : [...status]}::text[])`}
      and ${afterCursor(db, cursor, 'desc', 'a')}
    order by a.created_at desc, a.id desc
    limit ${limit + 1}`;
}

/** Pending or delivered → canceled; null when it was neither (or is overdue). */
export async function cancel(db: Db, id: string): Promise<ActionRow | null> {
  const [action] = await db<{ device_id: string }[]>`select device_id from device_actions where id = ${id}`;
  if (!action) return null;
  await lockDevicesOf(db, [action.device_id]);
  const [row] = await db<ActionRow[]>`
    update device_actions a set status = 'canceled', finished_at = now_ms()
    where a.id = ${id} and a.status in ('pending', 'delivered') and a.expires_at > now()
    returning ${columns(db)}`;
  return row ?? null;
}

/** Marks an overdue action expired (its webhook fires by trigger). */
export async function expire(db: Db, id: string): Promise<void> {
  await db`
    update device_actions set status = 'expired', finished_at = expires_at
    where id = ${id} and status in ('pending', 'delivered') and expires_at <= now()`;
}

/** Pending or delivered → running (delivered too, should the check-in's mark have been lost). */
export async function start(db: Db, id: string): Promise<void> {
  await db`
    update device_actions
    set status = 'running', started_at = now_ms(), delivered_at = coalesce(delivered_at, now_ms())
    where id = ${id}`;
}

export async function finish(
  db: Db,
  id: string,
  status: 'succeeded' | 'failed',
  result: NonNullable<ActionRow['result']>,
): Promise<ActionRow> {
  const [row] = await db<ActionRow[]>`
    update device_actions a set status = ${status}, finished_at = now_ms(), result = ${db.json(result as never)}
    where a.id = ${id}
    returning ${columns(db)}`;
  return row!;
}

/** The check-in handed these to the agent: pending → delivered. */
export async function markDelivered(db: Db, ids: string[]): Promise<void> {
  await db`
    update device_actions set status = 'delivered', delivered_at = now_ms()
    where id = any(${ids}::uuid[]) and status = 'pending'`;
}

/**
 * Up to `limit` overdue actions marked expired (each fires its webhook by trigger), their
 * devices locked first in id order. Run in a transaction. Returns their rollouts (for the judge).
 */
export async function expireDue(db: Db, limit: number): Promise<{ id: string; rollout_id: string | null }[]> {
  const due = await db<{ id: string; device_id: string }[]>`
    select id, device_id from device_actions
    where status in ('pending', 'delivered') and expires_at <= now()
    order by id
    limit ${limit}`;
  if (due.length === 0) return [];
  await lockDevicesOf(db, [...new Set(due.map((r) => r.device_id))]);
  // Still due once the devices are locked: a start, a cancel or a deprovision may have come first.
  return db<{ id: string; rollout_id: string | null }[]>`
    update device_actions a set status = 'expired', finished_at = a.expires_at
    where a.id = any(${due.map((r) => r.id)}::uuid[]) and a.status in ('pending', 'delivered') and a.expires_at <= now()
    returning a.id, a.rollout_id`;
}

/**
 * The check-in's column of the device row `d`: its open actions as `device_open_actions`
 * gives them (JSON text, oldest first, at most 10), read only when the row's flag says it
 * has any: a device without actions pays one boolean of its own row.
 */
export function openActionsColumn(db: Db) {
  return db`case when d.actions_open then device_open_actions(d.id) end as actions`;
}
