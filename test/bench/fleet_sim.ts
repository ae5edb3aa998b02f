/**
 * `npm run bench:fleet`: a fleet of simulated agents (fleet_agent.ts) speaking the real
 * protocol to the real service, in one process over a bounded pool of keep-alive
 * connections (node:http), and a scenario played against it.
 *
 * 1. Starts a fresh embedded PostgreSQL, applies the migrations and seeds the check-in
 *    bench's fleet (seed_fleet.ts); then every device gets a one-time bootstrap token
 *    instead of its agent secret, as resolve leaves a device that has not booted yet. For
 *    the rollout scenarios, the largest organization (all of them with the default single
 *    one) gets a group "Ganze Flotte" of every device (org units have several tops: the
 *    protected "Neue Geräte" is one), and the rollouts' Merkmale lose their seeded
 *    overrides, so a select alters every device.
 * 2. Starts the service as `npm start` does, API and worker in one process (`--api-only`,
 *    as `npm run api`, when no scenario needs the worker), on a port kept across restarts.
 * 3. Starts every agent at a random moment of `--start-seconds`: each bootstraps,
 *    checks in (200), reports every order, and polls from then on with its ETag (304s).
 * 4. Plays the scenarios in turn, prints their figures. It measures and prints; it never
 *    asserts. The last line is every scenario's figures as JSON (`fleet-sim figures: {…}`).
 *
 * Scenarios (`--scenario=A,B,…`, by default all three in this order):
 * - `rollout`: a rollout of a select over the whole fleet (the group), in `--rings`, soak
 *   `--soak-seconds`, created with the operator's token. Prints when each ring opened, the
 *   time to completion, and the lower bound rings × max(soak, poll) + judge interval with
 *   its target (+ 20 s).
 * - `rollout-failing`: the same for another Merkmal whose orders fail with
 *   `--fail-probability` (0.2 unless given) against `--max-failure-ratio` (0.1). Prints where
 *   it paused and how many devices outside the opened rings ran the change (target 0),
 *   counted from the agents' own records against the rollout's ring of each device.
 * - `amplification` (not in the default list): one change after another, each waited out
 *   until every agent has checked in and reported since: an empty group created, a group of
 *   devices renamed, the empty group deleted, and a selection (`onlyoffice` with `optionen`)
 *   at an org unit holding 1 % of the fleet (made by the seed, "Ein Prozent", top-level, in
 *   the largest organization, the Merkmal's other overrides removed so the selection alters
 *   each of its devices). Prints the check-in 200s, applies and reports each caused, against
 *   their targets: 0, 0, 0 and exactly the unit's devices (CONTRACT §26).
 * - `actions` (not in the default list): `--offline-ratio` (0.3) of the agents go offline
 *   (their device off: no cycles, their records kept), then one device action per agent
 *   (a `script`, simulated by a `--action-run-ms` sleep, expiring after
 *   `--action-expiry-seconds`) is queued through the API as the operator; after
 *   `--offline-seconds` the offline ones come back. `--drop-results` (0.05) of the result
 *   requests reach the service and lose their answer on the way back, so the agent sends
 *   them again. Prints the actions queued, run (the agents' own records), run twice
 *   (target 0), lost (not expired, never ended; target 0), expired, the results accepted,
 *   the 409s on retried results, and the time until all ended (CONTRACT §28).
 * - `returning`: once every agent has checked in, a closed-loop burst of check-ins measures
 *   the service's capacity; then the service stops for `--outage-seconds` while the agents
 *   keep polling (refused connections, retried at the poll interval with jitter) and starts
 *   again. Prints the time until every agent has checked in again against devices ÷
 *   capacity, the answers other than 200/304/503 (target 0) and the recovery per second.
 *
 * Flags: `--devices=N` (10000), `--poll-seconds=N` (10), `--outage-seconds=N` (60),
 * `--fail-merkmal=KEY --fail-probability=P` (orders of that Merkmal fail with probability P
 * from the start: `apply_failed`/`remove_failed` with a detail), `--sockets=N` (the
 * connection pool, 256), `--burst-seconds=N` (5), `--orgs=N` (1 with a rollout scenario, so
 * the rollout covers the whole fleet; else 8), `--retry-after-seconds=N` (the service's
 * CHECKIN_RETRY_AFTER_SECONDS: shed agents stay away that long and up to as much again;
 * unset, the service's 30), `--rings=10,50,100`, `--soak-seconds=N` (0),
 * `--max-failure-ratio=R` (0.1), `--start-seconds=N` (the window of the agents' first
 * cycles: the poll interval, and at most 100 bootstraps a second), `--offline-ratio=R` (0.3),
 * `--offline-seconds=N` (three poll intervals), `--drop-results=P` (0.05),
 * `--action-expiry-seconds=N` (3600, at least 60), `--action-run-ms=N` (200),
 * `--scenario=rollout,rollout-failing,returning`. For CI, about
 * a minute and a half: `--devices=300 --poll-seconds=2 --outage-seconds=5 --burst-seconds=2
 * --retry-after-seconds=2`. Loopback only, bounded in time (a watchdog ends it), and it
 * removes everything it created.
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
import { JUDGE_INTERVAL_SECONDS } from '../../api/rollouts/schedule.ts';
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

const ALL_SCENARIOS = ['rollout', 'rollout-failing', 'returning'];
const chosen = (flag('scenario') ?? ALL_SCENARIOS.join(','))
  .split(',')
  .map((name) => name.trim())
  .filter((name) => name !== '');
const withRollouts = chosen.some((name) => name.startsWith('rollout'));
const withAmplification = chosen.includes('amplification');
const withActions = chosen.includes('actions');

function ringsFlag(): number[] {
  const raw = flag('rings') ?? '10,50,100';
  const rings = raw.split(',').map(Number);
  const valid =
    rings.length >= 1 &&
    rings.length <= 10 &&
    rings.every((r, i) => Number.isInteger(r) && r >= 1 && r <= 100 && (i === 0 || r > rings[i - 1]!)) &&
    rings.at(-1) === 100;
  if (!valid) {
    console.error(`--rings: 1–10 strictly ascending percentages ending in 100, got ${JSON.stringify(raw)}`);
    process.exit(2);
  }
  return rings;
}

const settings = {
  devices: numberFlag('devices', 10_000, positive, 'a positive integer'),
  pollSeconds: numberFlag('poll-seconds', 10, positive, 'a positive integer'),
  outageSeconds: numberFlag('outage-seconds', 60, (n) => Number.isInteger(n) && n >= 0, 'a whole number of seconds'),
  failMerkmal: flag('fail-merkmal'),
  failProbability: numberFlag('fail-probability', 0, (n) => n >= 0 && n <= 1, 'a probability from 0 to 1'),
  sockets: numberFlag('sockets', 256, positive, 'a positive integer'),
  burstSeconds: numberFlag('burst-seconds', 5, positive, 'a positive integer'),
  orgs: numberFlag('orgs', withRollouts ? 1 : 8, positive, 'a positive integer'),
  /** The service's CHECKIN_RETRY_AFTER_SECONDS; unset, its own default (30, plus up to as much jitter). */
  retryAfterSeconds: numberFlag('retry-after-seconds', 0, (n) => Number.isInteger(n) && n >= 1, 'a positive integer'),
  scenarios: chosen,
  rings: ringsFlag(),
  soakSeconds: numberFlag(
    'soak-seconds',
    0,
    (n) => Number.isInteger(n) && n >= 0 && n <= 604_800,
    'whole seconds, 0–604800',
  ),
  maxFailureRatio: numberFlag('max-failure-ratio', 0.1, (n) => n >= 0 && n <= 1, 'a ratio from 0 to 1'),
  offlineRatio: numberFlag('offline-ratio', 0.3, (n) => n >= 0 && n <= 1, 'a ratio from 0 to 1'),
  offlineSeconds: 0,
  /** The share of action result requests whose answer is lost on the way back (the request reached the service). */
  dropResults: numberFlag('drop-results', 0.05, (n) => n >= 0 && n < 1, 'a probability from 0 to below 1'),
  actionExpirySeconds: numberFlag(
    'action-expiry-seconds',
    3600,
    (n) => Number.isInteger(n) && n >= 60 && n <= 30 * 86_400,
    'whole seconds, 60–2592000',
  ),
  actionRunMs: numberFlag('action-run-ms', 200, (n) => Number.isInteger(n) && n >= 0, 'whole milliseconds'),
  /**
   * The agents' first cycles (their bootstraps) are spread over this many seconds: a fleet
   * is installed over days, not at once. By default the poll interval, and at most a
   * hundred bootstraps a second.
   */
  startSeconds: 0,
};
settings.offlineSeconds = numberFlag(
  'offline-seconds',
  settings.pollSeconds * 3,
  (n) => Number.isInteger(n) && n >= 0,
  'a whole number of seconds',
);
settings.startSeconds = numberFlag(
  'start-seconds',
  Math.max(settings.pollSeconds, Math.ceil(settings.devices / 100)),
  positive,
  'a positive integer',
);

/** What the failing rollout's Merkmal fails with: `--fail-probability` when given, else above the 0.1 threshold. */
const rolloutFailProbability = flag('fail-probability') ? settings.failProbability : 0.2;

/**
 * The Merkmal each rollout scenario changes: catalog Merkmale with a blueprint on both
 * backends and not in the standard workspace, so with their seeded overrides removed a
 * select alters every device (absent → present). One each, so the failing rollout is not
 * refused as a second rollout of the first one's Merkmal, and the agents' records of the
 * two stay apart.
 */
const ROLLOUT_MERKMAL: Record<string, string> = { rollout: 'qgis', 'rollout-failing': 'gastsitzung' };

/** The Merkmal the amplification scenario selects at its unit: another one, so it runs beside the rollouts. */
const AMPLIFICATION_MERKMAL = 'onlyoffice';

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

/** Outcomes that are not the protocol's own: bootstrap 201, check-in 200/304/503, report 200, an action's start 204 and result 204/409. */
function unexpected(totals: Map<string, number>): Array<[string, number]> {
  const expected = new Set([
    'bootstrap 201',
    'checkin 200',
    'checkin 304',
    'checkin 503',
    'report 200',
    'action-start 204',
    'action-result 204',
    // A result sent again after its answer was lost: the first was taken.
    'action-result 409',
  ]);
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
  /** 1 while the agent's device is off (no cycles); its records stay. */
  offline: Uint8Array;
  /** 1 while the agent is in a cycle. */
  busy: Uint8Array;
  /** Result requests that reached the service and whose answer was dropped. */
  dropped: { results: number };
}

/** Where the rollout scenarios aim: the organization and its group of every device. */
interface Target {
  organizationId: string;
  groupId: string;
  /** Devices in the group (the whole fleet with a single organization). */
  devices: number;
}

/** What the amplification scenario changes: its organization, a group of devices to rename, the 1 % unit. */
interface AmplificationTarget {
  organizationId: string;
  groupId: string;
  unitId: string;
  /** The devices in the unit: the ones whose answer its selection alters. */
  unitDevices: Set<string>;
}

interface Run {
  fleet: Fleet;
  /** Where the service listens and its admin token, for a scenario's own operator calls (a rollout's). */
  service: { base: string; adminToken: string };
  /** The simulator's own connection string, for reading what the service wrote (a rollout's rings). */
  databaseUrl: string;
  target: Target | null;
  amplification: AmplificationTarget | null;
  /** Stops the service; `restart` starts it again on the same port. */
  stopService(): Promise<void>;
  startService(): Promise<void>;
}

/** A scenario's figures, for the closing JSON line (a test reads them). */
type Figures = Record<string, unknown>;

interface Scenario {
  description: string;
  /** Whether the service runs with its worker (jobs such as a rollout's judging). */
  needsWorker: boolean;
  run(run: Run): Promise<Figures>;
}

const scenarios: Record<string, Scenario> = {
  rollout: {
    description: "a select over the whole fleet in rings, judged by the agents' reports, to completion",
    needsWorker: true,
    run: (run) => rolloutScenario(run, 'rollout'),
  },
  'rollout-failing': {
    description: 'the same with the Merkmal failing above the threshold: where it pauses, who ran it',
    needsWorker: true,
    run: (run) => rolloutScenario(run, 'rollout-failing'),
  },
  amplification: {
    description:
      'an empty group created, a group renamed, the empty group deleted, a selection at a unit of 1 %: who gets a 200, applies, reports',
    needsWorker: false,
    run: amplificationScenario,
  },
  actions: {
    description:
      'one action per device, queued with a share of the fleet offline, result answers dropped now and then: run once each, none lost',
    needsWorker: false,
    run: actionsScenario,
  },
  returning: {
    description: 'the service stops for --outage-seconds while the fleet keeps polling, then starts again',
    needsWorker: false,
    run: returningFleet,
  },
};

const unknown = settings.scenarios.filter((name) => !(name in scenarios));
if (unknown.length > 0 || settings.scenarios.length === 0) {
  console.error(`--scenario: a list of ${Object.keys(scenarios).join(', ')}; got ${JSON.stringify(flag('scenario'))}`);
  process.exit(2);
}
const needsWorker = settings.scenarios.some((name) => scenarios[name]!.needsWorker);

/** Longest a shed agent stays away: Retry-After with the service's jitter (up to as much again) and the agent's tenth. */
const shedWaitMs = (settings.retryAfterSeconds || 30) * 2 * 1.1 * 1000 + 2000;

/** The longest a rollout scenario watches: its lower bound three times over, and a minute. */
const rolloutLimitMs =
  (settings.rings.length * (Math.max(settings.soakSeconds, settings.pollSeconds) * 1.1 + JUDGE_INTERVAL_SECONDS) * 3 +
    60) *
  1000;

// Seeding and bootstrap (generous per device), the scenarios' phases, starts and stops.
const budgetMs =
  shedWaitMs * 4 +
  240_000 +
  settings.devices * 40 +
  settings.startSeconds * 1000 +
  (settings.pollSeconds * 20 + settings.outageSeconds + settings.burstSeconds) * 1000 +
  settings.scenarios.filter((name) => name.startsWith('rollout')).length *
    (rolloutLimitMs + settings.pollSeconds * 5000 + settings.devices * 5) +
  // Amplification: four changes, each waited out for a poll round or two and a shed agent's return.
  (withAmplification ? 4 * (shedWaitMs * 2 + settings.pollSeconds * 3300 + 3000 + settings.devices * 2) : 0) +
  (withActions ? actionsLimitMs() + settings.devices * 30 + 60_000 : 0);

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
async function seed(url: string): Promise<{
  devices: Array<{ deviceId: string; token: string }>;
  target: Target | null;
  amplification: AmplificationTarget | null;
}> {
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
    const amplification = withAmplification ? await seedAmplification(admin, settings.devices) : null;
    const target = await admin.begin(async (tx) => {
      await tx`update devices set agent_secret_hash = null, agent_secret_issued_at = null`;
      await tx`
        insert into bootstrap_tokens (device_id, token_hash, expires_at)
        select d, sha256(convert_to(t, 'UTF8')), now() + interval '1 day'
        from unnest(${devices.map((d) => d.id)}::uuid[], ${tokens}::text[]) as x (d, t)`;
      if (!withRollouts) return null;
      // Before any agent runs, so no device has been told otherwise: no events are owed.
      const merkmale = Object.values(ROLLOUT_MERKMAL);
      await tx`delete from org_unit_merkmale where merkmal = any(${merkmale}::text[])`;
      await tx`delete from group_merkmale where merkmal = any(${merkmale}::text[])`;
      await tx`delete from device_merkmale where merkmal = any(${merkmale}::text[])`;
      const [group] = await tx<Array<{ id: string; organization_id: string }>>`
        insert into groups (organization_id, name)
        select organization_id, 'Ganze Flotte' from devices
        group by organization_id order by count(*) desc, organization_id limit 1
        returning id, organization_id`;
      const members = await tx`
        insert into group_members (group_id, device_id, organization_id)
        select ${group!.id}, id, organization_id from devices where organization_id = ${group!.organization_id}`;
      return { organizationId: group!.organization_id, groupId: group!.id, devices: members.count };
    });
    await admin`vacuum analyze`;
    return { devices: devices.map((d, i) => ({ deviceId: d.id, token: tokens[i]! })), target, amplification };
  } finally {
    await admin.end();
  }
}

async function main(): Promise<void> {
  log(`settings: ${JSON.stringify(settings)}`);
  for (const name of settings.scenarios) log(`scenario ${name}: ${scenarios[name]!.description}`);
  stateDir = await mkdtemp(join(tmpdir(), 'fleet-sim-'));
  await chmod(stateDir, 0o711); // the postgres user must traverse into it when we run as root
  pg = await startEmbeddedPostgres({ stateDir, database: 'fleet_sim', log: silentLogger });
  await migrate(pg.url, silentLogger);
  const { devices, target, amplification } = await seed(pg.url);
  if (amplification) log(`amplification: the unit "Ein Prozent" holds ${amplification.unitDevices.size} devices`);
  if (target) log(`rollouts aim at the group "Ganze Flotte" of ${target.devices} devices`);

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
  const args = needsWorker ? [] : ['--api-only'];
  const start = async () => {
    server = await startService(env, args);
  };
  log(`starting the API${needsWorker ? ' and its worker (npm start)' : ' (--api-only)'} on port ${port}`);
  await start();

  const tally = new Tally();
  const transport = httpTransport(port, settings.sockets);
  closers.push(transport.close);
  const dropped = { results: 0 };
  // A result's answer lost on the way back: the service took the request, the agent sees nothing.
  const send: AgentTransport = async (path, headers, body) => {
    if (settings.dropResults === 0 || !path.endsWith('/result') || Math.random() >= settings.dropResults) {
      return transport.send(path, headers, body);
    }
    await transport.send(path, headers, body);
    dropped.results++;
    throw Object.assign(new Error('the answer was dropped on the way'), { code: 'EDROPPED' });
  };
  const offline = new Uint8Array(devices.length);
  const busy = new Uint8Array(devices.length);
  const lastAnswered = new Float64Array(devices.length);
  const returned = { since: Number.POSITIVE_INFINITY, at: new Float64Array(devices.length) };
  const agents = devices.map(({ deviceId, token }, i) => {
    const agent = new SimAgent(deviceId, token, send, {
      pollSeconds: settings.pollSeconds,
      actionRunMs: settings.actionRunMs,
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
      if (offline[i]) {
        // The device is off: nothing runs; it looks again about a poll interval later.
        setTimeout(loop, settings.pollSeconds * 1000 * (1 + Math.random() * 0.1)).unref();
        return;
      }
      busy[i] = 1;
      const { delayMs } = await agent.cycle().finally(() => {
        busy[i] = 0;
      });
      // Unreferenced: the run ends when the scenario does, not when the last agent's wait does.
      if (!stopping) setTimeout(loop, delayMs).unref();
    };
    setTimeout(loop, Math.random() * settings.startSeconds * 1000).unref();
    return agent;
  });
  const fleet: Fleet = { agents, lastAnswered, returned, tally, send: transport.send, offline, busy, dropped };

  // An agent the service refused for good (a 409 to a bootstrap it had taken after all, say)
  // tries again once an hour, as the shell agent does: not waited for, but counted.
  const enrolled = () => agents.every((a) => a.settled || a.refused !== null);
  const enrolling = performance.now();
  const progress = setInterval(() => {
    const settled = agents.filter((a) => a.settled).length;
    log(
      `enrolling: ${settled} of ${agents.length} agents checked in and reported; ${JSON.stringify(Object.fromEntries(tally.totals))}`,
    );
  }, 15_000);
  progress.unref();
  closers.push(() => clearInterval(progress));
  if (
    !(await until(
      enrolled,
      shedWaitMs * 2 +
        settings.startSeconds * 1000 +
        Math.max(60_000, settings.devices * 30 + settings.pollSeconds * 10_000),
    ))
  ) {
    const missing = agents.filter((a) => !a.settled && a.refused === null).length;
    throw new Error(
      `${missing} of ${agents.length} agents have not checked in and reported yet; answers: ${JSON.stringify(Object.fromEntries(tally.totals))}, errors: ${errorsText(tally)}`,
    );
  }
  clearInterval(progress);
  log(
    `every agent bootstrapped, checked in and reported in ${((performance.now() - enrolling) / 1000).toFixed(1)} s ` +
      `(reports: ${tally.totals.get('report 200') ?? 0})`,
  );
  const refused = agents.filter((a) => a.refused !== null);
  if (refused.length > 0) {
    log(
      `${refused.length} agents refused for good (${JSON.stringify(Object.fromEntries(tally.totals))}): ` +
        'they try again once an hour and are left out of the waits below',
    );
  }

  const run: Run = {
    fleet,
    service: { base: `http://127.0.0.1:${port}`, adminToken: env.ADMIN_TOKEN },
    databaseUrl: pg.url,
    target,
    amplification,
    async stopService() {
      await server?.stop();
      server = null;
    },
    startService: start,
  };
  const figures: Record<string, Figures> = {};
  for (const name of settings.scenarios) {
    log(`scenario ${name}`);
    figures[name] = await scenarios[name]!.run(run);
  }
  console.log(`fleet-sim figures: ${JSON.stringify(figures)}`);
}

function errorsText(tally: Tally): string {
  return JSON.stringify(Object.fromEntries(tally.errors));
}

// ---------------------------------------------------------------------------------------
// Scenarios: a staged rollout over the whole fleet, to completion or to its pause

interface RingDetail {
  ring: number;
  percent: number;
  devices: number;
  opened_at: string | null;
  converged: number;
  pending: number;
  failed: number;
}

interface Rollout {
  id: string;
  status: 'running' | 'paused' | 'completed' | 'aborted';
  paused_reason: string | null;
  current_ring: number;
  created_at: string;
  completed_at: string | null;
  rings_detail: RingDetail[];
}

/** One operator call with the admin token; the body parsed when it is JSON. */
async function operatorCall<T>(
  run: Run,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: T }> {
  const res = await fetch(`${run.service.base}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${run.service.adminToken}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  try {
    return { status: res.status, body: JSON.parse(text) as T };
  } catch {
    return { status: res.status, body: text as T };
  }
}

/** One poll interval with the agents' jitter and a second: every agent that is not shed has checked in since. */
const pollRoundMs = () => settings.pollSeconds * 1100 + 1000;

/** Check-in and report answers between two moments (performance.now()), by outcome. */
function answersBetween(tally: Tally, from: number, to: number): Record<string, number> {
  const counts: Record<string, number> = {};
  for (let s = tally.second(from); s <= tally.second(to); s++) {
    for (const [key, count] of tally.perSecond[s] ?? []) {
      if (key.startsWith('checkin') || key.startsWith('report')) counts[key] = (counts[key] ?? 0) + count;
    }
  }
  return counts;
}

async function rolloutScenario(run: Run, name: 'rollout' | 'rollout-failing'): Promise<Figures> {
  const failing = name === 'rollout-failing';
  const merkmal = ROLLOUT_MERKMAL[name]!;
  const target = run.target!;
  const { agents, lastAnswered, tally } = run.fleet;
  const rings = settings.rings;
  if (failing) for (const agent of agents) agent.failing(merkmal, rolloutFailProbability);

  const postedAt = performance.now();
  const body = {
    scope: 'group',
    scope_id: target.groupId,
    merkmal,
    action: 'select',
    rings,
    max_failure_ratio: settings.maxFailureRatio,
    soak_seconds: settings.soakSeconds,
  };
  let posted = await operatorCall<Rollout>(
    run,
    'POST',
    `/api/v1/organizations/${target.organizationId}/rollouts`,
    body,
  );
  for (let attempt = 1; posted.status !== 201 && attempt <= 3; attempt++) {
    // A 503 at the request deadline may come after the creation committed: look before trying again.
    log(`${name}: creating answered ${posted.status} ${JSON.stringify(posted.body)}`);
    const list = await operatorCall<{ data: Rollout[] }>(
      run,
      'GET',
      `/api/v1/organizations/${target.organizationId}/rollouts?status=running`,
    );
    const made =
      list.status === 200
        ? list.body.data.find((r) => (r as Rollout & { merkmal: string }).merkmal === merkmal)
        : undefined;
    if (made) {
      log(`${name}: the rollout was created all the same`);
      posted = { status: 201, body: made };
      break;
    }
    await sleep(5000);
    posted = await operatorCall<Rollout>(run, 'POST', `/api/v1/organizations/${target.organizationId}/rollouts`, body);
  }
  if (posted.status !== 201) {
    console.log(`\n${name}: the rollout was not created: HTTP ${posted.status} ${JSON.stringify(posted.body)}\n`);
    return { created: false, status: posted.status, answer: posted.body };
  }
  log(`${name}: creation took ${((performance.now() - postedAt) / 1000).toFixed(1)} s`);
  let rollout = posted.body;
  const createdAt = Date.parse(rollout.created_at);
  const since = (iso: string | null) => (iso === null ? null : round1((Date.parse(iso) - createdAt) / 1000));
  const membership = await ringsOf(run.databaseUrl, rollout.id);
  log(
    `${name}: rollout ${rollout.id} created (select ${merkmal} on "Ganze Flotte"), ` +
      `${rollout.rings_detail.map((r) => r.devices).join(' + ')} devices in ${rings.length} rings`,
  );

  // Watch it: every transition logged as seen, until it is over or holds still (paused).
  const watchStart = performance.now();
  let seenRing = -1;
  let pausedAfter: number | null = null;
  let failedReads = 0;
  while (performance.now() - watchStart < rolloutLimitMs && !stopping) {
    const read = await operatorCall<Rollout>(run, 'GET', `/api/v1/rollouts/${rollout.id}`);
    if (read.status !== 200) {
      if (failedReads++ === 0)
        log(`${name}: GET /rollouts/${rollout.id} answered ${read.status} ${JSON.stringify(read.body)}`);
    } else {
      rollout = read.body;
      for (const ring of rollout.rings_detail) {
        if (ring.opened_at !== null && ring.ring > seenRing) {
          seenRing = ring.ring;
          log(
            `${name}: ring ${ring.ring} (${ring.percent} %, ${ring.devices} devices) opened +${since(ring.opened_at)} s`,
          );
        }
      }
      if (rollout.status === 'paused') {
        pausedAfter = round1((Date.now() - createdAt) / 1000);
        log(`${name}: paused (${rollout.paused_reason}) in ring ${rollout.current_ring}, seen +${pausedAfter} s`);
        break;
      }
      if (rollout.status !== 'running') {
        log(`${name}: ${rollout.status} +${since(rollout.completed_at)} s`);
        break;
      }
    }
    await sleep(500);
  }
  const ended = rollout.status !== 'running';
  const endFigures = rollout;
  const endedAt = performance.now();
  const answers = answersBetween(tally, postedAt, endedAt);

  // Every agent checks in once more: a device that was to get the change has it now, and
  // one outside the opened rings would have been given it by then if it ever were.
  // A device shed on the way (503) comes back after its Retry-After: waited for too.
  await sleep(pollRoundMs());
  const settled = await until(
    () => agents.every((a, i) => a.refused !== null || lastAnswered[i]! > endedAt),
    shedWaitMs,
  );
  if (!settled) log(`${name}: not every agent has checked in since the end`);
  const last = await operatorCall<Rollout>(run, 'GET', `/api/v1/rollouts/${rollout.id}`);
  if (last.status === 200) rollout = last.body;

  // The agents' own records against each device's ring.
  const opened = new Map(
    rollout.rings_detail.map((r) => [r.ring, r.opened_at === null ? null : Date.parse(r.opened_at)]),
  );
  const ran = new Array<number>(rings.length).fill(0);
  let ranOutside = 0;
  let ranBeforeOpening = 0;
  let ranOutsideRollout = 0;
  for (const agent of agents) {
    const first = (agent.runs.get(merkmal) ?? []).find((r) => r.state === 'present');
    if (!first) continue;
    const ring = membership.get(agent.deviceId);
    if (ring === undefined) {
      ranOutsideRollout++;
      continue;
    }
    ran[ring]!++;
    const openedAt = opened.get(ring) ?? null;
    // Once completed, the change is the scope's own and every device has it, opened ring or not.
    if (openedAt === null) {
      if (rollout.status !== 'completed') ranOutside++;
    } else if (first.at < openedAt) ranBeforeOpening++;
  }
  if (failing) for (const agent of agents) agent.failing(settings.failMerkmal, settings.failProbability);

  const perRing = Math.max(settings.soakSeconds, settings.pollSeconds);
  const lowerBound = rings.length * perRing + JUDGE_INTERVAL_SECONDS;
  // scheduleJudge queues the judge a second after an open ring's reports: its interval there.
  const promptLowerBound = rings.length * perRing + 1;
  const completedAfter = since(endFigures.completed_at);
  const altered = rollout.rings_detail.reduce((s, r) => s + r.devices, 0);

  console.log('');
  console.log(
    `${failing ? 'rollout with failures' : 'rollout'} over the whole fleet: select ${merkmal} on the group of all ${target.devices} devices, ` +
      `${altered} altered; rings [${rings.join(', ')}], soak ${settings.soakSeconds} s, max failure ratio ${settings.maxFailureRatio}` +
      `${failing ? `, its orders failing with probability ${rolloutFailProbability}` : ''}; poll ${settings.pollSeconds} s (+ up to 10 % jitter)`,
  );
  for (const ring of endFigures.rings_detail) {
    const reported = ring.converged + ring.failed;
    console.log(
      `  ring ${ring.ring} (${String(ring.percent).padStart(3)} %): ${String(ring.devices).padStart(6)} devices, ` +
        `${ring.opened_at === null ? 'not opened       ' : `opened +${String(since(ring.opened_at)).padStart(6)} s`}; ` +
        `at the ${endFigures.status === 'paused' ? 'pause' : 'end'} converged ${ring.converged}, pending ${ring.pending}, failed ${ring.failed}` +
        `${ring.failed > 0 && reported > 0 ? ` (${(ring.failed / reported).toFixed(3)} of reported)` : ''}; ` +
        `ran the change once every agent checked in again: ${ran[ring.ring]}`,
    );
  }
  if (!ended) {
    console.log(
      `  NOT over after ${Math.round(rolloutLimitMs / 1000)} s: status ${rollout.status}, ring ${rollout.current_ring}`,
    );
  } else if (endFigures.status === 'paused') {
    console.log(
      `  paused in ring ${endFigures.current_ring} (${endFigures.paused_reason}), seen ${pausedAfter} s after creation`,
    );
  } else {
    console.log(`  ${endFigures.status} after:                     ${completedAfter} s`);
  }
  console.log(
    `  lower bound, ${rings.length} rings × max(soak ${settings.soakSeconds} s, poll ${settings.pollSeconds} s) + judge interval ` +
      `${JUDGE_INTERVAL_SECONDS} s: ${lowerBound} s; target (+ 20 s) ${lowerBound + 20} s` +
      (completedAfter === null
        ? ''
        : `; completion ${completedAfter - (lowerBound + 20) <= 0 ? 'within it by' : 'over it by'} ${round1(Math.abs(completedAfter - (lowerBound + 20)))} s`),
  );
  console.log(
    `  the judge runs within a second of an open ring's reports, so with 1 s for it: ${promptLowerBound} s; target ${promptLowerBound + 20} s` +
      (completedAfter === null
        ? ''
        : `; completion ${completedAfter - (promptLowerBound + 20) <= 0 ? 'within it by' : 'over it by'} ${round1(Math.abs(completedAfter - (promptLowerBound + 20)))} s`),
  );
  if (endFigures.status !== 'completed') {
    console.log(`  devices outside the opened rings that ran the change (agents' records; target 0): ${ranOutside}`);
  }
  console.log(`  devices that ran it before their ring opened (target 0):                    ${ranBeforeOpening}`);
  if (ranOutsideRollout > 0)
    console.log(`  devices not in the rollout that ran it:                                     ${ranOutsideRollout}`);
  console.log(
    `  answers from creation to the ${endFigures.status === 'paused' ? 'pause' : 'end'}: ` +
      ['checkin 200', 'checkin 304', 'checkin 503', 'checkin no answer', 'report 200']
        .map((key) => `${key.replace('checkin ', 'check-in ')} ${answers[key] ?? 0}`)
        .join(', ') +
      ` (a shed agent stays away for its Retry-After; one that is stale is not counted in the ring's figures)`,
  );
  console.log('');

  return {
    created: true,
    merkmal,
    devices_altered: altered,
    status: endFigures.status,
    paused_reason: endFigures.paused_reason,
    current_ring: endFigures.current_ring,
    rings: endFigures.rings_detail.map((r) => ({
      ring: r.ring,
      percent: r.percent,
      devices: r.devices,
      opened_after_seconds: since(r.opened_at),
      converged: r.converged,
      pending: r.pending,
      failed: r.failed,
      ran: ran[r.ring],
    })),
    completed_after_seconds: completedAfter,
    paused_seen_after_seconds: pausedAfter,
    lower_bound_seconds: lowerBound,
    prompt_lower_bound_seconds: promptLowerBound,
    target_seconds: lowerBound + 20,
    ran_outside_opened_rings: ranOutside,
    ran_before_ring_opened: ranBeforeOpening,
    ran_outside_rollout: ranOutsideRollout,
    answers,
  };
}

/** Each device's ring in the rollout, as the service fixed it at creation. */
async function ringsOf(url: string, rolloutId: string): Promise<Map<string, number>> {
  const db = createSql(url, { max: 1, applicationName: 'fleet-sim', timeoutSeconds: 60 });
  try {
    const rows = await db<Array<{ device_id: string; ring: number }>>`
      select device_id, ring from rollout_devices where rollout_id = ${rolloutId}`;
    return new Map(rows.map((r) => [r.device_id, r.ring]));
  } finally {
    await db.end();
  }
}

// ---------------------------------------------------------------------------------------
// Scenario: amplification, what a change costs the fleet (CONTRACT §26)

/**
 * Before any agent runs: a top-level unit "Ein Prozent" in the largest organization with
 * 1 % of the fleet (at least one device) moved into it, and every override of
 * AMPLIFICATION_MERKMAL but those of org units removed (the unit is top-level, so none is on
 * its chain): a selection there alters each of its devices and no other. A group of devices
 * of that organization is the one to rename.
 */
async function seedAmplification(admin: ReturnType<typeof createSql>, devices: number): Promise<AmplificationTarget> {
  const size = Math.max(1, Math.round(devices / 100));
  return admin.begin(async (tx) => {
    const [org] = await tx<Array<{ organization_id: string }>>`
      select organization_id from devices group by organization_id order by count(*) desc, organization_id limit 1`;
    const organizationId = org!.organization_id;
    const [unit] = await tx<Array<{ id: string }>>`
      insert into org_units (organization_id, name) values (${organizationId}, 'Ein Prozent') returning id`;
    const moved = await tx<Array<{ id: string }>>`
      update devices set oe_id = ${unit!.id}
      where id in (select id from devices where organization_id = ${organizationId} order by serial limit ${size})
      returning id`;
    await tx`delete from group_merkmale where merkmal = ${AMPLIFICATION_MERKMAL}`;
    await tx`delete from device_merkmale where merkmal = ${AMPLIFICATION_MERKMAL}`;
    const [group] = await tx<Array<{ id: string }>>`
      select g.id from groups g join group_members m on m.group_id = g.id
      where g.organization_id = ${organizationId}
      group by g.id order by count(*) desc, g.id limit 1`;
    return { organizationId, groupId: group!.id, unitId: unit!.id, unitDevices: new Set(moved.map((d) => d.id)) };
  });
}

/** What one change of the amplification scenario caused, and what it should have. */
interface ChangeFigures {
  change: string;
  /** Devices whose answer the change alters: its target for each figure. */
  target: number;
  checkins_200: number;
  applies: number;
  reports: number;
  /** Devices that applied, outside the ones the change alters (target 0). */
  applied_outside: number;
  /** Devices the change alters that did not apply (target 0). */
  missed: number;
  seconds: number;
}

async function amplificationScenario(run: Run): Promise<Figures> {
  const target = run.amplification!;
  const { agents, lastAnswered, tally } = run.fleet;
  const everyone = () => agents.every((a, i) => a.refused !== null || (lastAnswered[i]! > 0 && a.settled));
  const results: ChangeFigures[] = [];

  /** Makes the change, waits until every agent has checked in (and reported) since, counts. */
  const measure = async (change: string, altered: Set<string>, make: () => Promise<void>) => {
    await until(everyone, shedWaitMs);
    const before = {
      ok: tally.totals.get('checkin 200') ?? 0,
      reports: tally.totals.get('report 200') ?? 0,
      applies: agents.map((a) => a.applies),
    };
    const startedAt = performance.now();
    await make();
    const madeAt = performance.now();
    // A check-in answered a moment after the change was asked before it: two seconds more.
    await sleep(pollRoundMs());
    const settled = await until(
      () => agents.every((a, i) => a.refused !== null || (lastAnswered[i]! > madeAt + 2000 && a.settled)),
      shedWaitMs + pollRoundMs() * 2,
    );
    if (!settled) log(`amplification: not every agent checked in after "${change}"`);
    let applies = 0;
    let appliedOutside = 0;
    let missed = 0;
    agents.forEach((a, i) => {
      const ran = a.applies - before.applies[i]!;
      applies += ran;
      if (ran > 0 && !altered.has(a.deviceId)) appliedOutside++;
      if (ran === 0 && altered.has(a.deviceId)) missed++;
    });
    const figures: ChangeFigures = {
      change,
      target: altered.size,
      checkins_200: (tally.totals.get('checkin 200') ?? 0) - before.ok,
      applies,
      reports: (tally.totals.get('report 200') ?? 0) - before.reports,
      applied_outside: appliedOutside,
      missed,
      seconds: round1((performance.now() - startedAt) / 1000),
    };
    log(`amplification: ${change}: ${JSON.stringify(figures)}`);
    results.push(figures);
  };

  const none = new Set<string>();
  const call = async (method: string, path: string, body?: unknown) => {
    const answer = await operatorCall<{ id?: string }>(run, method, path, body);
    if (answer.status >= 300) throw new Error(`${method} ${path}: ${answer.status} ${JSON.stringify(answer.body)}`);
    return answer.body;
  };
  let emptyGroup = '';
  await measure('an empty group created', none, async () => {
    emptyGroup = (await call('POST', `/api/v1/organizations/${target.organizationId}/groups`, { name: 'Leer' })).id!;
  });
  await measure('a group of devices renamed', none, async () => {
    await call('PATCH', `/api/v1/groups/${target.groupId}`, { name: 'Umbenannt' });
  });
  await measure('the empty group deleted', none, async () => {
    await call('DELETE', `/api/v1/groups/${emptyGroup}`);
  });
  await measure(`a selection at the unit of 1 % (${target.unitDevices.size} devices)`, target.unitDevices, async () => {
    await call('POST', `/api/v1/org-units/${target.unitId}/catalog/${AMPLIFICATION_MERKMAL}/select`, {
      optionen: { 'fleet-sim': 'amplification' },
    });
  });

  console.log('');
  console.log(
    `amplification: ${agents.length} agents, poll ${settings.pollSeconds} s; each change waited out until every agent checked in and reported since`,
  );
  console.log(
    '  change                                             | target | 200s  | applies | reports | applied outside | missed',
  );
  for (const r of results) {
    console.log(
      `  ${r.change.padEnd(50)} | ${String(r.target).padStart(6)} | ${String(r.checkins_200).padStart(5)} | ` +
        `${String(r.applies).padStart(7)} | ${String(r.reports).padStart(7)} | ${String(r.applied_outside).padStart(15)} | ${String(r.missed).padStart(6)}`,
    );
  }
  console.log('');
  return { devices: agents.length, unit_devices: target.unitDevices.size, changes: results };
}

// ---------------------------------------------------------------------------------------
// Scenario: device actions held for offline devices (CONTRACT §28)

/** The longest the actions scenario waits for every action to end: the offline time, rounds of polls, shed agents' returns. */
function actionsLimitMs(): number {
  // pollRoundMs() by hand: the budget above is computed before it is defined.
  return (
    settings.offlineSeconds * 1000 + shedWaitMs * 2 + (settings.pollSeconds * 1100 + 1000) * 10 + settings.devices * 10
  );
}

/** One action per device, created through the API as the operator, a few at a time; the ids by device. */
async function queueActions(run: Run, deviceIds: string[]): Promise<{ ids: Map<string, string>; failed: number }> {
  const ids = new Map<string, string>();
  let failed = 0;
  let next = 0;
  const expiresAt = () => new Date(Date.now() + settings.actionExpirySeconds * 1000).toISOString();
  const body = () => ({
    type: 'script',
    // What a real agent would run; the simulated one sleeps --action-run-ms instead.
    parameters: { interpreter: 'sh', script: `sleep ${settings.actionRunMs / 1000}`, timeout_seconds: 60 },
    expires_at: expiresAt(),
  });
  const worker = async () => {
    while (next < deviceIds.length && !stopping) {
      const deviceId = deviceIds[next++]!;
      let made: string | null = null;
      for (let attempt = 0; made === null && attempt < 4; attempt++) {
        if (attempt > 0) {
          // A 503 at the request deadline may come after the insert committed: look before asking again.
          const list = await operatorCall<{ data: Array<{ id: string }> }>(
            run,
            'GET',
            `/api/v1/devices/${deviceId}/actions`,
          ).catch(() => null);
          if (list?.status === 200 && list.body.data.length > 0) {
            made = list.body.data[0]!.id;
            break;
          }
          await sleep(1000);
        }
        const answer = await operatorCall<{ id: string }>(
          run,
          'POST',
          `/api/v1/devices/${deviceId}/actions`,
          body(),
        ).catch(() => null);
        if (answer?.status === 201) made = answer.body.id;
        else if (attempt === 3) log(`actions: creating one for ${deviceId} answered ${answer?.status ?? 'nothing'}`);
      }
      if (made === null) failed++;
      else ids.set(deviceId, made);
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  return { ids, failed };
}

interface ActionState {
  id: string;
  /** As every read shows it: one not started by its expiry reads `expired`. */
  status: string;
  result: boolean;
  created_at: Date;
  finished_at: Date | null;
}

async function actionStates(url: string, ids: string[]): Promise<ActionState[]> {
  const db = createSql(url, { max: 1, applicationName: 'fleet-sim', timeoutSeconds: 60 });
  try {
    return await db<ActionState[]>`
      select id,
             case when status in ('pending', 'delivered') and expires_at <= now() then 'expired' else status end as status,
             result is not null as result, created_at,
             case when status in ('pending', 'delivered') and expires_at <= now() then expires_at else finished_at end
               as finished_at
      from device_actions where id = any(${ids}::uuid[])`;
  } finally {
    await db.end();
  }
}

async function actionsScenario(run: Run): Promise<Figures> {
  const { agents, offline, busy, dropped, tally } = run.fleet;
  const live = agents.map((_, i) => i).filter((i) => agents[i]!.refused === null);
  // A random share of the fleet goes off, each once it is between cycles.
  const shuffled = [...live].sort(() => Math.random() - 0.5);
  const away = shuffled.slice(0, Math.round(live.length * settings.offlineRatio));
  for (const i of away) offline[i] = 1;
  await until(() => away.every((i) => busy[i] === 0), 120_000);
  const droppedBefore = dropped.results;
  const answersBefore = new Map(tally.totals);
  log(`actions: ${away.length} of ${live.length} agents offline; queueing one action per device`);

  const queueStart = performance.now();
  const { ids, failed } = await queueActions(
    run,
    live.map((i) => agents[i]!.deviceId),
  );
  const queuedIn = (performance.now() - queueStart) / 1000;
  log(
    `actions: ${ids.size} queued in ${queuedIn.toFixed(1)} s (${failed} not created); offline for ${settings.offlineSeconds} s more`,
  );
  await sleep(settings.offlineSeconds * 1000);
  for (const i of away) offline[i] = 0;
  const backAt = Date.now();
  log('actions: the offline agents are back');

  // Every action ended in the service, and every agent's record done (its spooled results delivered).
  const actionIds = [...ids.values()];
  const open = new Set(['pending', 'delivered', 'running']);
  let states: ActionState[] = [];
  const deadline = performance.now() + actionsLimitMs();
  let ended = false;
  let shown = performance.now();
  while (!stopping && performance.now() < deadline) {
    states = await actionStates(run.databaseUrl, actionIds);
    ended = states.every((a) => !open.has(a.status)) && live.every((i) => agents[i]!.settled);
    if (ended) break;
    if (performance.now() - shown > 15_000) {
      shown = performance.now();
      const byStatus: Record<string, number> = {};
      for (const a of states) byStatus[a.status] = (byStatus[a.status] ?? 0) + 1;
      const spooling = live.filter((i) => agents[i]!.etag !== null && !agents[i]!.settled).length;
      log(`actions: ${JSON.stringify(byStatus)}; agents with a result or report still to send: ${spooling}`);
    }
    await sleep(500);
  }
  if (!ended) log('actions: NOT every action ended (or not every agent delivered its results) in time');
  states = await actionStates(run.databaseUrl, actionIds);

  // The agents' own records against what the service holds.
  const byId = new Map(states.map((a) => [a.id, a]));
  let ran = 0;
  let ranTwice = 0;
  let ranNotSucceeded = 0;
  let succeededNotRan = 0;
  let finishedOnRetry = 0;
  let redelivered = 0;
  const refusals: Record<string, number> = {};
  for (const i of live) {
    const agent = agents[i]!;
    redelivered += agent.redelivered;
    const id = ids.get(agent.deviceId);
    if (id === undefined) continue;
    const record = agent.actions.get(id);
    const runs = agent.actionRuns.get(id) ?? 0;
    if (runs >= 1) ran++;
    if (runs >= 2) ranTwice++;
    const status = byId.get(id)?.status;
    if (runs >= 1 && status !== 'succeeded') ranNotSucceeded++;
    if (runs === 0 && status === 'succeeded') succeededNotRan++;
    if (record?.outcome === 'finished_on_retry') finishedOnRetry++;
    else if (record?.outcome && record.outcome !== 'accepted') {
      refusals[record.outcome] = (refusals[record.outcome] ?? 0) + 1;
    }
  }
  const count = (status: string) => states.filter((a) => a.status === status).length;
  const lost = states.filter((a) => open.has(a.status)).length;
  const results = states.filter((a) => a.result).length;
  const firstCreated = Math.min(...states.map((a) => a.created_at.getTime()));
  const lastFinished = Math.max(...states.map((a) => a.finished_at?.getTime() ?? 0));
  const lastCreated = Math.max(...states.map((a) => a.created_at.getTime()));
  const delta = (key: string) => (tally.totals.get(key) ?? 0) - (answersBefore.get(key) ?? 0);
  const figures = {
    devices: live.length,
    offline: away.length,
    offline_seconds: settings.offlineSeconds,
    queued: ids.size,
    not_created: failed,
    queue_seconds: round1(queuedIn),
    run: ran,
    run_twice: ranTwice,
    lost,
    expired: count('expired'),
    canceled: count('canceled'),
    succeeded: count('succeeded'),
    failed: count('failed'),
    results_accepted: results,
    result_answers_dropped: dropped.results - droppedBefore,
    result_409_on_retry: finishedOnRetry,
    ran_not_succeeded: ranNotSucceeded,
    succeeded_not_ran: succeededNotRan,
    redelivered_skipped: redelivered,
    refusals,
    all_ended: ended,
    all_ended_after_seconds: states.length > 0 && lost === 0 ? round1((lastFinished - firstCreated) / 1000) : null,
    ended_after_last_queued_seconds:
      states.length > 0 && lost === 0 ? round1((lastFinished - lastCreated) / 1000) : null,
    ended_after_back_seconds: states.length > 0 && lost === 0 ? round1((lastFinished - backAt) / 1000) : null,
    answers: {
      start_204: delta('action-start 204'),
      result_204: delta('action-result 204'),
      result_409: delta('action-result 409'),
      result_no_answer: delta('action-result no answer'),
      checkin_503: delta('checkin 503'),
      // Any other answer to a start or a result (503s shed, refusals): none expected.
      other: Object.fromEntries(
        [...tally.totals.keys()]
          .filter(
            (key) =>
              key.startsWith('action-') &&
              !['action-start 204', 'action-result 204', 'action-result 409', 'action-result no answer'].includes(key),
          )
          .map((key) => [key, delta(key)]),
      ),
    },
  };

  console.log('');
  console.log(
    `actions: ${live.length} agents, ${away.length} offline (${Math.round(settings.offlineRatio * 100)} %) while one action ` +
      `per device was queued and for ${settings.offlineSeconds} s after; poll ${settings.pollSeconds} s; ` +
      `${Math.round(settings.dropResults * 100)} % of result answers dropped on the way`,
  );
  const row = (label: string, value: unknown) => console.log(`  ${label.padEnd(62)} ${String(value)}`);
  row('actions queued (through the API, as the operator):', `${figures.queued} in ${figures.queue_seconds} s`);
  row("run (the agents' own records):", figures.run);
  row('run twice (target 0):', figures.run_twice);
  row('lost: not expired, never ended (target 0):', figures.lost);
  row('expired:', figures.expired);
  row(
    'results accepted (actions with their one result):',
    `${figures.results_accepted} (${figures.succeeded} succeeded, ${figures.failed} failed)`,
  );
  row('result answers dropped on the way:', figures.result_answers_dropped);
  row('409 action_finished on a retried result (counted delivered):', figures.result_409_on_retry);
  row('run by the agent but not succeeded in the service (target 0):', figures.ran_not_succeeded);
  row('succeeded in the service but not run by the agent (target 0):', figures.succeeded_not_ran);
  row('delivered again after the agent had started it (not rerun):', figures.redelivered_skipped);
  if (Object.keys(refusals).length > 0) row('starts or results refused:', JSON.stringify(refusals));
  row(
    'all ended after (first created → last finished):',
    figures.all_ended_after_seconds === null ? 'NOT all ended' : `${figures.all_ended_after_seconds} s`,
  );
  row(
    '  after the last was queued:',
    figures.ended_after_last_queued_seconds === null ? '-' : `${figures.ended_after_last_queued_seconds} s`,
  );
  row(
    '  after the offline agents came back:',
    figures.ended_after_back_seconds === null ? '-' : `${figures.ended_after_back_seconds} s`,
  );
  row('answers:', JSON.stringify(figures.answers));
  console.log('');
  return figures;
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

async function returningFleet(run: Run): Promise<Figures> {
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
  const settledAfterBurst = await until(
    () => agents.every((a, i) => a.refused !== null || lastAnswered[i]! > burstEnd),
    shedWaitMs + 60_000,
  );
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
  const recovered = await until(() => agents.every((a, i) => a.refused !== null || returned.at[i]! > 0), limitMs);
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
  return {
    devices: n,
    capacity_per_second: Math.round(capacity),
    outage_seconds: round1((readyAt - stopAt) / 1000),
    recovered,
    recovery_seconds: round1(recoverySeconds),
    devices_over_capacity_seconds: round1(capacityBound),
    poll_floor_seconds: round1(pollBound),
    unexpected_answers: odd.reduce((s, [, c]) => s + c, 0),
  };
}

const round1 = (n: number) => Math.round(n * 10) / 10;

main()
  .catch((err) => {
    console.error(err);
    process.exitCode = 1;
  })
  .finally(async () => {
    clearTimeout(watchdog);
    await cleanUp();
  });
