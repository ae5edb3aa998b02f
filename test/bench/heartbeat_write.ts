/**
 * `npx tsx test/bench/heartbeat_write.ts [--devices=N] [--batch=N] [--shared-buffers=SIZE]`:
 * what one batched heartbeat costs the primary per device, written into `device_heartbeats`
 * (as the service does), and for comparison by the service's earlier statement (arrays
 * sorted in the client) and into a column of a copy of `devices` (where the heartbeat was
 * kept before `20261125020000_device_heartbeats`), on the same seeded fleet in one embedded
 * PostgreSQL with durable settings.
 *
 * For each statement: a checkpoint, then batches of `--batch` random devices (one second of
 * check-ins; default 3,000, a million devices polling every 5 minutes) until every device
 * was written once, the statement the service runs (`update … from unnest(…)`). Printed per
 * device: the backend's CPU (from /proc, so the host must be the database's) and the WAL,
 * for the first 10 batches after the checkpoint (almost every row on a page not yet written
 * since the checkpoint: a full page image each) and for the whole pass (a fleet whose poll
 * interval equals the checkpoint interval, checkpoint_timeout's default of 5 minutes).
 */
import { readFileSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HEARTBEAT_WRITE } from '../../api/agent/heartbeats.ts';
import { createSql, type Sql } from '../../api/db/client.ts';
import { migrate } from '../../api/db/migrate.ts';
import { randomToken } from '../../api/http/crypto.ts';
import { silentLogger } from '../../api/log.ts';
import { type RunningPostgres, startEmbeddedPostgres } from '../../api/runtime/embedded_postgres.ts';
import { prewarmTable, seedFleet } from './seed_fleet.ts';

function flag(name: string): string | undefined {
  return process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
}
const devices = Number(flag('devices') ?? 1_000_000);
const batch = Number(flag('batch') ?? 3000);
const sharedBuffers = flag('shared-buffers');
if (!Number.isInteger(devices) || devices < 1 || !Number.isInteger(batch) || batch < 1) {
  console.error('--devices and --batch: positive integers');
  process.exit(2);
}
if (sharedBuffers !== undefined && !/^\d+(kB|MB|GB)$/.test(sharedBuffers)) {
  console.error(`--shared-buffers: a size such as 512MB or 1GB, got ${JSON.stringify(sharedBuffers)}`);
  process.exit(2);
}
const COLD_BATCHES = 10;

/** A batch's ids and times as the statement takes them: two joined texts, or two sorted arrays. */
type Params = (ids: string[], at: number) => unknown[];
const texts: Params = (ids, at) => [ids.join(','), ids.map(() => at).join(',')];
const sortedArrays: Params = (ids, at) => {
  const sorted = [...ids].sort();
  return [sorted, sorted.map(() => at)];
};

/**
 * The statement of api/agent/heartbeats.ts; its earlier form (arrays sorted in the client);
 * and the one into the copy of `devices`.
 */
const writes: Record<string, { table: string; statement: string; params: Params }> = {
  device_heartbeats: {
    table: 'device_heartbeats',
    statement: HEARTBEAT_WRITE,
    params: texts,
  },
  'device_heartbeats, arrays': {
    table: 'device_heartbeats',
    statement: `update device_heartbeats h set at = greatest(h.at, to_timestamp(b.ms / 1000))
      from unnest($1::uuid[], $2::float8[]) as b (id, ms) where h.device_id = b.id`,
    params: sortedArrays,
  },
  bench_devices: {
    table: 'bench_devices',
    statement: `update bench_devices d set agent_last_checkin = greatest(d.agent_last_checkin, to_timestamp(b.ms / 1000))
      from unnest($1::uuid[], $2::float8[]) as b (id, ms)
      where d.id = b.id and d.deprovisioned_at is null and d.archived_at is null`,
    params: sortedArrays,
  },
};

function cpuTicks(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return Number(fields[11]) + Number(fields[12]); // utime + stime, in clock ticks (1/100 s)
}

/** Minor page faults of a process: a backend's first touch of each page of shared memory. */
function minorFaults(pid: number): number {
  return Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[7]);
}

async function walBytes(sql: Sql): Promise<number> {
  const [row] = await sql<Array<{ n: number }>>`select (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::int8 as n`;
  return row!.n;
}

interface Figures {
  cpuUs: number;
  walBytes: number;
  fpiShare: number;
  faults: number;
}

interface Pass {
  cold: Figures;
  whole: Figures;
  msPerBatch: number;
}

async function measure(sql: Sql, write: (typeof writes)[string], ids: string[]): Promise<Pass> {
  const [backend] = await sql<Array<{ pid: number }>>`select pg_backend_pid() as pid`;
  const pid = backend!.pid;
  const order = [...ids].sort(() => Math.random() - 0.5);
  await sql`checkpoint`;
  const fpi0 = await fullPageImages(sql);
  const ticks0 = cpuTicks(pid);
  const faults0 = minorFaults(pid);
  const wal0 = await walBytes(sql);
  const started = performance.now();
  let cold: Pass['cold'] | null = null;
  let batches = 0;
  for (let i = 0; i < order.length; i += batch) {
    const slice = order.slice(i, i + batch);
    await sql.unsafe(write.statement, write.params(slice, Date.now()) as never[], { prepare: true });
    batches++;
    if (batches === COLD_BATCHES || (cold === null && i + batch >= order.length)) {
      const rows = Math.min(i + batch, order.length);
      cold = {
        cpuUs: ((cpuTicks(pid) - ticks0) * 10_000) / rows,
        walBytes: ((await walBytes(sql)) - wal0) / rows,
        fpiShare: ((await fullPageImages(sql)) - fpi0) / rows,
        faults: (minorFaults(pid) - faults0) / rows,
      };
    }
  }
  const whole = {
    cpuUs: ((cpuTicks(pid) - ticks0) * 10_000) / order.length,
    walBytes: ((await walBytes(sql)) - wal0) / order.length,
    fpiShare: ((await fullPageImages(sql)) - fpi0) / order.length,
    faults: (minorFaults(pid) - faults0) / order.length,
  };
  return { cold: cold!, whole, msPerBatch: (performance.now() - started) / batches };
}

/** Full page images written so far (this backend's counters, flushed to pg_stat_wal first). */
async function fullPageImages(sql: Sql): Promise<number> {
  await sql`select pg_stat_force_next_flush()`;
  const [row] = await sql<Array<{ n: number }>>`select wal_fpi::int8 as n from pg_stat_wal`;
  return row!.n;
}

const stateDir = await mkdtemp(join(tmpdir(), 'fleet-heartbeat-write-'));
await chmod(stateDir, 0o711); // the postgres user must traverse into it when we run as root
let pg: RunningPostgres | null = null;
try {
  pg = await startEmbeddedPostgres({ stateDir, database: 'fleet_bench', log: silentLogger });
  await migrate(pg.url, silentLogger);
  let sql = createSql(pg.url, { max: 1, applicationName: 'fleet-bench', timeoutSeconds: 3600 });
  console.log(`seeding ${devices} devices`);
  await seedFleet(
    sql,
    Array.from({ length: devices }, () => randomToken(32)),
    { organizations: 8 },
  );
  await sql`create extension if not exists pg_prewarm`;
  // `devices` as it was: every column and index, the heartbeat's column, a fifth of each page free.
  await sql`create table bench_devices (like devices including all) with (fillfactor = 80)`;
  await sql`alter table bench_devices add column agent_last_checkin timestamptz`;
  await sql`insert into bench_devices select d.*, h.at from devices d join device_heartbeats h on h.device_id = d.id`;
  await sql`vacuum analyze`;
  if (sharedBuffers) {
    await sql.unsafe(`alter system set shared_buffers = '${sharedBuffers}'`);
    await sql.end();
    await pg.stop();
    pg = await startEmbeddedPostgres({ stateDir, database: 'fleet_bench', log: silentLogger });
    sql = createSql(pg.url, { max: 1, applicationName: 'fleet-bench', timeoutSeconds: 3600 });
  }
  const [sizes] = await sql<Array<{ buffers: string; heartbeats: string; devices: string }>>`
    select current_setting('shared_buffers') as buffers,
      pg_size_pretty(pg_total_relation_size('device_heartbeats')) as heartbeats,
      pg_size_pretty(pg_total_relation_size('bench_devices')) as devices`;
  console.log(
    `shared_buffers ${sizes!.buffers}; device_heartbeats with its index ${sizes!.heartbeats}, the copy of devices with its indexes ${sizes!.devices}`,
  );
  const ids = (await sql<Array<{ id: string }>>`select id from devices`).map((r) => r.id);
  for (const [name, write] of Object.entries(writes)) {
    await prewarmTable(sql, write.table);
    // Written by a backend of its own, as the service's pool connections are: the prewarm's
    // backend has every buffer mapped already, a new one faults each page in on first touch.
    const writer = createSql(pg.url, { max: 1, applicationName: 'fleet-bench', timeoutSeconds: 3600 });
    const pass = await measure(writer, write, ids);
    await writer.end();
    const fmt = (p: Figures) =>
      `${p.cpuUs.toFixed(1)} µs CPU, ${(p.walBytes / 1024).toFixed(2)} KiB WAL, ${(p.fpiShare * 100).toFixed(0)} % full page images, ${p.faults.toFixed(1)} minor faults`;
    console.log(`${name.padEnd(27)} first ${COLD_BATCHES} batches after a checkpoint: ${fmt(pass.cold)} per device`);
    console.log(
      `${name.padEnd(27)} every device once (${Math.ceil(ids.length / batch)} batches of ${batch}, ${pass.msPerBatch.toFixed(1)} ms each): ${fmt(pass.whole)} per device`,
    );
  }
  await sql.end();
} finally {
  await pg?.stop();
  await rm(stateDir, { recursive: true, force: true });
}
