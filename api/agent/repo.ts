/**
 * SQL of the agent protocol: bootstrap (one-time token → agent secret), the check-in's
 * reads (the heartbeats are written in batches by heartbeats.ts), the blueprints of a
 * template (cached: seed data), and the report's all-or-nothing insert of events.
 */
import { templateBlueprints, type MerkmalBlueprintRow } from '../activation/repo.ts';
import { HOSTNAME } from '../activation/schemas.ts';
import { storeHardware } from '../devices/lifecycle_repo.ts';
import { deviceStateColumns, type StateRow } from '../catalog/state.ts';
import type { Db, Sql } from '../db/client.ts';
import { seedDataCache } from '../db/seed_cache.ts';
import { ApiError } from '../http/errors.ts';
import { scheduleJudgeOfReported } from '../rollouts/schedule.ts';
import { openActionsColumn } from '../actions/repo.ts';
import { type AgentDeviceState, type AgentRefusal, requireLiveDevice } from './auth.ts';
import type { AgentEventType } from './schemas.ts';

type Hardware = Record<string, unknown>;

const refusedBootstrap: Record<AgentRefusal, string> = {
  device_archived: 'this device is archived and cannot bootstrap',
  device_deprovisioned: 'this device is deprovisioned; an admin must reprovision it first',
};

function alreadyBootstrapped(): ApiError {
  return new ApiError(
    'agent_already_bootstrapped',
    'this device already holds an agent secret; an admin must reprovision it before it can bootstrap again',
  );
}

/**
 * Consumes the bootstrap token and stores the agent secret's hash, in one transaction:
 * the token's delete is the single statement that decides who wins when two bootstraps
 * race (the loser finds no row), and any error below rolls it back, so a rejected
 * bootstrap writes nothing and leaves the token as it was.
 *
 * Order of the checks: a device that already holds an agent secret is 409 whatever the
 * token (wrong, used or expired), since no token can take it over and only a reprovision
 * helps. Otherwise the token: only a caller holding the live token of this very device
 * learns anything more (archived, deprovisioned); anyone else gets the same 401 whether
 * the device exists or not.
 */
export async function bootstrap(
  sql: Sql,
  input: { deviceId: string; tokenHash: Uint8Array; secretHash: Uint8Array; hardware: Hardware | undefined },
): Promise<void> {
  await sql.begin(async (tx) => {
    const [token] = await tx`
      delete from bootstrap_tokens
      where device_id = ${input.deviceId} and token_hash = ${input.tokenHash} and expires_at > now()
      returning device_id`;
    // The row lock keeps a concurrent deprovision, archive or reprovision out until we commit.
    const [device] = await tx<Array<AgentDeviceState & { bootstrapped: boolean }>>`
      select id, deprovisioned_at, archived_at, agent_secret_hash is not null as bootstrapped
      from devices where id = ${input.deviceId}
      for update`;
    if (device?.bootstrapped && !token) throw alreadyBootstrapped();
    if (!token) {
      throw new ApiError(
        'invalid_bootstrap_token',
        'the bootstrap token is wrong, used or expired; an admin reprovisions the device to issue a new one',
      );
    }
    // The token row references the device (on delete cascade), so the device exists.
    requireLiveDevice(device!, refusedBootstrap);
    if (device!.bootstrapped) throw alreadyBootstrapped();
    await tx`
      update devices set agent_secret_hash = ${input.secretHash}, agent_secret_issued_at = now(),
        hostname = coalesce(${reportedHostname(input.hardware)}::text, hostname)
      where id = ${input.deviceId}`;
    if (input.hardware !== undefined) await storeHardware(tx, input.deviceId, input.hardware);
  });
}

/** The device's own inputs of its desired state, as the check-in statement returns them. */
export interface CheckinRow extends AgentDeviceState, StateRow {
  /** The agent version kept on the device, to tell whether a check-in's differs. */
  agent_version: string | null;
  /** The hash of the inventory the service holds (devices.inventory_hash), null before the first. */
  inventory_hash: Uint8Array | null;
  /** A revealed disk key of the device still in use (the oldest), which the agent rotates; null nearly always. */
  disk_key_rotation: string | null;
  /** Its pending and delivered actions as JSON text (`openActionsColumn`); null for a device without any. */
  actions: string | null;
}

/** The probe of `disk_keys_rotation_due`, an index that is empty for nearly every device. */
const rotationDue = (db: Db) => db`(
  select k.id from disk_keys k
  where k.device_id = d.id and k.revealed_at is not null and k.status in ('escrowed', 'verified')
  order by k.revealed_at, k.id limit 1) as disk_key_rotation`;

/** The type oid of `bytea[]`: postgres.js sends the hashes as one array parameter. */
const BYTEA_ARRAY = 1001;

/**
 * The check-in's read, for the check-ins of one turn of the event loop (batched_reads.ts):
 * the devices behind the secrets' hashes (one probe of the unique index each), their
 * lifecycle state and their own resolution inputs, in one read statement that a replica
 * can answer. Nothing is written; the heartbeats go to
 * `Heartbeats`. `rows[i]` is the device of `hashes[i]`, undefined when none holds it.
 */
export async function checkinStates(db: Db, hashes: Uint8Array[]): Promise<Array<CheckinRow | undefined>> {
  const rows = await db<Array<CheckinRow & { i: number }>>`
    select q.i::int4 as i, d.id, d.deprovisioned_at, d.archived_at, d.agent_version, d.inventory_hash, ${rotationDue(db)},
           ${openActionsColumn(db)}, ${deviceStateColumns(db)}
    from unnest(${db.array(hashes as never, BYTEA_ARRAY)}::bytea[]) with ordinality as q (h, i)
    join devices d on d.agent_secret_hash = q.h`;
  const found: Array<CheckinRow | undefined> = new Array(hashes.length);
  for (const row of rows) found[row.i - 1] = row;
  return found;
}

/**
 * The host name an agent's hardware report gives (`hardware.hostname`, as the activation
 * accepts one), or null: then the stored name is kept.
 */
function reportedHostname(hardware: Hardware | undefined): string | null {
  const name = hardware?.['hostname'];
  return typeof name === 'string' && name.length <= 253 && HOSTNAME.test(name) ? name : null;
}

/**
 * The same read with the hardware written at once (hardware is not batched), in one
 * statement on the primary. Only a live device's hardware is stored: `isLiveDevice`'s rule,
 * here in SQL, because the write is in the statement that reads the device. The report's
 * host name becomes the device's in the same statement (the row is written only when the
 * name changed). Agents send hardware now and then, so this stays a second prepared
 * statement beside the plain read.
 */
export async function checkinStateStoringHardware(
  db: Db,
  secretHash: Uint8Array,
  hardware: Hardware,
  agentVersion: string | undefined,
): Promise<CheckinRow | undefined> {
  const hostname = reportedHostname(hardware);
  const [row] = await db<CheckinRow[]>`
    with hardware as (
      insert into device_hardware (device_id, hardware, reported_at)
      select id, ${db.json(hardware as never)}::jsonb, now()
      from devices
      where agent_secret_hash = ${secretHash} and deprovisioned_at is null and archived_at is null
      on conflict (device_id) do update set hardware = excluded.hardware, reported_at = excluded.reported_at
    ), reported as (
      -- One update of the row for both (two updates of one row in a statement: only one
      -- would take effect), and only when the agent version or the host name changed.
      update devices set agent_version = coalesce(${agentVersion ?? null}::text, agent_version),
                         hostname = coalesce(${hostname}::text, hostname)
      where agent_secret_hash = ${secretHash} and deprovisioned_at is null and archived_at is null
        and ((${agentVersion ?? null}::text is not null and agent_version is distinct from ${agentVersion ?? null}::text)
          or (${hostname}::text is not null and hostname is distinct from ${hostname}::text))
    )
    select d.id, d.deprovisioned_at, d.archived_at, d.agent_version, d.inventory_hash, ${rotationDue(db)},
           ${openActionsColumn(db)}, ${deviceStateColumns(db)}
    from devices d where d.agent_secret_hash = ${secretHash}`;
  return row;
}

/**
 * Keeps the agent version a check-in without hardware sent, which differed from the one
 * its read returned (an unchanged one costs no statement). A live device's only, as above.
 */
export async function storeAgentVersion(db: Db, deviceId: string, agentVersion: string): Promise<void> {
  await db`
    update devices set agent_version = ${agentVersion}
    where id = ${deviceId} and deprovisioned_at is null and archived_at is null
      and agent_version is distinct from ${agentVersion}`;
}

/**
 * The workspace-resolved blueprints of a template: the very query resolve answers with,
 * so the Runtime Blueprint and the check-in can never disagree. Seed data: cached.
 */
export const cachedTemplateBlueprints: (db: Db, templateId: string) => Promise<MerkmalBlueprintRow[]> =
  seedDataCache(templateBlueprints);

/** What a report needs of its device: besides the agent's state, the rollouts applied to it. */
export interface ReportingDevice extends AgentDeviceState {
  /** Ids of the rollouts applied to the device, joined by commas ('' for none). */
  rollouts_text: string;
}

/** The device behind an agent secret (one index probe), or undefined. */
export async function findAgentDevice(db: Db, secretHash: Uint8Array): Promise<ReportingDevice | undefined> {
  const [row] = await db<ReportingDevice[]>`
    select id, deprovisioned_at, archived_at, rollouts_text from devices where agent_secret_hash = ${secretHash}`;
  return row;
}

export interface ReportEvent {
  merkmal: string;
  type: AgentEventType;
  payload: Record<string, unknown>;
}

/**
 * Inserts every event of a report, or none, and for a device with applied rollouts queues
 * the prompt judging of those running for the reported Merkmale, in the same transaction
 * (api/rollouts/README.md): their open ring's figures may have moved. A device without
 * applied rollouts, nearly every report, pays nothing more than the insert.
 */
export async function insertReport(
  sql: Sql,
  device: Pick<ReportingDevice, 'id' | 'rollouts_text'>,
  events: ReportEvent[],
): Promise<{ accepted: number; unknown: string[] }> {
  if (device.rollouts_text === '') return insertEvents(sql, device.id, events);
  return sql.begin(async (tx) => {
    const result = await insertEvents(tx, device.id, events);
    if (result.unknown.length === 0) {
      const merkmale = [...new Set(events.map((e) => e.merkmal))];
      await scheduleJudgeOfReported(tx, device.rollouts_text.split(','), merkmale);
    }
    return result;
  });
}

/**
 * One statement that checks all Merkmal keys and inserts only when none is unknown.
 * Returns the count inserted and the unknown keys.
 */
async function insertEvents(
  db: Db,
  deviceId: string,
  events: ReportEvent[],
): Promise<{ accepted: number; unknown: string[] }> {
  const [row] = await db<Array<{ accepted: number; unknown: string[] }>>`
    with entry as (
      select e.merkmal, e.type, e.payload, e.ord
      from rows from (jsonb_to_recordset(${db.json(events as never)}) as (merkmal text, type text, payload jsonb))
           with ordinality as e (merkmal, type, payload, ord)
    ), unknown as (
      select distinct entry.merkmal
      from entry left join merkmale m on m.key = entry.merkmal
      where m.key is null
    ), inserted as (
      insert into device_merkmal_events (device_id, merkmal, type, payload)
      select ${deviceId}, entry.merkmal, entry.type, entry.payload
      from entry
      where not exists (select 1 from unknown)
      order by entry.ord -- the event sequence follows the report's order
      returning 1
    )
    select (select count(*) from inserted)::int as accepted,
           array(select merkmal from unknown order by merkmal) as unknown`;
  return row!;
}
