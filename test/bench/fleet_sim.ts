/**
 * `npm run bench:fleet`: a fleet of simulated agents (fleet_agent.ts) speaking the real
 * protocol to the real service, in one process over a bounded pool of keep-alive
 * connections (node:http), and a scenario played against it.
 *
 * 1. Starts a fresh embedded PostgreSQL, applies the migrations and seeds the check-in
 *    bench's fleet (seed_fleet.ts); then every device gets a one-time bootstrap token
 *    instead of its agent secret, as resolve leaves a device that has not booted yet.
 * 2. Starts the API as `npm run api` does (the worker too when the scenario needs it) on a
 *    port of its own, kept across restarts.
 * 3. Starts every agent at a random moment of the first poll interval: each bootstraps,
 *    checks in (200), reports every order, and polls from then on with its ETag (304s).
 * 4. Plays the scenario, prints its figures. It measures and prints; it never asserts.
 *
 * Scenarios (`--scenario=NAME`):
 * - `returning`: once every agent has checked in, a closed-loop burst of check-ins measures
 *   the service's capacity; then the service stops for `--outage-seconds` while the agents
 *   keep polling (refused connections, retried at the poll interval with jitter) and starts
 *   again. Prints the time until every agent has checked in again against devices ÷
 *   capacity, the answers other than 200/304/503 (target 0) and the recovery per second.
 * Staged rollouts (`rollout-*`) are to join the list in `scenarios` below.
 *
 * Flags: `--devices=N` (10000), `--poll-seconds=N` (10), `--outage-seconds=N` (60),
 * `--fail-merkmal=KEY --fail-probability=P` (orders of that Merkmal fail with probability P:
 * `apply_failed`/`remove_failed` with a detail), `--sockets=N` (the connection pool, 256),
 * `--burst-seconds=N` (5), `--orgs=N` (8), `--retry-after-seconds=N` (the service's
 * CHECKIN_RETRY_AFTER_SECONDS: shed agents stay away that long and up to as much again;
 * unset, the service's 30), `--scenario=returning`. For CI, about a minute: `--devices=300
 * --poll-seconds=2 --outage-seconds=5 --burst-seconds=2 --retry-after-seconds=2`.
 * Loopback only, bounded in time (a watchdog ends it), and it removes everything it created.
 */
import { Buffer } from 'node:buffer';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSql } from '../../api/db/client.ts';
import { migrate } from '../../api/db/migrate.ts';
import { randomToken } from '../../api/http/crypto.ts';
import { silentLogger } from '../../api/log.ts';
import { freePort, startEmbeddedPostgres, type RunningPostgres } from '../../api/runtime/embedded_postgres.ts';
import { startService, type ServiceProcess } from '../support/service_process.ts';
import { type AgentStep, type AgentTransport, SimAgent } from './fleet_agent.ts';
import { seedFleet } from './seed_fleet.ts';

// ---------------------------------------------------------------------------------------
// Settings

function flag(name: string): string | undefined {
  return process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
}

function numberFlag(name: string, fallback: number, check: (n: number) => boolean, what: string): number {
  const raw = flag(name);
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!check(value)) {
    console.error(`--${name}: ${what}, got ${JSON.stringify(raw)}`);
    process.exit(2);
  }
  return value;
}

const positive = (n: number) => Number.isInteger(n) && n > 0;
const settings = {
  devices: numberFlag('devices', 10_000, positive, 'a positive integer'),
  pollSeconds: numberFlag('poll-seconds', 10, positive, 'a positive integer'),
  outageSeconds: numberFlag('outage-seconds', 60, (n) => Number.isInteger(n) && n >= 0, 'a whole number of seconds'),
  failMerkmal: flag('fail-merkmal'),
  failProbability: numberFlag('fail-probability', 0, (n) => n >= 0 && n <= 1, 'a probability from 0 to 1'),
  sockets: numberFlag('sockets', 256, positive, 'a positive integer'),
  burstSeconds: numberFlag('burst-seconds', 5, positive, 'a positive integer'),
  orgs: numberFlag('orgs', 8, positive, 'a positive integer'),
  /** The service's CHECKIN_RETRY_AFTER_SECONDS; unset, its own default (30, plus up to as much jitter). */
  retryAfterSeconds: numberFlag('retry-after-seconds', 0, (n) => Number.isInteger(n) && n >= 1, 'a positive integer'),
  scenario: flag('scenario') ?? 'returning',
};

// ---------------------------------------------------------------------------------------
// What every request came to, per second of the run

type Outcome = number | 'no answer';

class Tally {
  readonly started = performance.now();
  /** Per whole second since `started`: step → outcome → count. */
  readonly perSecond: Array<Map<string, number>> = [];
  readonly totals = new Map<string, number>();
  readonly errors = new Map<string, number>();

  record(step: AgentStep | 'burst', outcome: Outcome, error?: string): void {
    const key = `${step} ${outcome}`;
    const second = Math.floor((performance.now() - this.started) / 1000);
    while (this.perSecond.length <= second) this.perSecond.push(new Map());
    const bucket = this.perSecond[second]!;
    bucket.set(key, (bucket.get(key) ?? 0) + 1);
    this.totals.set(key, (this.totals.get(key) ?? 0) + 1);
    if (error) this.errors.set(`${step} ${error}`, (this.errors.get(`${step} ${error}`) ?? 0) + 1);
  }

  second(at: number): number {
    return Math.floor((at - this.started) / 1000);
  }

  count(key: string, from = 0, to = this.perSecond.length): number {
    let n = 0;
    for (let s = Math.max(0, from); s < Math.min(to, this.perSecond.length); s++) n += this.perSecond[s]!.get(key) ?? 0;
    return n;
  }
}

/** Outcomes that are not the protocol's own: bootstrap 201, check-in 200/304/503, report 200. */
function unexpected(totals: Map<string, number>): Array<[string, number]> {
  const expected = new Set(['bootstrap 201', 'checkin 200', 'checkin 304', 'checkin 503', 'report 200']);
  return [...totals].filter(([key]) => !expected.has(key) && !key.endsWith('no answer') && !key.startsWith('burst'));
}

// ---------------------------------------------------------------------------------------
// The connection pool: node:http with keep-alive, at most `sockets` connections

function httpTransport(port: number, sockets: number): { send: AgentTransport; close(): void } {
  const agent = new HttpAgent({ keepAlive: true, maxSockets: sockets, maxFreeSockets: sockets });
  const send: AgentTransport = (path, headers, body) =>
    new Promise((resolve, reject) => {
      const req = httpRequest(
        {
          host: '127.0.0.1',
          port,
          method: 'POST',
          path,
          agent,
          timeout: 60_000,
          headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('error', reject);
          res.on('end', () =>
            resolve({
              status: res.statusCode!,
              etag: res.headers.etag ?? null,
              retryAfter: (res.headers['retry-after'] as string | undefined) ?? null,
              body: Buffer.concat(chunks).toString('utf8'),
            }),
          );
        },
      );
      req.on('timeout', () => req.destroy(Object.assign(new Error('no answer in 60 s'), { code: 'ETIMEDOUT' })));
      req.on('error', reject);
      req.end(body);
    });
  return { send, close: () => agent.destroy() };
}

// ---------------------------------------------------------------------------------------
// The run: database, service, fleet, clean-up

interface Fleet {
  agents: SimAgent[];
  /** When each agent's check-in was last answered 200 or 304 (performance.now()). */
  lastAnswered: Float64Array;
  /** When each agent's check-in was first answered 200 or 304 at or after `since` (0: not yet). */
  returned: { since: number; at: Float64Array };
  tally: Tally;
  send: AgentTransport;
}

interface Run {
  fleet: Fleet;
  /** Where the service listens and its admin token, for a scenario's own operator calls (a rollout's). */
  service: { base: string; adminToken: string };
  /** Stops the service; `restart` starts it again on the same port. */
  stopService(): Promise<void>;
  startService(): Promise<void>;
}

interface Scenario {
  description: string;
  /** Whether the service runs with its worker (jobs such as a rollout's judging). */
  needsWorker: boolean;
  run(run: Run): Promise<void>;
}

const scenarios: Record<string, Scenario> = {
  returning: {
    description: 'the service stops for --outage-seconds while the fleet keeps polling, then starts again',
    needsWorker: false,
    run: returningFleet,
  },
};

const scenario = scenarios[settings.scenario];
if (!scenario) {
  console.error(`--scenario: one of ${Object.keys(scenarios).join(', ')}; got ${JSON.stringify(settings.scenario)}`);
  process.exit(2);
}

/** Longest a shed agent stays away: Retry-After with the service's jitter (up to as much again) and the agent's tenth. */
const shedWaitMs = (settings.retryAfterSeconds || 30) * 2 * 1.1 * 1000 + 2000;

// Seeding and bootstrap (generous per device), the scenario's phases, starts and stops.
const budgetMs =
  shedWaitMs * 4 +
  240_000 +
  settings.devices * 20 +
  (settings.pollSeconds * 20 + settings.outageSeconds + settings.burstSeconds) * 1000;

let stateDir: string | null = null;
let pg: RunningPostgres | null = null;
let server: ServiceProcess | null = null;
let stopping = false;
const closers: Array<() => void> = [];

async function cleanUp(): Promise<void> {
  stopping = true;
  for (const close of closers.splice(0)) close();
  await server?.stop().catch(() => {});
  server = null;
  await pg?.stop().catch(() => {});
  pg = null;
  if (stateDir) await rm(stateDir, { recursive: true, force: true }).catch(() => {});
  stateDir = null;
}

const watchdog = setTimeout(() => {
  console.error(`fleet-sim: over its time budget of ${Math.round(budgetMs / 1000)} s, stopping`);
  void cleanUp().finally(() => process.exit(1));
}, budgetMs);
watchdog.unref();
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => void cleanUp().finally(() => process.exit(130)));
}

function log(message: string): void {
  console.log(`[fleet-sim ${new Date().toISOString().slice(11, 19)}] ${message}`);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits until `done()` holds, checking every 100 ms; false when `timeoutMs` passed first. */
async function until(done: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = performance.now() + timeoutMs;
  while (!done()) {
    if (performance.now() > deadline) return false;
    await sleep(100);
  }
  return true;
}

/** Seeds the fleet, then trades each device's agent secret for a bootstrap token. */
async function seed(url: string): Promise<Array<{ deviceId: string; token: string }>> {
  const admin = createSql(url, { max: 1, applicationName: 'fleet-sim', timeoutSeconds: 3600 });
  try {
    const counts = await seedFleet(
      admin,
      Array.from({ length: settings.devices }, () => randomToken(32)),
      { organizations: settings.orgs },
    );
    log(`seeded: ${JSON.stringify(counts)}`);
    const devices = await admin<Array<{ id: string }>>`select id from devices order by serial`;
    const tokens = devices.map(() => randomToken(32));
    await admin.begin(async (tx) => {
      await tx`update devices set agent_secret_hash = null, agent_secret_issued_at = null`;
      await tx`
        insert into bootstrap_tokens (device_id, token_hash, expires_at)
        select d, sha256(convert_to(t, 'UTF8')), now() + interval '1 day'
        from unnest(${devices.map((d) => d.id)}::uuid[], ${tokens}::text[]) as x (d, t)`;
    });
    await admin`vacuum analyze`;
    return devices.map((d, i) => ({ deviceId: d.id, token: tokens[i]! }));
  } finally {
    await admin.end();
  }
}

async function main(): Promise<void> {
  log(`settings: ${JSON.stringify(settings)}; scenario ${settings.scenario}: ${scenario!.description}`);
  stateDir = await mkdtemp(join(tmpdir(), 'fleet-sim-'));
  await chmod(stateDir, 0o711); // the postgres user must traverse into it when we run as root
  pg = await startEmbeddedPostgres({ stateDir, database: 'fleet_sim', log: silentLogger });
  await migrate(pg.url, silentLogger);
  const devices = await seed(pg.url);

  const port = await freePort();
  const env = {
    PORT: String(port),
    DATABASE_URL: pg.url,
    ADMIN_TOKEN: randomToken(32),
    ISO_ENCRYPTION_KEY: Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64'),
    DATA_DIR: join(stateDir, 'data'),
    LOG_LEVEL: 'info', // startService waits for its "service ready" line
    PUBLIC_BASE_URL: 'http://127.0.0.1',
    // The service's own figure, for what it tells the agents (it takes no less than 5 s);
    // the simulated agents poll at --poll-seconds whatever it says.
    AGENT_POLL_INTERVAL_SECONDS: String(Math.max(5, settings.pollSeconds)),
    ...(settings.retryAfterSeconds > 0 ? { CHECKIN_RETRY_AFTER_SECONDS: String(settings.retryAfterSeconds) } : {}),
  };
  const args = scenario!.needsWorker ? [] : ['--api-only'];
  const start = async () => {
    server = await startService(env, args);
  };
  log(`starting the API${scenario!.needsWorker ? ' and its worker' : ' (--api-only)'} on port ${port}`);
  await start();

  const tally = new Tally();
  const transport = httpTransport(port, settings.sockets);
  closers.push(transport.close);
  const lastAnswered = new Float64Array(devices.length);
  const returned = { since: Number.POSITIVE_INFINITY, at: new Float64Array(devices.length) };
  const agents = devices.map(({ deviceId, token }, i) => {
    const agent = new SimAgent(deviceId, token, transport.send, {
      pollSeconds: settings.pollSeconds,
      failMerkmal: settings.failMerkmal,
      failProbability: settings.failProbability,
      observe: (step, status, error) => {
        tally.record(step, status ?? 'no answer', error);
        if (step === 'checkin' && (status === 200 || status === 304)) {
          const now = performance.now();
          lastAnswered[i] = now;
          if (now >= returned.since && returned.at[i] === 0) returned.at[i] = now;
        }
      },
    });
    const loop = async () => {
      if (stopping) return;
      const { delayMs } = await agent.cycle();
      // Unreferenced: the run ends when the scenario does, not when the last agent's wait does.
      if (!stopping) setTimeout(loop, delayMs).unref();
    };
    setTimeout(loop, Math.random() * settings.pollSeconds * 1000).unref();
    return agent;
  });
  const fleet: Fleet = { agents, lastAnswered, returned, tally, send: transport.send };

  const enrolled = () => agents.every((a) => a.etag !== null);
  const enrolling = performance.now();
  if (!(await until(enrolled, shedWaitMs + Math.max(60_000, settings.devices * 10 + settings.pollSeconds * 10_000)))) {
    const missing = agents.filter((a) => a.etag === null).length;
    throw new Error(
      `${missing} of ${agents.length} agents have not checked in yet; answers: ${JSON.stringify(Object.fromEntries(tally.totals))}, errors: ${errorsText(tally)}`,
    );
  }
  log(
    `every agent bootstrapped, checked in and reported in ${((performance.now() - enrolling) / 1000).toFixed(1)} s ` +
      `(reports: ${tally.totals.get('report 200') ?? 0})`,
  );

  await scenario!.run({
    fleet,
    service: { base: `http://127.0.0.1:${port}`, adminToken: env.ADMIN_TOKEN },
    async stopService() {
      await server?.stop();
      server = null;
    },
    startService: start,
  });
}

function errorsText(tally: Tally): string {
  return JSON.stringify(Object.fromEntries(tally.errors));
}

// ---------------------------------------------------------------------------------------
// Scenario: the returning fleet

/**
 * Check-ins per second the service answers (200/304) in a closed loop of one request per
 * connection of the pool, each for a random agent with its ETag, on top of the fleet's own
 * polling (counted too): the capacity the returning fleet meets.
 */
async function measureCapacity(fleet: Fleet): Promise<number> {
  const { agents, tally, send } = fleet;
  const from = performance.now();
  const end = from + settings.burstSeconds * 1000;
  const loops = Array.from({ length: settings.sockets }, async () => {
    while (performance.now() < end && !stopping) {
      const agent = agents[Math.floor(Math.random() * agents.length)]!;
      const headers: Record<string, string> = {
        authorization: `Bearer ${agent.secret}`,
        'content-type': 'application/json',
        'if-none-match': agent.etag!,
      };
      try {
        const answer = await send('/api/v1/agent/checkin', headers, '{}');
        tally.record('burst', answer.status);
      } catch (err) {
        tally.record('burst', 'no answer', (err as NodeJS.ErrnoException).code);
      }
    }
  });
  await Promise.all(loops);
  const seconds = (performance.now() - from) / 1000;
  // Whole seconds of the tally inside the burst (the first and last are partial).
  const first = tally.second(from) + 1;
  const last = tally.second(from + seconds * 1000);
  let answered = 0;
  for (const key of ['burst 200', 'burst 304', 'checkin 200', 'checkin 304']) answered += tally.count(key, first, last);
  return last > first ? answered / (last - first) : 0;
}

async function returningFleet(run: Run): Promise<void> {
  const { fleet } = run;
  const { agents, tally, lastAnswered, returned } = fleet;
  const n = agents.length;

  log(`steady polling for ${settings.pollSeconds} s, then a ${settings.burstSeconds} s burst to measure capacity`);
  await sleep(settings.pollSeconds * 1000);
  const capacity = await measureCapacity(fleet);
  log(`capacity: ${Math.round(capacity)} check-ins/s answered (200/304) over ${settings.sockets} connections`);
  // The burst overloads the service on purpose: agents it shed come back after Retry-After.
  // The outage starts once every agent has been answered since, so none is still away.
  const burstEnd = performance.now();
  const settledAfterBurst = await until(() => lastAnswered.every((t) => t > burstEnd), shedWaitMs + 60_000);
  log(`${settledAfterBurst ? 'every' : 'NOT every'} agent answered again after the burst`);

  const stopAt = performance.now();
  await run.stopService();
  // From here on, any answer is the restarted service's.
  returned.since = performance.now();
  log(`service stopped; down for ${settings.outageSeconds} s while the fleet keeps polling`);
  await sleep(Math.max(0, settings.outageSeconds * 1000 - (performance.now() - stopAt)));
  const startAt = performance.now();
  await run.startService();
  const readyAt = performance.now();
  log(
    `service ready again after ${((readyAt - stopAt) / 1000).toFixed(1)} s down (start: ${((readyAt - startAt) / 1000).toFixed(1)} s)`,
  );

  // Generous: every agent comes back within its poll interval, a shed one after Retry-After.
  const limitMs = shedWaitMs + Math.max(60_000, settings.pollSeconds * 10_000, (n / Math.max(capacity, 1)) * 10_000);
  const recovered = await until(() => returned.at.every((t) => t > 0), limitMs);
  const doneAt = performance.now();
  let back = 0;
  for (let i = 0; i < n; i++) if (returned.at[i]! > 0) back++;
  await sleep(1000);

  // Figures
  const recoverySeconds = (doneAt - readyAt) / 1000;
  const capacityBound = n / Math.max(capacity, 1);
  const pollBound = settings.pollSeconds * 1.1;
  const outage = { from: tally.second(stopAt), to: tally.second(readyAt) };
  const recovery = { from: tally.second(readyAt), to: tally.second(doneAt) + 1 };
  const sum = (prefix: string, range: { from: number; to: number }) => {
    let total = 0;
    for (let s = range.from; s < range.to; s++) {
      for (const [key, count] of tally.perSecond[s] ?? []) if (key.startsWith(prefix)) total += count;
    }
    return total;
  };

  console.log('');
  console.log(
    `returning fleet: ${n} devices, poll ${settings.pollSeconds} s (+ up to 10 % jitter), ${settings.sockets} connections`,
  );
  console.log(`  capacity (closed-loop burst, 200/304 per second):   ${Math.round(capacity)}/s`);
  console.log(`  outage (stop → ready again):                         ${((readyAt - stopAt) / 1000).toFixed(1)} s`);
  console.log(
    `  check-ins tried while down:                          ${sum('checkin no answer', outage)} (no answer over the run: ${JSON.stringify(
      Object.fromEntries([...tally.errors].filter(([k]) => k.startsWith('checkin'))),
    )})`,
  );
  console.log(
    recovered
      ? `  every agent checked in again after:                  ${recoverySeconds.toFixed(1)} s`
      : `  NOT every agent back after ${recoverySeconds.toFixed(1)} s: ${back} of ${n}`,
  );
  console.log(`  devices ÷ capacity:                                  ${capacityBound.toFixed(1)} s`);
  console.log(`  one poll interval with its jitter (the floor):       ${pollBound.toFixed(1)} s`);
  console.log(
    `  recovery ÷ max(devices ÷ capacity, poll floor):      ${(recoverySeconds / Math.max(capacityBound, pollBound)).toFixed(2)}`,
  );
  console.log(
    `  during recovery: 200 ${sum('checkin 200', recovery)}, 304 ${sum('checkin 304', recovery)}, ` +
      `503 ${sum('checkin 503', recovery)}, no answer ${sum('checkin no answer', recovery)}`,
  );
  const odd = unexpected(tally.totals);
  console.log(
    `  answers other than 200/304/503 (bootstrap 201, report 200; target 0): ${odd.reduce((s, [, c]) => s + c, 0)}` +
      (odd.length > 0 ? ` ${JSON.stringify(Object.fromEntries(odd))}` : ''),
  );
  console.log('');
  console.log('  second of ready    | check-ins answered (200+304) | 503 | no answer | agents back (cumulative)');
  // Rows are the tally's whole seconds; row 0 is the one the service became ready in.
  const backAt = [...returned.at].filter((t) => t > 0).map((t) => tally.second(t) - recovery.from);
  const backPerSecond = new Array<number>(recovery.to - recovery.from + 1).fill(0);
  for (const s of backAt) if (s < backPerSecond.length) backPerSecond[s]!++;
  let cumulative = 0;
  for (let s = recovery.from - 2; s < recovery.to; s++) {
    const bucket = tally.perSecond[s];
    const at = s - recovery.from;
    if (at >= 0) cumulative += backPerSecond[at] ?? 0;
    const answered = (bucket?.get('checkin 200') ?? 0) + (bucket?.get('checkin 304') ?? 0);
    const bar = '#'.repeat(Math.min(60, Math.round((answered / Math.max(capacity, 1)) * 60)));
    console.log(
      `  ${String(at).padStart(18)} | ${String(answered).padStart(28)} | ${String(bucket?.get('checkin 503') ?? 0).padStart(3)} | ` +
        `${String(bucket?.get('checkin no answer') ?? 0).padStart(9)} | ${String(at >= 0 ? cumulative : 0).padStart(6)} ${bar}`,
    );
  }
}

main()
  .catch((err) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(async () => {
    clearTimeout(watchdog);
    await cleanUp();
  });
