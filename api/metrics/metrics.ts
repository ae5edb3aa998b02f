/**
 * Prometheus metrics (listed in api/README.md, Operations) with prom-client. Each app has its own registry for
 * the request counters (tests build many apps in one process); the runtime's process
 * metrics live in one registry per process. The fleet gauges are read by one query at
 * scrape time, cached for a few seconds, so no request pays for them.
 */
import { readFileSync } from 'node:fs';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Heartbeats } from '../agent/heartbeats.ts';
import type { Sql } from '../db/client.ts';
import type { CheckinReads } from '../db/replica.ts';
import { type Convergence, type DeviceStatus, effectiveTemplateOf, statusOf } from '../devices/repo.ts';
import { URGENCIES } from '../vulnerabilities/feed_parse.ts';

/** The route label of a request that matched no route: never the raw path. */
export const UNMATCHED_ROUTE = 'unmatched';

const FLEET_CACHE_MS = 5_000;

let processRegistry: Registry | undefined;

/** The metrics of this process (one per process, however many apps): the runtime's and what start-up found. */
export function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
    if (!procReadable()) residentMemoryFromRuntime(processRegistry);
  }
  return processRegistry;
}

/** prom-client reads memory and descriptors from /proc/self, which Deno allows only with --allow-all. */
function procReadable(): boolean {
  if (process.platform !== 'linux') return true; // prom-client uses process.memoryUsage() there
  try {
    readFileSync('/proc/self/status', 'utf8');
    return true;
  } catch {
    return false;
  }
}

/** The resident set from the runtime itself (Deno without /proc/self): the same figure, no file. */
function residentMemoryFromRuntime(registry: Registry): void {
  registry.removeSingleMetric('process_resident_memory_bytes');
  new Gauge({
    name: 'process_resident_memory_bytes',
    help: 'Resident memory size in bytes.',
    registers: [registry],
    collect() {
      this.set(process.memoryUsage().rss);
    },
  });
}

export interface FleetCounts {
  /** Devices by status (`device_status`). */
  devices: Record<DeviceStatus, number>;
  /** The orders (catalog Merkmale) of the active and stale devices, by convergence. */
  orders: Record<Convergence, number>;
  isoBuilds: Record<string, number>;
  jobsQueued: number;
  webhookDeliveriesPending: number;
  /** Devices (not archived) by the worst urgency of their CVEs. */
  vulnerable: Record<string, number>;
  /** Seconds since each feed's last successful read; absent before the first. */
  feedAge: Record<string, number>;
}

/**
 * Increments of a counter's series since it was last read. prom-client checks and hashes
 * the labels on every `inc`, which a herd's refusals, answered before the app, feel most.
 * Here a request adds one to a number under a key, and the counter takes the sums when it
 * is read (its `collect`, run before every read), so what a scrape shows is the same.
 */
class PendingIncrements<L extends Record<string, string>> {
  private readonly series = new Map<string, { labels: L; n: number }>();

  add(key: string, labels: () => L): void {
    const known = this.series.get(key);
    if (known) known.n++;
    else this.series.set(key, { labels: labels(), n: 1 });
  }

  drainInto(counter: { inc(labels: L, value: number): void }): void {
    for (const entry of this.series.values()) {
      if (entry.n === 0) continue;
      counter.inc(entry.labels, entry.n);
      entry.n = 0;
    }
  }
}

export class Metrics {
  readonly registry = new Registry();
  readonly contentType = this.registry.contentType;
  private readonly pendingRequests = new PendingIncrements<{ method: string; route: string; status: string }>();
  private readonly pendingCheckins = new PendingIncrements<{ result: string }>();
  private readonly pendingActivations = new PendingIncrements<{ result: string }>();
  private readonly requests: Counter<'method' | 'route' | 'status'> = new Counter({
    name: 'fleet_http_requests_total',
    help: 'HTTP requests answered, by method, route template and status.',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
    collect: (): void => this.pendingRequests.drainInto(this.requests),
  });
  private readonly duration = new Histogram({
    name: 'fleet_http_request_duration_seconds',
    help: 'Time to answer an HTTP request, by method and route template.',
    labelNames: ['method', 'route'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  private readonly checkins: Counter<'result'> = new Counter({
    name: 'fleet_agent_checkins_total',
    help: 'Agent check-ins, by result.',
    labelNames: ['result'] as const,
    registers: [this.registry],
    collect: (): void => this.pendingCheckins.drainInto(this.checkins),
  });
  private readonly activations: Counter<'result'> = new Counter({
    name: 'fleet_activations_total',
    help: 'Installer activations (POST /api/v1/activate), by result.',
    labelNames: ['result'] as const,
    registers: [this.registry],
    collect: (): void => this.pendingActivations.drainInto(this.activations),
  });
  private readonly devices = new Gauge({
    name: 'fleet_devices',
    help: 'Devices by status: archived, deprovisioned, enrolled, stale, active.',
    labelNames: ['state'] as const,
    registers: [this.registry],
  });
  private readonly stale = new Gauge({
    name: 'fleet_devices_stale',
    help: 'Devices whose agent has not checked in for three poll intervals (fleet_devices{state="stale"}).',
    registers: [this.registry],
  });
  private readonly orders = new Gauge({
    name: 'fleet_orders',
    help: 'Catalog Merkmale of the active and stale devices, by convergence: converged, pending, failed.',
    labelNames: ['convergence'] as const,
    registers: [this.registry],
  });
  private readonly isoBuilds = new Gauge({
    name: 'fleet_iso_builds',
    help: 'ISO builds by status.',
    labelNames: ['status'] as const,
    registers: [this.registry],
  });
  private readonly jobsQueued = new Gauge({
    name: 'fleet_jobs_queued',
    help: 'Background jobs waiting for a worker.',
    registers: [this.registry],
  });
  private readonly webhooksPending = new Gauge({
    name: 'fleet_webhook_deliveries_pending',
    help: 'Webhook deliveries not yet answered with 2xx that will be attempted again.',
    registers: [this.registry],
  });
  private readonly vulnerable = new Gauge({
    name: 'fleet_vulnerable_devices',
    help: 'Devices (not archived) by the worst urgency of their CVEs: critical, high, medium, low, unknown, unimportant.',
    labelNames: ['urgency'] as const,
    registers: [this.registry],
  });
  private readonly feedAge = new Gauge({
    name: 'fleet_vulnerability_feed_age_seconds',
    help: "Seconds since a security feed's last successful read (a 304 included); absent before the first.",
    labelNames: ['feed'] as const,
    registers: [this.registry],
  });
  private fleet: { at: number; counts: Promise<FleetCounts> } | undefined;

  /** The check-in's path (api/agent/README.md): heartbeats waiting for their batch, and where reads went. */
  constructor(path: { heartbeats?: Heartbeats; checkinReads?: CheckinReads } = {}) {
    const { heartbeats, checkinReads } = path;
    new Gauge({
      name: 'fleet_heartbeats_pending',
      help: 'Check-in heartbeats recorded by this process and not yet written to the database.',
      registers: [this.registry],
      collect() {
        this.set(heartbeats?.size ?? 0);
      },
    });
    const flushes = new Histogram({
      name: 'fleet_heartbeat_flush_seconds',
      help: 'Time of one batched heartbeat write (one statement on the primary).',
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [this.registry],
    });
    heartbeats?.onFlush((result) => flushes.observe(result.seconds));
    new Gauge({
      name: 'fleet_replica_lag_seconds',
      help: 'Replay lag of the read replica at the last sample (-1: none configured or not answering).',
      registers: [this.registry],
      collect() {
        this.set(checkinReads?.replica ? (checkinReads.lagSeconds ?? -1) : -1);
      },
    });
    new Counter({
      name: 'fleet_checkin_reads_total',
      help: 'Check-in reads by where they were answered: the replica or the primary.',
      labelNames: ['source'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc({ source: 'replica' }, checkinReads?.counts.replica ?? 0);
        this.inc({ source: 'primary' }, checkinReads?.counts.primary ?? 0);
      },
    });
  }

  /** Counts one answered request; `route` is the route template or UNMATCHED_ROUTE. */
  observe(method: string, route: string, status: number, seconds: number): void {
    this.pendingRequests.add(`${status} ${method} ${route}`, () => ({ method, route, status: String(status) }));
    this.duration.observe({ method, route }, seconds);
    if (method === 'POST' && route === '/api/v1/agent/checkin') {
      const result = checkinResult(status);
      this.pendingCheckins.add(result, () => ({ result }));
    } else if (method === 'POST' && route === '/api/v1/activate') {
      const result = activationResult(status);
      this.pendingActivations.add(result, () => ({ result }));
    }
  }

  /** The Prometheus text of this app's metrics, the fleet gauges and the process metrics. */
  async render(sql: Sql, pollIntervalSeconds: number): Promise<string> {
    const counts = await this.fleetCounts(sql, pollIntervalSeconds);
    for (const [state, n] of Object.entries(counts.devices)) this.devices.set({ state }, n);
    this.stale.set(counts.devices.stale);
    for (const [convergence, n] of Object.entries(counts.orders)) this.orders.set({ convergence }, n);
    this.isoBuilds.reset();
    for (const status of ['pending', 'running', 'completed', 'failed']) this.isoBuilds.set({ status }, 0);
    for (const [status, n] of Object.entries(counts.isoBuilds)) this.isoBuilds.set({ status }, n);
    this.jobsQueued.set(counts.jobsQueued);
    this.webhooksPending.set(counts.webhookDeliveriesPending);
    for (const urgency of URGENCIES) this.vulnerable.set({ urgency }, counts.vulnerable[urgency] ?? 0);
    this.feedAge.reset();
    for (const [feed, age] of Object.entries(counts.feedAge)) this.feedAge.set({ feed }, age);
    return `${await this.registry.metrics()}\n${await processMetrics().metrics()}`;
  }

  private fleetCounts(sql: Sql, pollIntervalSeconds: number): Promise<FleetCounts> {
    const now = Date.now();
    if (!this.fleet || now - this.fleet.at > FLEET_CACHE_MS) {
      const counts = readFleetCounts(sql, pollIntervalSeconds);
      this.fleet = { at: now, counts };
      counts.catch(() => {
        if (this.fleet?.counts === counts) this.fleet = undefined;
      });
    }
    return this.fleet.counts;
  }
}

/** One round trip for every fleet gauge; the statuses and convergences by the database's rules. */
async function readFleetCounts(sql: Sql, pollIntervalSeconds: number): Promise<FleetCounts> {
  const [row] = await sql<
    Array<{
      devices: Partial<Record<DeviceStatus, number>>;
      orders: Partial<Record<Convergence, number>>;
      iso: Record<string, number>;
      queued: number;
      webhooks_pending: number;
      vulnerable: Record<string, number>;
      feed_age: Record<string, number>;
    }>
  >`
    with fleet as materialized (
      select d.id, d.agent_secret_issued_at, dt.backend, dt.workspace, st.status
      from devices d
      left join device_heartbeats h on h.device_id = d.id
      ${effectiveTemplateOf(sql)}
      ${statusOf(sql, pollIntervalSeconds)}
    )
    select
      (select coalesce(jsonb_object_agg(status, n), '{}'::jsonb)
         from (select status, count(*)::int as n from fleet group by status) s) as devices,
      (select coalesce(jsonb_object_agg(convergence, n), '{}'::jsonb)
         from (select c.convergence, count(*)::int as n
               from fleet f
               cross join lateral device_catalog_outcomes(f.id, f.backend, f.workspace, f.agent_secret_issued_at) c
               where f.status in ('active', 'stale')
               group by c.convergence) o) as orders,
      (select coalesce(jsonb_object_agg(status, n), '{}'::jsonb)
         from (select status, count(*)::int as n from iso_builds group by status) s) as iso,
      (select count(*)::int from graphile_worker.jobs where locked_at is null) as queued,
      (select count(*)::int from webhook_deliveries where status = 'pending') as webhooks_pending,
      (select coalesce(jsonb_object_agg(urgency, n), '{}'::jsonb)
         from (select (${URGENCIES as unknown as string[]}::text[])[ms.worst_urgency_rank + 1] as urgency, count(*)::int as n
                 from device_inventories i
                 join devices d on d.id = i.device_id and d.archived_at is null
                 join vulnerability_matched_sets ms on ms.package_set_id = i.package_set_id and ms.release = i.release
                where ms.worst_urgency_rank is not null
                group by ms.worst_urgency_rank) v) as vulnerable,
      (select coalesce(jsonb_object_agg(name, extract(epoch from now() - last_success_at)), '{}'::jsonb)
         from vulnerability_feeds where last_success_at is not null) as feed_age`;
  if (!row) throw new Error('the fleet counts query returned no row');
  const { devices, orders } = row;
  return {
    devices: {
      archived: devices.archived ?? 0,
      deprovisioned: devices.deprovisioned ?? 0,
      enrolled: devices.enrolled ?? 0,
      stale: devices.stale ?? 0,
      active: devices.active ?? 0,
    },
    orders: { converged: orders.converged ?? 0, pending: orders.pending ?? 0, failed: orders.failed ?? 0 },
    isoBuilds: row.iso,
    jobsQueued: row.queued,
    webhookDeliveriesPending: row.webhooks_pending,
    vulnerable: row.vulnerable,
    feedAge: row.feed_age,
  };
}

function checkinResult(status: number): string {
  if (status === 200) return 'ok';
  if (status === 304) return 'not_modified';
  if (status === 401) return 'unauthorized';
  if (status === 403) return 'refused';
  if (status === 400 || status === 413) return 'invalid';
  if (status === 503) return 'shed';
  return 'error';
}

function activationResult(status: number): string {
  if (status === 200) return 'ok';
  if (status === 403) return 'refused';
  if (status === 409) return 'already_enrolled';
  if (status === 429) return 'rate_limited';
  if (status === 400 || status === 413) return 'invalid';
  return 'error';
}
