/**
 * Prometheus metrics (CONTRACT §15) with prom-client. Each app has its own registry for
 * the request counters (tests build many apps in one process); the runtime's process
 * metrics live in one registry per process. The fleet gauges are read by one query at
 * scrape time, cached for a few seconds, so no request pays for them.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Sql } from '../db/client.ts';
import { staleDevice } from '../devices/repo.ts';

/** The route label of a request that matched no route: never the raw path. */
export const UNMATCHED_ROUTE = 'unmatched';

const FLEET_CACHE_MS = 5_000;

let processRegistry: Registry | undefined;

function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

export interface FleetCounts {
  devices: { active: number; deprovisioned: number; archived: number };
  stale: number;
  isoBuilds: Record<string, number>;
  jobsQueued: number;
  webhookDeliveriesPending: number;
}

export class Metrics {
  readonly registry = new Registry();
  readonly contentType = this.registry.contentType;
  private readonly requests = new Counter({
    name: 'fleet_http_requests_total',
    help: 'HTTP requests answered, by method, route template and status.',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });
  private readonly duration = new Histogram({
    name: 'fleet_http_request_duration_seconds',
    help: 'Time to answer an HTTP request, by method and route template.',
    labelNames: ['method', 'route'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  private readonly checkins = new Counter({
    name: 'fleet_agent_checkins_total',
    help: 'Agent check-ins, by result.',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  private readonly activations = new Counter({
    name: 'fleet_activations_total',
    help: 'Installer activations (POST /api/v1/activate), by result.',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  private readonly devices = new Gauge({
    name: 'fleet_devices',
    help: 'Devices by lifecycle state.',
    labelNames: ['state'] as const,
    registers: [this.registry],
  });
  private readonly stale = new Gauge({
    name: 'fleet_devices_stale',
    help: 'Active devices with an agent that has not checked in for three poll intervals.',
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
  private fleet: { at: number; counts: Promise<FleetCounts> } | undefined;

  /** Counts one answered request; `route` is the route template or UNMATCHED_ROUTE. */
  observe(method: string, route: string, status: number, seconds: number): void {
    this.requests.inc({ method, route, status: String(status) });
    this.duration.observe({ method, route }, seconds);
    if (method === 'POST' && route === '/api/v1/agent/checkin') this.checkins.inc({ result: checkinResult(status) });
    else if (method === 'POST' && route === '/api/v1/activate')
      this.activations.inc({ result: activationResult(status) });
  }

  /** The Prometheus text of this app's metrics, the fleet gauges and the process metrics. */
  async render(sql: Sql, pollIntervalSeconds: number): Promise<string> {
    const counts = await this.fleetCounts(sql, pollIntervalSeconds);
    for (const [state, n] of Object.entries(counts.devices)) this.devices.set({ state }, n);
    this.stale.set(counts.stale);
    this.isoBuilds.reset();
    for (const status of ['pending', 'running', 'completed', 'failed']) this.isoBuilds.set({ status }, 0);
    for (const [status, n] of Object.entries(counts.isoBuilds)) this.isoBuilds.set({ status }, n);
    this.jobsQueued.set(counts.jobsQueued);
    this.webhooksPending.set(counts.webhookDeliveriesPending);
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

/** One round trip for every fleet gauge. */
export async function readFleetCounts(sql: Sql, pollIntervalSeconds: number): Promise<FleetCounts> {
  const [row] = await sql<
    Array<{
      active: number;
      deprovisioned: number;
      archived: number;
      stale: number;
      iso: Record<string, number>;
      queued: number;
      webhooks_pending: number;
    }>
  >`
    select
      count(*) filter (where archived_at is null and deprovisioned_at is null)::int as active,
      count(*) filter (where archived_at is null and deprovisioned_at is not null)::int as deprovisioned,
      count(*) filter (where archived_at is not null)::int as archived,
      count(*) filter (where ${staleDevice(sql, pollIntervalSeconds)})::int as stale,
      (select coalesce(jsonb_object_agg(status, n), '{}'::jsonb)
         from (select status, count(*)::int as n from iso_builds group by status) s) as iso,
      (select count(*)::int from graphile_worker.jobs where locked_at is null) as queued,
      (select count(*)::int from webhook_deliveries where status = 'pending') as webhooks_pending
    from devices d`;
  if (!row) throw new Error('the fleet counts query returned no row');
  return {
    devices: { active: row.active, deprovisioned: row.deprovisioned, archived: row.archived },
    stale: row.stale,
    isoBuilds: row.iso,
    jobsQueued: row.queued,
    webhookDeliveriesPending: row.webhooks_pending,
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
