/**
 * SQL of the device lifecycle (deprovision, reprovision, archive) and of the hardware and
 * event reads. Each transition is one statement, so concurrent calls settle in the
 * database; idempotent ones keep the first timestamp with `coalesce`.
 */
import { type Db, transaction } from '../db/client.ts';

/**
 * Sets deprovisioned_at once; the agent secret stays, so the agent can be told 403. An
 * archived device changes no more: it is left alone, decided on the row the statement
 * locks, so an archive racing it is seen. The result says which case applied.
 */
export async function deprovision(db: Db, id: string): Promise<'deprovisioned' | 'archived' | 'not_found'> {
  const [row] = await db<Array<{ archived: boolean }>>`
    with target as (select id, archived_at is not null as archived from devices where id = ${id} for update),
    done as (
      update devices d set deprovisioned_at = coalesce(d.deprovisioned_at, now())
      from target where d.id = target.id and not target.archived
      returning d.id
    )
    select archived from target`;
  if (row === undefined) return 'not_found';
  return row.archived ? 'archived' : 'deprovisioned';
}

/** Sets archived_at once. False: no such device. */
export async function archive(db: Db, id: string): Promise<boolean> {
  const rows = await db`
    update devices set archived_at = coalesce(archived_at, now())
    where id = ${id}
    returning id`;
  return rows.length > 0;
}

/**
 * Clears deprovisioned_at and the agent secret, and voids any bootstrap token issued
 * before, so only a resolve after this moment can lead to a new secret: a token someone
 * obtained while the device was still managed must not become usable now. Archived devices
 * are left alone. The result says which case applied.
 */
export async function reprovision(sql: Db, id: string): Promise<'reprovisioned' | 'archived' | 'not_found'> {
  return transaction(sql, async (tx) => {
    const [row] = await tx<Array<{ archived: boolean }>>`
      select archived_at is not null as archived from devices where id = ${id} for update`;
    if (!row) return 'not_found';
    if (row.archived) return 'archived';
    await tx`
      update devices
      set deprovisioned_at = null, agent_secret_hash = null, agent_secret_issued_at = null
      where id = ${id}`;
    await tx`delete from bootstrap_tokens where device_id = ${id}`;
    return 'reprovisioned';
  });
}

export interface HardwareRow {
  device_id: string;
  hardware: Record<string, unknown> | null;
  reported_at: Date | null;
}

/** The last reported hardware (nulls when none was reported); undefined: no such device. */
export async function getHardware(db: Db, id: string): Promise<HardwareRow | undefined> {
  const [row] = await db<HardwareRow[]>`
    select d.id as device_id, h.hardware, h.reported_at
    from devices d
    left join device_hardware h on h.device_id = d.id
    where d.id = ${id}`;
  return row;
}

export interface EventRow {
  /** Write order (identity): the list's order and cursor; not part of the response. */
  seq: number;
  id: string;
  device_id: string;
  merkmal: string;
  type: string;
  payload: Record<string, unknown>;
  created_at: Date;
}

export async function deviceExists(db: Db, id: string): Promise<boolean> {
  const [row] = await db`select 1 from devices where id = ${id}`;
  return row !== undefined;
}

/**
 * A page of the device's events, newest first by write order (seq desc: the index
 * device_merkmal_events_device_seq), after the event with seq `before` when given. Events
 * written in the same millisecond (the entries of one report) still come in the order
 * they were written: the last entry of a report first.
 */
export async function listEvents(db: Db, deviceId: string, before: number | null, limit: number): Promise<EventRow[]> {
  return db<EventRow[]>`
    select seq, id, device_id, merkmal, type, payload, created_at
    from device_merkmal_events
    where device_id = ${deviceId} and ${before === null ? db`true` : db`seq < ${before}`}
    order by seq desc
    limit ${limit + 1}`;
}

/** The page of the device's events just newer than seq `after`, newest first (the page before a page of `listEvents`). */
export async function listNewerEvents(db: Db, deviceId: string, after: number, limit: number): Promise<EventRow[]> {
  const rows = await db<EventRow[]>`
    select seq, id, device_id, merkmal, type, payload, created_at
    from device_merkmal_events
    where device_id = ${deviceId} and seq > ${after}
    order by seq asc
    limit ${limit + 1}`;
  return rows.reverse();
}

/** Replaces the stored hardware of the device. */
export async function storeHardware(db: Db, deviceId: string, hardware: Record<string, unknown>): Promise<void> {
  await db`
    insert into device_hardware (device_id, hardware, reported_at)
    values (${deviceId}, ${db.json(hardware as Parameters<Db['json']>[0])}, now())
    on conflict (device_id) do update set hardware = excluded.hardware, reported_at = excluded.reported_at`;
}
