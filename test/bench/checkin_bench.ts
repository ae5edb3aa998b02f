/**
 * `npm run bench`: the agent check-in under load, against the real server process.
 *
 * 1. Starts a fresh embedded PostgreSQL in a temporary folder (durable settings, as in
 *    production), applies the migrations and seeds a fleet with set-based SQL: devices in
 *    several organizations, org units four levels deep, a dozen groups per organization,
 *    overrides at every level, an agent secret per device (hashes in the database, the
 *    secrets in memory here).
 * 2. Counts the SQL statements one check-in makes, in-process, with a postgres.js `debug`
 *    hook on an app over the same database.
 * 3. Starts the API as `npm run api` does (`node --import tsx api/main_node.ts --api-only`),
 *    or with `--runtime=deno` as `deno task api` does (the Deno entry, same app).
 * 4. Drives concurrent agents over loopback for a fixed time: against GET /api/v1/health
 *    (one `select 1`: the ceiling), against check-in (random devices) and with the agents'
 *    last ETags (304s), the three in turns; then open loops and a herd.
 * 5. Prints requests/s, p50/p99 latency, the ratio, the server's peak RSS (VmHWM), and the
 *    server-side transactions per check-in (pg_stat_database, read after the server has
 *    closed its connections so every backend has flushed its counters).
 *
 * Settings: flags `--devices=N --agents=N --seconds=N --slices=N --orgs=N --hardware-every=N`
 * or the environment BENCH_DEVICES, BENCH_AGENTS, BENCH_SECONDS (per phase), BENCH_SLICES
 * (the three closed-loop phases take turns in this many slices each, default 5, so a
 * host that slows down for a few seconds slows all three alike; the open loops of check-ins
 * and health take turns too, and one more alternates the two within one loop), BENCH_ORGS,
 * BENCH_HARDWARE_EVERY (every Nth check-in also sends a hardware object; 0 = never), and
 * `--runtime=node|deno` or BENCH_RUNTIME (default node). `--replica` (BENCH_REPLICA=1): the
 * API reads its check-ins from a real streaming standby of the seeded primary
 * (DATABASE_REPLICA_URL). `--primary-delay-ms=N` (BENCH_PRIMARY_DELAY_MS): the API reaches
 * the primary through a TCP proxy that adds N ms to each round trip (N/2 each way), as an
 * API instance far from the primary; the replica, when there is one, stays near.
 * PostgreSQL CPU is read per cluster (the postmaster and its children): primary and replica.
 * `--shared-buffers=SIZE` sets PostgreSQL's shared_buffers (primary and standby) after seeding;
 * by default it is PostgreSQL's own 128MB, which a million-device fleet outgrows.
 * `--cpu-prof=DIR` (BENCH_CPU_PROF) writes the server's V8 CPU profile there when it stops;
 * BENCH_NODE_ARGS adds flags to the server's `node` (V8 settings to try). BENCH_TRACE=1
 * prints each phase's bounds on the monotonic clock in µs (the profile's time base, to cut
 * one phase out of it), the primary's busiest processes and statements, the open loop's
 * progress twice a second and, per open loop, what stalled: both processes' garbage
 * collections and event-loop delay, and who had the CPU when answers were late.
 * Loopback only, bounded in time (a watchdog ends it), and it removes everything it created.
 */
import { Buffer } from 'node:buffer';
import { readFileSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import postgres from 'postgres';
import { createCheckinPath } from '../../api/agent/checkin_path.ts';
import { createApp, type App } from '../../api/app.ts';
import type { AppConfig } from '../../api/config.ts';
import { createSql, type Sql } from '../../api/db/client.ts';
import { migrate } from '../../api/db/migrate.ts';
import { randomToken } from '../../api/http/crypto.ts';
import { silentLogger } from '../../api/log.ts';
import { startEmbeddedPostgres, type RunningPostgres } from '../../api/runtime/embedded_postgres.ts';
import { startService, type ServiceProcess } from '../support/service_process.ts';
import { type PrimaryAndStandby, processTree, startPrimaryAndStandby } from '../support/standby.ts';
import { type DelayProxy, startDelayProxy } from './delay_proxy.ts';
import { RawConnection, type RawResponse, rawRequest } from './raw_http.ts';
import { BENCH_INVENTORY_HASH, prewarmTable, seedFleet } from './seed_fleet.ts';

// ---------------------------------------------------------------------------------------
// Settings

function setting(name: string, env: string, fallback: number): number {
  const flag = process.argv.find((a) => a.startsWith(`--${name}=`));
  const raw = flag ? flag.slice(name.length + 3) : process.env[env];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) {
    console.error(`${flag ? `--${name}` : env}: must be a non-negative integer, got ${JSON.stringify(raw)}`);
    process.exit(2);
  }
  return value;
}

const settings = {
  devices: Math.max(1, setting('devices', 'BENCH_DEVICES', 100_000)),
  agents: Math.max(1, setting('agents', 'BENCH_AGENTS', 64)),
  seconds: Math.max(1, setting('seconds', 'BENCH_SECONDS', 15)),
  /** Slices per closed-loop phase: health, check-in and unchanged take turns, a slice each. */
  slices: Math.max(1, setting('slices', 'BENCH_SLICES', 5)),
  orgs: Math.max(1, setting('orgs', 'BENCH_ORGS', 8)),
  hardwareEvery: setting('hardware-every', 'BENCH_HARDWARE_EVERY', 100),
  primaryDelayMs: setting('primary-delay-ms', 'BENCH_PRIMARY_DELAY_MS', 0),
  replica: process.argv.includes('--replica') || process.env.BENCH_REPLICA === '1',
  /** PostgreSQL's shared_buffers for the run (e.g. `1GB`); unset: PostgreSQL's default, 128MB. */
  sharedBuffers: (() => {
    const raw = process.argv.find((a) => a.startsWith('--shared-buffers='))?.slice('--shared-buffers='.length);
    if (raw !== undefined && !/^\d+(kB|MB|GB)$/.test(raw)) {
      console.error(`--shared-buffers: a size such as 512MB or 1GB, got ${JSON.stringify(raw)}`);
      process.exit(2);
    }
    return raw;
  })(),
  /** A folder for the server's V8 CPU profile (`node --cpu-prof`), written when it stops. */
  cpuProfileDir:
    process.argv.find((a) => a.startsWith('--cpu-prof='))?.slice('--cpu-prof='.length) ?? process.env.BENCH_CPU_PROF,
};
const runtime = (process.argv.find((a) => a.startsWith('--runtime='))?.slice('--runtime='.length) ??
  process.env.BENCH_RUNTIME ??
  'node') as 'node' | 'deno';
if (runtime !== 'node' && runtime !== 'deno') {
  console.error(`--runtime: node or deno, got ${JSON.stringify(runtime)}`);
  process.exit(2);
}
const WARMUP_SECONDS = 3;
const ROUND_TRIP_SAMPLES = 200;
const OPEN_LOOP_SECONDS = 5;
const OPEN_LOOP_CONNECTIONS = 1024;

// The whole run is bounded: seeding (generous per device), two phases, warm-ups, start/stop.
const budgetMs = 240_000 + settings.devices * 2 + (settings.seconds * 3 + WARMUP_SECONDS * 2 + 25) * 1000;

// ---------------------------------------------------------------------------------------
// Clean-up: whatever happens, the server, the database and the folder go away.

let stateDir: string | null = null;
let pg: RunningPostgres | null = null;
let pair: PrimaryAndStandby | null = null;
let proxy: DelayProxy | null = null;
let server: ServiceProcess | null = null;
const clients: Sql[] = [];

async function cleanUp(): Promise<void> {
  await server?.stop().catch(() => {});
  server = null;
  for (const c of clients.splice(0)) await c.end({ timeout: 2 }).catch(() => {});
  await proxy?.close().catch(() => {});
  proxy = null;
  await pg?.stop().catch(() => {});
  pg = null;
  await pair?.stop().catch(() => {});
  pair = null;
  if (stateDir) await rm(stateDir, { recursive: true, force: true }).catch(() => {});
  stateDir = null;
}

const watchdog = setTimeout(() => {
  console.error(`bench: over its time budget of ${Math.round(budgetMs / 1000)} s, stopping`);
  void cleanUp().finally(() => process.exit(1));
}, budgetMs);
watchdog.unref();

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => void cleanUp().finally(() => process.exit(130)));
}

function log(message: string): void {
  console.log(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}`);
}

// ---------------------------------------------------------------------------------------
// Load: closed-loop agents, each on its own keep-alive HTTP/1.1 connection (raw_http.ts).

interface PhaseResult {
  /** CPU seconds per second of the phase: the server, PostgreSQL (primary + replica), this load generator. */
  cpu: { server: number; postgres: number; primary: number; replica: number; bench: number };
  /**
   * Write transactions per second on the primary during the phase (transaction ids it
   * assigned: heartbeat batches, hardware), and check-in reads per second by where the
   * server read them (its fleet_checkin_reads_total). pg_stat_database would not do: a
   * backend reports its counters up to 10 s late, so a phase would count the one before.
   */
  primaryWritesPerSecond: number;
  /** WAL the primary wrote during the phase, in bytes. */
  primaryWalBytes: number;
  readsPerSecond: { replica: number; primary: number };
  requests: number;
  errors: number;
  perSecond: number;
  p50: number;
  p99: number;
  firstError: string | null;
  /** The phase's length in seconds and its answers' latencies, sorted: for merging slices. */
  seconds: number;
  latencies: number[];
}

const hardwareBody = JSON.stringify({
  agent_version: '1.4.2',
  inventory_hash: BENCH_INVENTORY_HASH,
  hardware: {
    cpu: 'Intel Core i5-8365U',
    memory_mb: 16384,
    disks: [{ model: 'SAMSUNG MZVLB512', size_gb: 512 }],
    nics: [
      { name: 'enp0s31f6', mac: '8c:16:45:00:00:01' },
      { name: 'wlp0s20f3', mac: 'a0:a4:c5:00:00:01' },
    ],
  },
});
// Every bench device holds the same inventory hash, which its check-ins send: an equal hash (the common case).
const plainBody = JSON.stringify({ agent_version: '1.4.2', inventory_hash: BENCH_INVENTORY_HASH });

/** utime and stime of a process, in seconds (/proc/<pid>/stat; clock ticks of 1/100 s). */
function cpuSplitOf(pid: number): { user: number; system: number } {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { user: Number(fields[11]) / 100, system: Number(fields[12]) / 100 };
  } catch {
    return { user: 0, system: 0 }; // the process ended in between
  }
}

/** utime + stime of a process, in seconds. */
function cpuSecondsOf(pid: number): number {
  const { user, system } = cpuSplitOf(pid);
  return user + system;
}

/** CPU seconds of one cluster: its postmaster and every child (backends, background workers). */
function clusterCpuSeconds(postmaster: number | undefined): number {
  if (!postmaster) return 0;
  return processTree(postmaster).reduce((sum, pid) => sum + cpuSecondsOf(pid), 0);
}

type Cpu = PhaseResult['cpu'];

/** CPU seconds per second from now until the returned function is called with the elapsed seconds. */
function startCpuMeter(): (elapsed: number) => Cpu {
  const server0 = cpuSecondsOf(serverPid);
  const postgres0 = postgresCpuSeconds();
  const bench0 = process.cpuUsage();
  return (elapsed) => {
    const bench = process.cpuUsage(bench0);
    const postgres = postgresCpuSeconds();
    const primary = (postgres.primary - postgres0.primary) / elapsed;
    const replica = (postgres.replica - postgres0.replica) / elapsed;
    return {
      server: (cpuSecondsOf(serverPid) - server0) / elapsed,
      postgres: primary + replica,
      primary,
      replica,
      bench: (bench.user + bench.system) / 1e6 / elapsed,
    };
  };
}

function postgresCpuSeconds(): { primary: number; replica: number } {
  return { primary: clusterCpuSeconds(primaryPg()?.pid()), replica: clusterCpuSeconds(pair?.standby.pid()) };
}

/** The primary's processes and their CPU seconds so far, user and system (BENCH_TRACE: where a phase's CPU went). */
function primaryProcessCpu(): Map<number, { user: number; system: number }> {
  const postmaster = primaryPg()?.pid();
  return new Map(postmaster ? processTree(postmaster).map((pid) => [pid, cpuSplitOf(pid)]) : []);
}

/** Prints the primary's busiest processes since `before`, with what each last ran. */
async function traceBusiestPrimary(
  before: Map<number, { user: number; system: number }>,
  elapsed: number,
): Promise<void> {
  const busiest = [...primaryProcessCpu()]
    .map(([pid, cpu]) => {
      const user = (cpu.user - (before.get(pid)?.user ?? 0)) / elapsed;
      const system = (cpu.system - (before.get(pid)?.system ?? 0)) / elapsed;
      return { pid, perSecond: user + system, system };
    })
    .filter((p) => p.perSecond >= 0.002)
    .sort((a, b) => b.perSecond - a.perSecond)
    .slice(0, 6);
  if (primaryStatements) {
    const statements = await primaryStatements<
      Array<{ calls: number; ms: number; planMs: number; rows: number; query: string }>
    >`
      select calls::int8 as calls, (total_exec_time + total_plan_time)::float8 as ms,
             total_plan_time::float8 as "planMs", rows::int8 as rows,
             left(regexp_replace(query, '[[:space:]]+', ' ', 'g'), 90) as query
      from pg_stat_statements where dbid = (select oid from pg_database where datname = current_database())
      order by total_exec_time + total_plan_time desc limit 5`;
    for (const st of statements) {
      console.log(
        `  primary statement: ${(st.ms / elapsed).toFixed(0)} ms/s (planning ${(st.planMs / elapsed).toFixed(0)}) in ${st.calls} calls (${st.rows} rows): ${st.query}`,
      );
    }
  }
  if (!primaryStats || busiest.length === 0) return;
  const activity = await primaryStats<Array<{ pid: number; who: string; query: string }>>`
    select pid, concat_ws(' ', backend_type, nullif(application_name, '')) as who,
           left(regexp_replace(query, '[[:space:]]+', ' ', 'g'), 80) as query
    from pg_stat_activity where pid = any(${busiest.map((p) => p.pid)})`;
  for (const p of busiest) {
    const a = activity.find((row) => row.pid === p.pid);
    console.log(
      `  primary pid ${p.pid}: ${(p.perSecond * 1000).toFixed(0)} ms/s (system ${(p.system * 1000).toFixed(0)}), ${a ? `${a.who}: ${a.query}` : '(gone or auxiliary)'}`,
    );
  }
}

function primaryPg(): RunningPostgres | null {
  return pair?.primary ?? pg;
}

/**
 * The primary's write counters: the next transaction id it will assign (read-only
 * transactions take none, writes one each) and the WAL written so far, in bytes (a full
 * page image after a checkpoint is about 8 KiB of it, a heartbeat row's update about 100 bytes).
 */
let primaryStats: Sql | null = null;
/** BENCH_TRACE: a client of the bench's database on the primary, for pg_stat_statements. */
let primaryStatements: Sql | null = null;
async function primaryWrites(): Promise<{ xid: number; walBytes: number }> {
  if (!primaryStats) return { xid: 0, walBytes: 0 };
  const [row] = await primaryStats<Array<{ xid: number; wal: number }>>`
    select pg_snapshot_xmax(pg_current_snapshot())::text::int8 as xid,
           (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::int8 as wal`;
  return { xid: row?.xid ?? 0, walBytes: row?.wal ?? 0 };
}

/** The server's own /metrics text ('' before the server is up). */
let metricsAccess: { base: string; token: string } | null = null;
async function scrapeMetrics(): Promise<string> {
  if (!metricsAccess) return '';
  const res = await fetch(`${metricsAccess.base}/metrics`, {
    headers: { authorization: `Bearer ${metricsAccess.token}` },
  });
  return res.text();
}

/** The server's check-in reads so far, by source. */
async function checkinReads(): Promise<{ replica: number; primary: number }> {
  const text = await scrapeMetrics();
  const count = (source: string) =>
    Number(new RegExp(`^fleet_checkin_reads_total\\{source="${source}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
  return { replica: count('replica'), primary: count('primary') };
}

let serverPid = 0;

/**
 * A full garbage collection of this load generator before a phase: it shares the cores
 * with the server, so a major collection of its heap (a million secrets) during a phase
 * would make answers late that the server had no part in. V8's `gc`, exposed at run time.
 */
setFlagsFromString('--expose-gc');
const collectOwnGarbage = runInNewContext('gc') as () => void;

/** `writes`: the request writes on the primary at once (a check-in with hardware). */
type NextRequest = (
  i: number,
  agent: number,
) => { method: string; path: string; headers: Record<string, string>; body?: string; writes?: boolean };

/** A closed loop: each agent sends its next request when the last one was answered. */
async function runPhase(
  port: number,
  seconds: number,
  next: NextRequest,
  options: { ok?: readonly number[]; onResponse?: (agent: number, res: RawResponse) => void } = {},
): Promise<PhaseResult> {
  const ok = options.ok ?? [200];
  const connections = await Promise.all(Array.from({ length: settings.agents }, () => RawConnection.open(port)));
  collectOwnGarbage();
  const latencies: number[] = [];
  let errors = 0;
  let firstError: string | null = null;
  let counter = 0;
  // Read before the CPU meter starts: a scrape of /metrics runs the fleet gauges' query on
  // the primary (a count over every device), which is not the phase's work.
  const writes0 = await primaryWrites();
  const reads0 = await checkinReads();
  const cpuMeter = startCpuMeter();
  const primaryProcesses = process.env.BENCH_TRACE ? primaryProcessCpu() : null;
  if (primaryStatements) await primaryStatements`select pg_stat_statements_reset()`;
  if (process.env.BENCH_TRACE) console.log(`phase from ${process.hrtime.bigint() / 1000n} µs`);
  const started = performance.now();
  const stopAt = started + seconds * 1000;
  const loop = async (connection: RawConnection, agent: number) => {
    while (performance.now() < stopAt) {
      const r = next(counter++, agent);
      const request = rawRequest(r.method, r.path, r.headers, r.body);
      const t0 = performance.now();
      try {
        const res = await connection.send(request);
        options.onResponse?.(agent, res);
        if (ok.includes(res.status)) latencies.push(performance.now() - t0);
        else {
          errors++;
          firstError ??= `${res.status} ${res.body.toString('utf8').slice(0, 200)}`;
        }
      } catch (err) {
        errors++;
        firstError ??= String(err);
        return; // the connection is gone
      }
    }
  };
  await Promise.all(connections.map(loop));
  const elapsed = (performance.now() - started) / 1000;
  const cpu = cpuMeter(elapsed);
  if (primaryProcesses) await traceBusiestPrimary(primaryProcesses, elapsed);
  if (process.env.BENCH_TRACE) console.log(`phase to ${process.hrtime.bigint() / 1000n} µs`);
  const writes1 = await primaryWrites();
  const primaryWritesPerSecond = (writes1.xid - writes0.xid) / elapsed;
  const primaryWalBytes = writes1.walBytes - writes0.walBytes;
  const reads1 = await checkinReads();
  const readsPerSecond = {
    replica: (reads1.replica - reads0.replica) / elapsed,
    primary: (reads1.primary - reads0.primary) / elapsed,
  };
  for (const c of connections) c.close();
  latencies.sort((a, b) => a - b);
  return {
    cpu,
    primaryWritesPerSecond,
    primaryWalBytes,
    readsPerSecond,
    requests: latencies.length,
    errors,
    perSecond: latencies.length / elapsed,
    p50: quantile(latencies, 0.5),
    p99: quantile(latencies, 0.99),
    firstError,
    seconds: elapsed,
    latencies,
  };
}

/** One closed-loop phase of the bench: what its agents send and what they accept. */
interface PhaseSpec {
  next: NextRequest;
  options?: { ok?: readonly number[]; onResponse?: (agent: number, res: RawResponse) => void };
}

/**
 * Phases in turns (A B C A B C …), `slices` turns each: `run(i)` runs one slice of phase
 * `i`; returns each phase's slices. A shared host's speed drifts over seconds; phases run
 * one after the other would carry that drift into their ratio, while in turns they share it.
 */
async function inTurns<R>(phases: number, slices: number, run: (phase: number) => Promise<R>): Promise<R[][]> {
  const results: R[][] = Array.from({ length: phases }, () => []);
  for (let slice = 0; slice < slices; slice++) {
    for (let i = 0; i < phases; i++) results[i]!.push(await run(i));
  }
  return results;
}

/** The closed-loop phases in turns of `seconds / slices` each, each merged into one result. */
async function runInTurns(port: number, seconds: number, slices: number, phases: PhaseSpec[]): Promise<PhaseResult[]> {
  const results = await inTurns(phases.length, slices, (i) =>
    runPhase(port, seconds / slices, phases[i]!.next, phases[i]!.options),
  );
  return results.map(mergeSlices);
}

/** The time-weighted mean of a figure of some slices. */
function timeWeighted<T extends { seconds: number }>(slices: T[], value: (r: T) => number): number {
  return slices.reduce((sum, r) => sum + value(r) * r.seconds, 0) / slices.reduce((sum, r) => sum + r.seconds, 0);
}

/** The CPU of some slices, each figure time-weighted. */
function mergedCpu(slices: Array<{ seconds: number; cpu: Cpu }>): Cpu {
  return {
    server: timeWeighted(slices, (r) => r.cpu.server),
    postgres: timeWeighted(slices, (r) => r.cpu.postgres),
    primary: timeWeighted(slices, (r) => r.cpu.primary),
    replica: timeWeighted(slices, (r) => r.cpu.replica),
    bench: timeWeighted(slices, (r) => r.cpu.bench),
  };
}

/** One phase's result from its slices: sums, averages weighted by time, and the quantiles of all answers. */
function mergeSlices(slices: PhaseResult[]): PhaseResult {
  const seconds = slices.reduce((sum, r) => sum + r.seconds, 0);
  const weighted = (value: (r: PhaseResult) => number) => timeWeighted(slices, value);
  const latencies = slices.flatMap((r) => r.latencies).sort((a, b) => a - b);
  const requests = slices.reduce((sum, r) => sum + r.requests, 0);
  return {
    cpu: mergedCpu(slices),
    primaryWritesPerSecond: weighted((r) => r.primaryWritesPerSecond),
    primaryWalBytes: slices.reduce((sum, r) => sum + r.primaryWalBytes, 0),
    readsPerSecond: {
      replica: weighted((r) => r.readsPerSecond.replica),
      primary: weighted((r) => r.readsPerSecond.primary),
    },
    requests,
    errors: slices.reduce((sum, r) => sum + r.errors, 0),
    perSecond: requests / seconds,
    p50: quantile(latencies, 0.5),
    p99: quantile(latencies, 0.99),
    firstError: slices.find((r) => r.firstError)?.firstError ?? null,
    seconds,
    latencies,
  };
}

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}

interface OpenLoopResult {
  offeredPerSecond: number;
  /** Answers by status (a failed connection counts as status 0). */
  statuses: Record<number, number>;
  servedPerSecond: number;
  /** Latency of every answer, from the instant its request was due (wrk2's correction). */
  p50: number;
  p99: number;
  /** p99 of the answers with 200 only (the herd: what is answered must be answered quickly). */
  p99Served: number;
  /** p99 of the requests that write nothing at once (check-ins without hardware): how much of p99 is the writes' commit. */
  p99Reading: number;
  retryAfter: { min: number; max: number } | null;
  /** p99 from the moment a request was written to its answer (the server's share, without the wait for a connection). */
  p99FromSend: number;
  cpu: Cpu;
  /** For merging slices: the loop's length in seconds and its latencies, sorted. */
  seconds: number;
  samples: { all: number[]; served: number[]; reading: number[]; fromSend: number[] };
  /** Latencies by request path, sorted (a mixed loop: each kind's share of the same moments). */
  byPath: Record<string, number[]>;
}

/**
 * An open loop, as a fleet loads the service: requests fall due at evenly spaced instants
 * whatever the answers do, and each one's latency counts from when it was due, so time a
 * request waits for a free connection is measured, not hidden (coordinated omission).
 */
async function runOpenLoop(
  port: number,
  seconds: number,
  ratePerSecond: number,
  next: NextRequest,
  shared?: RawConnection[],
): Promise<OpenLoopResult> {
  const pool = shared ?? (await openPool(port, []));
  collectOwnGarbage();
  const free = pool.filter((c) => c.usable);
  const waiting: number[] = []; // due instants of requests that found no free connection
  const latencies: number[] = [];
  const readingLatencies: number[] = [];
  const servedLatencies: number[] = [];
  const statuses: Record<number, number> = {};
  let retryMin = Number.POSITIVE_INFINITY;
  let retryMax = 0;
  let served = 0;
  let counter = 0;
  const fromSend: number[] = [];
  const byPath: Record<string, number[]> = {};
  const slow: Array<{ due: number; ms: number }> = []; // BENCH_TRACE: when the slow ones were due
  const stalls = process.env.BENCH_TRACE ? await stallMeter() : null;
  const cpuMeter = startCpuMeter();
  const started = performance.now();
  const cpuTimeline = stalls ? sampleCpuTimeline(started) : null;
  if (stalls) console.log(`open loop from ${process.hrtime.bigint() / 1000n} µs`);
  const total = Math.round(seconds * ratePerSecond);
  const interval = 1000 / ratePerSecond;
  let inFlight = 0;
  let issued = 0;
  let done!: () => void;
  const finished = new Promise<void>((r) => (done = r));
  const send = (connection: RawConnection, due: number) => {
    inFlight++;
    const r = next(counter++, counter % settings.devices);
    const sent = performance.now();
    connection
      .send(rawRequest(r.method, r.path, r.headers, r.body))
      .then((res) => {
        fromSend.push(performance.now() - sent);
        statuses[res.status] = (statuses[res.status] ?? 0) + 1;
        if (res.status === 200) {
          served++;
          servedLatencies.push(performance.now() - due);
        }
        const retry = /retry in (\d+) seconds/.exec(res.body.toString('utf8'))?.[1];
        if (res.status === 503 && retry) {
          retryMin = Math.min(retryMin, Number(retry));
          retryMax = Math.max(retryMax, Number(retry));
        }
        free.push(connection);
      })
      .catch((err) => {
        if (process.env.BENCH_TRACE && !statuses[0]) console.log(`first connection error: ${err}`);
        statuses[0] = (statuses[0] ?? 0) + 1;
      })
      .finally(() => {
        latencies.push(performance.now() - due);
        (byPath[r.path] ??= []).push(performance.now() - due);
        if (stalls && performance.now() - due > 10) slow.push({ due: due - started, ms: performance.now() - due });
        if (!r.writes) readingLatencies.push(performance.now() - due);
        inFlight--;
        const queued = waiting.shift();
        if (queued !== undefined && free.length > 0) send(free.pop()!, queued);
        if (issued === total && inFlight === 0 && waiting.length === 0) done();
      });
  };
  const tick = () => {
    const now = performance.now();
    while (issued < total && started + issued * interval <= now) {
      const due = started + issued * interval;
      issued++;
      const connection = free.pop();
      if (connection) send(connection, due);
      else waiting.push(due);
    }
    if (issued < total) setTimeout(tick, Math.max(0, Math.min(1, started + issued * interval - performance.now())));
    else if (inFlight === 0 && waiting.length === 0) done();
  };
  const trace = process.env.BENCH_TRACE
    ? setInterval(
        () =>
          console.log(
            `t=${((performance.now() - started) / 1000).toFixed(1)} issued=${issued} answered=${latencies.length} waiting=${waiting.length} free=${free.length} inFlight=${inFlight} errors=${statuses[0] ?? 0} 503=${statuses[503] ?? 0}`,
          ),
        500,
      )
    : null;
  tick();
  await finished;
  if (trace) clearInterval(trace);
  const elapsed = (performance.now() - started) / 1000;
  const cpu = cpuMeter(elapsed);
  if (stalls) {
    console.log(
      `open loop to ${process.hrtime.bigint() / 1000n} µs; CPU (cores): server ${cpu.server.toFixed(2)}, PostgreSQL ${cpu.postgres.toFixed(2)}, load generator ${cpu.bench.toFixed(2)}`,
    );
    cpuTimeline!.stop();
    console.log(await stalls());
    const bursts = new Map<number, { n: number; max: number }>();
    for (const s of slow) {
      const at = Math.floor(s.due / 100) * 100;
      const b = bursts.get(at) ?? { n: 0, max: 0 };
      bursts.set(at, { n: b.n + 1, max: Math.max(b.max, s.ms) });
    }
    console.log(
      `  answers over 10 ms: ${slow.length}, by when they were due (ms into the phase: count, slowest ms): ` +
        [...bursts].map(([at, b]) => `${at}: ${b.n}, ${b.max.toFixed(0)}`).join('; '),
    );
    for (const [at, b] of bursts)
      if (b.n >= 5) console.log(`    ${at} ms: ${cpuTimeline!.busiest(at - 100, at + 200)}`);
  }
  if (!shared) for (const c of pool) c.close();
  fromSend.sort((a, b) => a - b);
  latencies.sort((a, b) => a - b);
  servedLatencies.sort((a, b) => a - b);
  readingLatencies.sort((a, b) => a - b);
  for (const samples of Object.values(byPath)) samples.sort((a, b) => a - b);
  return {
    offeredPerSecond: total / seconds,
    p99Served: quantile(servedLatencies, 0.99),
    p99Reading: quantile(readingLatencies, 0.99),
    statuses,
    servedPerSecond: served / elapsed,
    p50: quantile(latencies, 0.5),
    p99: quantile(latencies, 0.99),
    retryAfter: retryMax > 0 ? { min: retryMin, max: retryMax } : null,
    p99FromSend: quantile(fromSend, 0.99),
    cpu,
    seconds: elapsed,
    samples: { all: latencies, served: servedLatencies, reading: readingLatencies, fromSend },
    byPath,
  };
}

/**
 * Open loops at the same rate in turns of `seconds / slices` each (check-in, health,
 * check-in, …), each merged into one result: as with the closed loops, a drift of the
 * host's speed falls on both, not on whichever ran second.
 */
async function runOpenLoopsInTurns(
  port: number,
  seconds: number,
  slices: number,
  ratePerSecond: number,
  loops: NextRequest[],
): Promise<OpenLoopResult[]> {
  // One pool for all turns: a thousand connections opened before each turn would keep a
  // burst of socket state alive in the server through the turn, and the collection of its
  // old generation would fall in whichever turn came next. (Idle ones are still replaced
  // every few seconds, see openPool.)
  const pool: RawConnection[] = [];
  try {
    const results = await inTurns(loops.length, slices, async (i) =>
      runOpenLoop(port, seconds / slices, ratePerSecond, loops[i]!, await openPool(port, pool)),
    );
    return results.map(mergeOpenLoops);
  } finally {
    for (const c of pool) c.close();
  }
}

/**
 * The server closes a connection idle for 5 s (Node's keep-alive timeout); one idle for
 * this long is replaced before a turn, so no request is written into a closing connection.
 */
const POOL_IDLE_LIMIT_MS = 3000;

/**
 * `pool` topped up to OPEN_LOOP_CONNECTIONS usable connections, failed and long-idle ones
 * replaced. The loop takes the last free connection first, so the pool is ordered by when
 * each was last answered, the most recent last.
 */
async function openPool(port: number, pool: RawConnection[]): Promise<RawConnection[]> {
  const now = performance.now();
  const kept = pool.filter((c) => c.usable && now - c.idleSince < POOL_IDLE_LIMIT_MS);
  const keep = new Set(kept);
  for (const c of pool) if (!keep.has(c)) c.close();
  kept.sort((a, b) => a.idleSince - b.idleSince);
  const opened = await Promise.all(
    Array.from({ length: OPEN_LOOP_CONNECTIONS - kept.length }, () => RawConnection.open(port)),
  );
  pool.splice(0, pool.length, ...opened, ...kept);
  return pool;
}

function mergeOpenLoops(slices: OpenLoopResult[]): OpenLoopResult {
  const seconds = slices.reduce((sum, r) => sum + r.seconds, 0);
  const merged = (pick: (r: OpenLoopResult) => number[]) => slices.flatMap(pick).sort((a, b) => a - b);
  const all = merged((r) => r.samples.all);
  const served = merged((r) => r.samples.served);
  const reading = merged((r) => r.samples.reading);
  const fromSend = merged((r) => r.samples.fromSend);
  const statuses: Record<number, number> = {};
  for (const r of slices)
    for (const [code, n] of Object.entries(r.statuses)) statuses[Number(code)] = (statuses[Number(code)] ?? 0) + n;
  const retries = slices.flatMap((r) => (r.retryAfter ? [r.retryAfter] : []));
  const paths = new Set(slices.flatMap((r) => Object.keys(r.byPath)));
  const byPath = Object.fromEntries([...paths].map((path) => [path, merged((r) => r.byPath[path] ?? [])]));
  return {
    offeredPerSecond: timeWeighted(slices, (r) => r.offeredPerSecond),
    statuses,
    servedPerSecond: served.length / seconds,
    p50: quantile(all, 0.5),
    p99: quantile(all, 0.99),
    p99Served: quantile(served, 0.99),
    p99Reading: quantile(reading, 0.99),
    retryAfter: retries.length
      ? { min: Math.min(...retries.map((r) => r.min)), max: Math.max(...retries.map((r) => r.max)) }
      : null,
    p99FromSend: quantile(fromSend, 0.99),
    cpu: mergedCpu(slices),
    seconds,
    samples: { all, served, reading, fromSend },
    byPath,
  };
}

/**
 * BENCH_TRACE: every process's CPU every 50 ms (the server, both clusters' processes by
 * their titles, this load generator, and the machine's steal and interrupt time), to see
 * who ran when answers were late.
 */
function sampleCpuTimeline(started: number) {
  const pids = [serverPid, ...processTree(primaryPg()?.pid() ?? 0), ...(pair ? processTree(pair.standby.pid()!) : [])];
  // PostgreSQL shows what a process is in its title (`postgres: walwriter`); read once.
  const titleOf = (pid: number) => {
    if (pid === serverPid) return 'server';
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim().slice(0, 60);
    } catch {
      return 'gone';
    }
  };
  const titles = new Map(pids.map((pid) => [pid, titleOf(pid)]));
  const samples: Array<{ t: number; cpu: Map<string, number> }> = [];
  const take = () => {
    const cpu = new Map<string, number>();
    for (const pid of pids) cpu.set(`${titles.get(pid)} [${pid}]`, cpuSecondsOf(pid));
    const own = process.cpuUsage();
    cpu.set('load generator', (own.user + own.system) / 1e6);
    // The whole machine: time the hypervisor gave to others (steal) and interrupt work.
    const machine = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.split(/\s+/).slice(1).map(Number);
    cpu.set('steal (all cores)', (machine[7] ?? 0) / 100);
    cpu.set('irq and softirq (all cores)', ((machine[5] ?? 0) + (machine[6] ?? 0)) / 100);
    samples.push({ t: performance.now() - started, cpu });
  };
  take();
  const timer = setInterval(take, 50);
  return {
    stop: () => clearInterval(timer),
    /** CPU ms per process between two instants (ms into the phase), the busiest first. */
    busiest(from: number, to: number): string {
      const a = samples.findLast((x) => x.t <= from) ?? samples[0]!;
      const b = samples.find((x) => x.t >= to) ?? samples.at(-1)!;
      return (
        [...b.cpu]
          .map(([k, v]) => [k, (v - (a.cpu.get(k) ?? v)) * 1000] as const)
          .filter(([, ms]) => ms > 0)
          .sort((x, y) => y[1] - x[1])
          .slice(0, 6)
          .map(([k, ms]) => `${k} ${ms.toFixed(0)}`)
          .join(', ') + ` (CPU ms in ${(b.t - a.t).toFixed(0)} ms)`
      );
    },
  };
}

/**
 * BENCH_TRACE: what stalled during an open loop. The server's garbage collections and
 * event-loop delay from its own /metrics (prom-client's default metrics; a scrape resets
 * the lag's window), and this load generator's event-loop delay: a late load generator
 * makes requests late too.
 */
async function stallMeter(): Promise<() => Promise<string>> {
  const gc = (text: string, kind: string, what: 'sum' | 'count') =>
    Number(
      new RegExp(`^nodejs_gc_duration_seconds_${what}\\{kind="${kind}"\\} ([0-9.e+-]+)`, 'm').exec(text)?.[1] ?? 0,
    );
  const before = await scrapeMetrics();
  const own = monitorEventLoopDelay({ resolution: 1 });
  own.enable();
  let ownGc = { count: 0, ms: 0 };
  const gcObserver = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) ownGc = { count: ownGc.count + 1, ms: ownGc.ms + entry.duration };
  });
  gcObserver.observe({ entryTypes: ['gc'] });
  return async () => {
    own.disable();
    gcObserver.disconnect();
    const after = await scrapeMetrics();
    const lagMax = Number(/^nodejs_eventloop_lag_max_seconds ([0-9.e+-]+)/m.exec(after)?.[1] ?? Number.NaN);
    const collections = ['major', 'minor', 'incremental']
      .map((kind) => {
        const n = gc(after, kind, 'count') - gc(before, kind, 'count');
        const ms = (gc(after, kind, 'sum') - gc(before, kind, 'sum')) * 1000;
        return `${kind} ${n} (${ms.toFixed(0)} ms)`;
      })
      .join(', ');
    return (
      `  server: GC ${collections}; event-loop delay max ${(lagMax * 1000).toFixed(1)} ms. ` +
      `Load generator: event-loop delay max ${(own.max / 1e6).toFixed(1)} ms, p99 ${(own.percentile(99) / 1e6).toFixed(1)} ms, ` +
      `GC ${ownGc.count} (${ownGc.ms.toFixed(0)} ms)`
    );
  };
}

// ---------------------------------------------------------------------------------------

function inProcessConfig(): AppConfig {
  return {
    adminToken: randomToken(32),
    publicBaseUrl: 'http://127.0.0.1',
    roleRepositoryUrl: 'https://roles.example.invalid/fleet/ansible-roles.git',
    agentPollIntervalSeconds: 300,
    activation: { maxFailures: 20, windowSeconds: 600, trustProxy: false },
    isoDir: join(stateDir!, 'isos'),
    wlanKey: new Uint8Array(32),
    checkin: { maxInFlight: 1000, retryAfterSeconds: 30 },
    webhooks: { allowHttp: false, allowPrivate: false },
  };
}

async function inProcessCheckin(app: App, secret: string, body: string): Promise<void> {
  const res = await app.request('/api/v1/agent/checkin', {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body,
  });
  if (res.status !== 200) throw new Error(`in-process check-in failed: ${res.status} ${await res.text()}`);
  await res.arrayBuffer();
}

/** The server's "check-ins refused" lines in some of its output, summed: by which bound, and the rest (the database's deadline). */
function refusals(output: string): string {
  const sum = { count: 0, in_flight: 0, event_loop_delay: 0 };
  for (const line of output.split('\n')) {
    if (!line.includes('"check-ins refused"')) continue;
    const l = JSON.parse(line) as typeof sum;
    for (const key of Object.keys(sum) as Array<keyof typeof sum>) sum[key] += l[key] ?? 0;
  }
  if (sum.count === 0) return 'none';
  const other = sum.count - sum.in_flight - sum.event_loop_delay;
  return `${sum.count}: ${sum.in_flight} by the in-flight bound, ${sum.event_loop_delay} by the loop delay${other > 0 ? `, ${other} by the database's deadline` : ''}`;
}

/** The server's replica switches, from its log: how often it was bypassed and why. */
function replicaChanges(output: string): string {
  const reasons = new Map<string, number>();
  for (const line of output.split('\n')) {
    if (!line.includes('replica: bypassed')) continue;
    let why = 'unknown';
    try {
      // The reason without its figures, so equal reasons count together.
      why = String((JSON.parse(line) as { why?: unknown }).why).replace(/[\d.]+ s$/, 'N s');
    } catch {}
    reasons.set(why, (reasons.get(why) ?? 0) + 1);
  }
  if (reasons.size === 0) return 'never bypassed';
  return `bypassed ${[...reasons].map(([why, n]) => `${n} × (${why})`).join(', ')}`;
}

function peakRssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? NaN);
  return kib / 1024;
}

async function transactionsOf(stats: Sql, database: string): Promise<number> {
  const [row] = await stats<Array<{ n: number }>>`
    select (xact_commit + xact_rollback)::int8 as n from pg_stat_database where datname = ${database}`;
  return row!.n;
}

/** Reads the counter until it stops moving (every backend of the server has exited and flushed). */
async function settledTransactions(stats: Sql, database: string): Promise<number> {
  let last = await transactionsOf(stats, database);
  for (let i = 0; i < 50; i++) {
    await new Promise((r) => setTimeout(r, 200));
    const now = await transactionsOf(stats, database);
    if (now === last && i >= 2) return now;
    last = now;
  }
  return last;
}

/** The tables a check-in reads (its groups and overrides are texts on the device's row). */
const CHECKIN_TABLES = ['devices'];

/** Loads the check-in's tables and their indexes into shared buffers (pg_prewarm); says how much. */
async function prewarm(url: string): Promise<string> {
  const sql = createSql(url, { max: 1, applicationName: 'fleet-bench', timeoutSeconds: 600 });
  try {
    let mib = 0;
    for (const table of CHECKIN_TABLES) mib += await prewarmTable(sql, table);
    const [row] = await sql<Array<{ recovery: boolean }>>`select pg_is_in_recovery() as recovery`;
    return `${row!.recovery ? 'replica' : 'primary'}: ${mib} MiB of ${CHECKIN_TABLES.join(', ')} and their indexes`;
  } finally {
    await sql.end();
  }
}

async function main(): Promise<void> {
  const database = 'fleet_bench';
  log(`settings: ${JSON.stringify({ ...settings, runtime })}`);
  stateDir = await mkdtemp(join(tmpdir(), 'fleet-bench-'));
  await chmod(stateDir, 0o711); // the postgres user must traverse into it when we run as root
  const secrets = Array.from({ length: settings.devices }, () => randomToken(32));
  const seedStarted = performance.now();
  let counts: Record<string, number> = {};
  // Seeding a million devices takes statements of minutes: not the service's 10 s limit.
  const seed = async (url: string) => {
    const admin = createSql(url, { max: 1, applicationName: 'fleet-bench', timeoutSeconds: 3600 });
    try {
      counts = await seedFleet(admin, secrets, { organizations: settings.orgs });
      // For the prewarm below; created here because the standby, read-only, copies it.
      await admin`create extension if not exists pg_prewarm`;
      if (process.env.BENCH_TRACE) {
        // Per-phase statement figures of the primary (after the restart below).
        await admin`alter system set shared_preload_libraries = 'pg_stat_statements'`;
        await admin`alter system set pg_stat_statements.track_planning = on`;
        await admin`create extension if not exists pg_stat_statements`;
      }
      // Takes effect at the restart below (and is copied to the standby with the data folder).
      if (settings.sharedBuffers) await admin.unsafe(`alter system set shared_buffers = '${settings.sharedBuffers}'`);
    } finally {
      await admin.end();
    }
  };
  if (settings.replica) {
    // The standby is a copy of the seeded primary, stopped cleanly (test/support/standby.ts).
    log('seeding the primary, then making its streaming standby');
    pair = await startPrimaryAndStandby({ database, durable: true, prepare: seed });
  } else {
    pg = await startEmbeddedPostgres({ stateDir, database, log: silentLogger });
    await migrate(pg.url, silentLogger);
    await seed(pg.url);
    if (settings.sharedBuffers || process.env.BENCH_TRACE) {
      await pg.stop();
      pg = await startEmbeddedPostgres({ stateDir, database, log: silentLogger });
    }
  }
  const primaryUrl = primaryPg()!.url;
  const replicaUrl = pair?.standby.url;
  // A server that has run for a while holds the devices table and its indexes in its buffers
  // (as much as fits); a freshly started one reads them from disk for minutes, longer than
  // the phases last. Both clusters are warmed the same way.
  for (const url of [primaryUrl, replicaUrl]) if (url) log(`prewarmed ${await prewarm(url)}`);
  const versionClient = createSql(primaryUrl, { max: 1, applicationName: 'fleet-bench' });
  const [postgresSettings] = await versionClient<Array<{ version: string; shared_buffers: string }>>`
    select current_setting('server_version') as version, current_setting('shared_buffers') as shared_buffers`;
  const version = postgresSettings!.version;
  const sharedBuffers = postgresSettings!.shared_buffers;
  await versionClient.end();
  log(`seeded in ${((performance.now() - seedStarted) / 1000).toFixed(1)} s: ${JSON.stringify(counts)}`);
  if (settings.primaryDelayMs > 0) {
    const target = new URL(primaryUrl);
    proxy = await startDelayProxy({ host: target.hostname, port: Number(target.port) }, settings.primaryDelayMs);
    log(`the API reaches the primary through a proxy adding ${settings.primaryDelayMs} ms per round trip`);
  }
  const apiPrimaryUrl = (() => {
    if (!proxy) return primaryUrl;
    const u = new URL(primaryUrl);
    u.port = String(proxy.port);
    return u.toString();
  })();

  // Statements per check-in, counted in-process on the same code path the server runs
  // (heartbeats recorded for a batch, reads on the replica when there is one).
  let statements = 0;
  const counted = postgres(primaryUrl, { max: 10, onnotice: () => {}, debug: () => void statements++ });
  const countedReplica = replicaUrl
    ? postgres(replicaUrl, { max: 10, onnotice: () => {}, debug: () => void statements++ })
    : null;
  clients.push(counted);
  const checkinPath = createCheckinPath(
    { primary: counted, replica: countedReplica },
    { log: silentLogger, replica: { maxLagSeconds: 5, timeoutMs: 2000 } },
  );
  // One lag sample, so the reads go to the replica when there is one; nothing on a timer.
  await checkinPath.reads.start();
  checkinPath.reads.stop();
  const app = createApp({ sql: counted, config: inProcessConfig(), log: silentLogger, checkin: checkinPath });
  const pick = () => secrets[Math.floor(Math.random() * secrets.length)]!;
  // Warm the caches first (templates, blueprints, and each organization's overrides, which
  // load once per organization): the first devices are one per organization (seed_fleet.ts).
  for (let i = 0; i < Math.min(settings.orgs, secrets.length); i++) await inProcessCheckin(app, secrets[i]!, plainBody);
  for (let i = 0; i < 20; i++) await inProcessCheckin(app, pick(), plainBody);
  statements = 0;
  for (let i = 0; i < ROUND_TRIP_SAMPLES; i++) await inProcessCheckin(app, pick(), i % 2 ? hardwareBody : plainBody);
  const statementsPerCheckin = statements / ROUND_TRIP_SAMPLES;
  await countedReplica?.end();
  await counted.end();
  clients.splice(clients.indexOf(counted), 1);

  // Server-side transaction counter, read from another database so reading it counts nothing.
  const stats = postgres(primaryPg()!.urlOf('postgres'), { max: 1, onnotice: () => {} });
  clients.push(stats);
  primaryStats = stats;
  if (process.env.BENCH_TRACE) {
    primaryStatements = postgres(primaryUrl, { max: 1, onnotice: () => {} });
    clients.push(primaryStatements);
  }
  const transactionsBefore = await settledTransactions(stats, database);

  const adminToken = randomToken(32);
  log(
    runtime === 'deno'
      ? 'starting the API as `deno task api` does'
      : 'starting the API (node --import tsx api/main_node.ts --api-only)',
  );
  server = await startService(
    {
      DATABASE_URL: apiPrimaryUrl,
      ...(replicaUrl ? { DATABASE_REPLICA_URL: replicaUrl } : {}),
      ADMIN_TOKEN: adminToken,
      ISO_ENCRYPTION_KEY: Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64'),
      DATA_DIR: join(stateDir, 'data'),
      LOG_LEVEL: 'info',
      PUBLIC_BASE_URL: 'http://127.0.0.1',
    },
    runtime === 'deno' ? [] : ['--api-only'],
    runtime,
    runtime === 'node'
      ? {
          nodeArgs: [
            ...(settings.cpuProfileDir ? ['--cpu-prof', `--cpu-prof-dir=${settings.cpuProfileDir}`] : []),
            ...(process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? []),
          ],
        }
      : {},
  );
  const port = Number(new URL(server.base).port);
  metricsAccess = { base: server.base, token: adminToken };
  const pid = server.child.pid!;
  serverPid = pid;
  let healthOk = 0;
  let checkinOk = 0;

  const health = () => ({ method: 'GET', path: '/api/v1/health', headers: {} as Record<string, string> });
  const checkinFor = (i: number, secret: string) => {
    const writes = settings.hardwareEvery > 0 && i % settings.hardwareEvery === 0;
    return {
      method: 'POST',
      path: '/api/v1/agent/checkin',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: writes ? hardwareBody : plainBody,
      writes,
    };
  };
  const checkin = (i: number) => checkinFor(i, pick());

  // The ETag of every device a check-in was answered for, so the unchanged phase can send
  // 304-worthy check-ins for devices all over the fleet, as the full phase reads them.
  const etagOf = new Map<string, string>();
  const answered: string[] = [];
  const sentBy: string[] = new Array(settings.agents);
  const remember = (agent: number, res: RawResponse) => {
    const secret = sentBy[agent]!;
    if (!res.etag) return;
    if (!etagOf.has(secret)) answered.push(secret);
    etagOf.set(secret, res.etag);
  };
  const recordedCheckin = (ok: readonly number[]): PhaseSpec => ({
    next: (i, agent) => checkinFor(i, (sentBy[agent] = pick())),
    options: { ok, onResponse: remember },
  });

  // startService waits for the "service ready" log line, so no request has reached the
  // database yet: every transaction from here on is counted below. Warm both paths first
  // (JIT, prepared statements on every pooled connection, the blueprint cache).
  log(`warming up for ${WARMUP_SECONDS * 2} s`);
  const warmHealth = await runPhase(port, WARMUP_SECONDS, health);
  // A check-in shed while the JIT warms up (503) is the service working as designed.
  const warmUp = recordedCheckin([200, 503]);
  const warmCheckin = await runPhase(port, WARMUP_SECONDS, warmUp.next, warmUp.options);
  healthOk += warmHealth.requests;
  checkinOk += warmCheckin.requests;
  if (warmCheckin.errors > 0) throw new Error(`check-ins failed during warm-up: ${warmCheckin.firstError}`);

  // Unchanged: each check-in is for a device drawn from those answered so far, with the
  // ETag of its last answer. (With one device per agent, the 304s read the same 64 rows
  // again and again, a cache the full phase's random devices do not get at a million.)
  let notModified = 0;
  const unchangedCheckin: PhaseSpec = {
    next: (_i, agent) => {
      const secret = answered[Math.floor(Math.random() * answered.length)] ?? pick();
      sentBy[agent] = secret;
      const etag = etagOf.get(secret);
      return {
        method: 'POST',
        path: '/api/v1/agent/checkin',
        headers: {
          authorization: `Bearer ${secret}`,
          'content-type': 'application/json',
          ...(etag ? { 'if-none-match': etag } : {}),
        },
        body: plainBody,
      };
    },
    options: {
      ok: [200, 304],
      onResponse: (agent, res) => {
        remember(agent, res);
        if (res.status === 304) notModified++;
      },
    },
  };
  const slices = Math.min(settings.slices, settings.seconds);
  log(
    `ceiling (${settings.agents} clients against GET /api/v1/health), check-in (${settings.agents} agents against ` +
      `POST /api/v1/agent/checkin) and unchanged (check-ins with the ETag of a device answered before): ${settings.seconds} s each, ` +
      `in ${slices} turns of ${(settings.seconds / slices).toFixed(1)} s`,
  );
  const [ceiling, result, unchanged] = (await runInTurns(port, settings.seconds, slices, [
    { next: health },
    recordedCheckin([200]),
    unchangedCheckin,
  ])) as [PhaseResult, PhaseResult, PhaseResult];
  healthOk += ceiling.requests;
  checkinOk += result.requests + unchanged.requests;

  const capacity = result.perSecond;
  const openLoop: Array<{ fraction: number; checkin: OpenLoopResult; health: OpenLoopResult; refused: string }> = [];
  for (const fraction of [0.25, 0.5]) {
    const outputBefore = server.output().length;
    const rate = capacity * fraction;
    log(
      `open loop at ${Math.round(rate)}/s (${fraction * 100} % of capacity) for ${OPEN_LOOP_SECONDS} s each: check-in and health in ${slices} turns`,
    );
    const [c, h] = (await runOpenLoopsInTurns(port, OPEN_LOOP_SECONDS, slices, rate, [checkin, health])) as [
      OpenLoopResult,
      OpenLoopResult,
    ];
    checkinOk += c.statuses[200] ?? 0;
    healthOk += h.statuses[200] ?? 0;
    // The server logs its refusals once a second.
    await new Promise((r) => setTimeout(r, 1100));
    openLoop.push({ fraction, checkin: c, health: h, refused: refusals(server.output().slice(outputBefore)) });
  }
  // The loops in turns leave each phase's p99 to whichever turns a pause of the host fell
  // in (a pause of 300 ms is 5 % of a phase's answers). Mixed, both kinds see the same pauses.
  // A quarter of what the closed loop would serve of a half-and-half mix.
  const mixedRate = (0.25 * 2) / (1 / capacity + 1 / ceiling.perSecond);
  log(
    `open loop at ${Math.round(mixedRate)}/s (25 % of capacity for the mix), check-in and health alternating, for ${OPEN_LOOP_SECONDS} s`,
  );
  const mixed = await runOpenLoop(port, OPEN_LOOP_SECONDS, mixedRate, (i) => (i % 2 === 0 ? checkin(i / 2) : health()));
  const mixedCheckins = mixed.byPath['/api/v1/agent/checkin'] ?? [];
  const mixedHealth = mixed.byPath['/api/v1/health'] ?? [];
  checkinOk += mixedCheckins.length;
  healthOk += mixedHealth.length;
  log(`herd: check-ins at ${Math.round(capacity * 2)}/s (2 × capacity) for ${OPEN_LOOP_SECONDS} s`);
  const herdOutputBefore = server.output().length;
  const herd = await runOpenLoop(port, OPEN_LOOP_SECONDS, capacity * 2, checkin);
  await new Promise((r) => setTimeout(r, 1100));
  const herdRefused = refusals(server.output().slice(herdOutputBefore));
  checkinOk += herd.statuses[200] ?? 0;

  const rss = peakRssMiB(pid);
  const replicaSwitches = replicaChanges(server.output());
  await server.stop();
  server = null;
  const transactionsAfter = await settledTransactions(stats, database);
  // Every health answer of 200 is one `select 1` transaction; the rest are the check-ins'.
  const transactionsPerCheckin = (transactionsAfter - transactionsBefore - healthOk) / checkinOk;

  const ratio = result.perSecond / ceiling.perSecond;
  const fmt = (n: number, d = 1) => n.toFixed(d);
  const cpu = cpus();
  const lines = [
    '',
    `machine:        ${cpu.length} × ${cpu[0]?.model ?? 'unknown CPU'}, ${fmt(totalmem() / 2 ** 30)} GiB RAM, Node ${process.version}, PostgreSQL ${version} (embedded, durable settings, shared_buffers ${sharedBuffers})`,
    `fleet:          ${counts.devices} devices, ${counts.organizations} organizations, ${counts.org_units} org units (depth ${counts.org_unit_depth}), ` +
      `${counts.groups} groups, ${counts.group_members} memberships, overrides: ${counts.org_unit_overrides} org unit / ${counts.group_overrides} group / ${counts.device_overrides} device`,
    `server:         ${runtime === 'deno' ? 'Deno (deno task api)' : 'Node (npm run api)'}, the same app`,
    `load:           ${settings.agents} concurrent agents, ${settings.seconds} s per phase (health, check-in and unchanged in ${slices} turns), keep-alive HTTP/1.1 over loopback` +
      (settings.hardwareEvery > 0 ? `, every ${settings.hardwareEvery}th check-in with hardware` : ''),
    `ceiling:        GET /api/v1/health    ${fmt(ceiling.perSecond, 0).padStart(7)} req/s   p50 ${fmt(ceiling.p50, 2)} ms   p99 ${fmt(ceiling.p99, 2)} ms   (${ceiling.errors} errors)`,
    `check-in:       POST /api/v1/agent/checkin ${fmt(result.perSecond, 0).padStart(7)} req/s   p50 ${fmt(result.p50, 2)} ms   p99 ${fmt(result.p99, 2)} ms   (${result.errors} errors)`,
    `CPU (cores):    health: server ${fmt(ceiling.cpu.server, 2)}, PostgreSQL ${fmt(ceiling.cpu.postgres, 2)}, load generator ${fmt(ceiling.cpu.bench, 2)}; ` +
      `check-in: server ${fmt(result.cpu.server, 2)}, PostgreSQL ${fmt(result.cpu.postgres, 2)}, load generator ${fmt(result.cpu.bench, 2)}`,
    // The server's CPU per answer moves less with a noisy host than requests per second do.
    `server CPU per answer: health ${fmt((ceiling.cpu.server / ceiling.perSecond) * 1e6, 0)} µs, check-in ${fmt((result.cpu.server / result.perSecond) * 1e6, 0)} µs, ` +
      `unchanged (304) ${fmt((unchanged.cpu.server / unchanged.perSecond) * 1e6, 0)} µs`,
    `PostgreSQL CPU per check-in: full: primary ${fmt((result.cpu.primary / result.perSecond) * 1000, 3)} ms, replica ${fmt((result.cpu.replica / result.perSecond) * 1000, 3)} ms; ` +
      `unchanged (304): primary ${fmt((unchanged.cpu.primary / unchanged.perSecond) * 1000, 3)} ms, replica ${fmt((unchanged.cpu.replica / unchanged.perSecond) * 1000, 3)} ms`,
    `primary:        ${fmt(result.primaryWritesPerSecond, 1)} write transactions/s in the full phase, ${fmt(unchanged.primaryWritesPerSecond, 1)} in the unchanged phase (heartbeat batches, hardware); ` +
      `WAL per check-in ${fmt(result.primaryWalBytes / result.requests / 1024, 2)} KiB full, ${fmt(unchanged.primaryWalBytes / unchanged.requests / 1024, 2)} KiB unchanged`,
    `check-in reads: full phase ${fmt(result.readsPerSecond.replica, 0)}/s from the replica, ${fmt(result.readsPerSecond.primary, 0)}/s from the primary; ` +
      `unchanged phase ${fmt(unchanged.readsPerSecond.replica, 0)}/s from the replica, ${fmt(unchanged.readsPerSecond.primary, 0)}/s from the primary`,
    `database:       ${replicaUrl ? 'check-ins read from a streaming standby' : 'primary only'}${settings.primaryDelayMs > 0 ? `, primary ${settings.primaryDelayMs} ms away (TCP proxy)` : ''}`,
    ...(replicaUrl ? [`replica:        ${replicaSwitches}`] : []),
    `ratio:          ${fmt(ratio, 2)} (target ≥ 0.5)`,
    `unchanged:      ${fmt(unchanged.perSecond, 0).padStart(7)} req/s (${notModified} × 304)   p50 ${fmt(unchanged.p50, 2)} ms   p99 ${fmt(unchanged.p99, 2)} ms   ratio ${fmt(unchanged.perSecond / ceiling.perSecond, 2)} (target ≥ 0.7)`,
    ...openLoop.map(
      ({ fraction, checkin: c, health: h, refused }) =>
        `open loop ${String(fraction * 100).padStart(2)} %:  ${fmt(c.offeredPerSecond, 0)}/s due   check-in p50 ${fmt(c.p50, 2)} / p99 ${fmt(c.p99, 2)} ms   ` +
        `health p50 ${fmt(h.p50, 2)} / p99 ${fmt(h.p99, 2)} ms   p99 ratio ${fmt(c.p99 / h.p99, 2)}   codes ${JSON.stringify(c.statuses)}\n` +
        `                 check-ins without hardware: p99 ${fmt(c.p99Reading, 2)} ms, ratio ${fmt(c.p99Reading / h.p99, 2)}; refused: ${refused}`,
    ),
    `open loop mixed: ${fmt(mixed.offeredPerSecond, 0)}/s due, every other one a check-in   check-in p50 ${fmt(quantile(mixedCheckins, 0.5), 2)} / p99 ${fmt(quantile(mixedCheckins, 0.99), 2)} ms   ` +
      `health p50 ${fmt(quantile(mixedHealth, 0.5), 2)} / p99 ${fmt(quantile(mixedHealth, 0.99), 2)} ms   p99 ratio ${fmt(quantile(mixedCheckins, 0.99) / quantile(mixedHealth, 0.99), 2)}   codes ${JSON.stringify(mixed.statuses)}`,
    `herd (2 ×):     ${fmt(herd.offeredPerSecond, 0)}/s due   ${fmt(herd.servedPerSecond, 0)}/s served with 200 (${fmt(herd.servedPerSecond / capacity, 2)} × capacity)   ` +
      `p99 of all answers ${fmt(herd.p99, 1)} ms, of the 200s ${fmt(herd.p99Served, 1)} ms   codes ${JSON.stringify(herd.statuses)}` +
      (herd.retryAfter ? `   Retry-After ${herd.retryAfter.min}–${herd.retryAfter.max} s` : ''),
    `herd detail:    refused ${herdRefused}; p99 from the request's write ${fmt(herd.p99FromSend, 1)} ms; CPU (cores): server ${fmt(herd.cpu.server, 2)}, ` +
      `PostgreSQL ${fmt(herd.cpu.postgres, 2)}, load generator ${fmt(herd.cpu.bench, 2)}`,
    // Past what the machine answers, the load generator's queue grows and so does the 200s' p99.
    `herd rate:      due at ${fmt(herd.offeredPerSecond / ceiling.perSecond, 2)} × health's ceiling; answered ${fmt(herd.samples.all.length / herd.seconds, 0)}/s (every answer, in ${fmt(herd.seconds, 1)} s)`,
    `server peak RSS (VmHWM): ${fmt(rss, 0)} MiB`,
    `SQL per check-in: ${fmt(statementsPerCheckin, 2)} statements (in-process postgres.js debug count over ${ROUND_TRIP_SAMPLES} check-ins), ` +
      `${fmt(transactionsPerCheckin, 2)} transactions on the server (pg_stat_database over ${checkinOk} check-ins); each is one round trip, and under load the check-ins of one turn of the server's event loop share their read`,
    '',
  ];
  console.log(lines.join('\n'));
  if (result.errors > 0) console.log(`first check-in error: ${result.firstError}`);
  if (ceiling.errors > 0) console.log(`first health error: ${ceiling.firstError}`);
}

try {
  await main();
  await cleanUp();
  process.exit(0);
} catch (err) {
  console.error(`bench failed: ${err instanceof Error ? err.stack : String(err)}`);
  const running = server as ServiceProcess | null;
  if (running) console.error(`server output (last lines):\n${running.output().split('\n').slice(-20).join('\n')}`);
  await cleanUp();
  process.exit(1);
}
