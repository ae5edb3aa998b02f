/**
 * What the API process is besides its HTTP server, shared by the Node entry (service.ts)
 * and the Deno entry (main_deno.ts): the database pools (the primary, and the replica of
 * `DATABASE_REPLICA_URL`), the batched heartbeats, the app, and the ordered stop. Only the
 * HTTP front differs per runtime; nothing here imports a runtime's own modules.
 */
import { type CheckinPath, createCheckinPath } from '../agent/checkin_path.ts';
import { createApp, type EarlyAnswer } from '../app.ts';
import type { AppConfig, Env } from '../config.ts';
import { createSql, type Sql } from '../db/client.ts';
import type { Logger } from '../log.ts';

/** The runtime's HTTP server, bound before anything else starts (a port in use stops at once). */
export interface HttpFront {
  port: number;
  /** Starts answering with the app (until then: 503 while starting). */
  attach(app: ApiHandler): void;
  /** Stops accepting, lets in-flight requests finish up to the drain time, then closes the rest. */
  close(): Promise<void>;
}

export interface StopStep {
  name: string;
  run: () => Promise<unknown>;
}

export interface ApiDatabase {
  sql: Sql;
  replica: Sql | null;
  /** The check-in's reads, heartbeat batches and hardware writes over these pools. */
  checkin: CheckinPath;
  /** Closes every pool (after `checkin.stop()`). */
  close(): Promise<void>;
}

/**
 * The API database's part of an ordered stop: heartbeats written, then the pools closed.
 * Nothing to do for a database not open yet (a signal during start-up).
 */
export function apiStopSteps(api: () => ApiDatabase | null): StopStep[] {
  return [
    { name: 'heartbeats written', run: async () => api()?.checkin.stop() },
    { name: 'database connections closed', run: async () => api()?.close() },
  ];
}

/** A replica read or probe slower than this goes to the primary: a quarter of the budget, at most 2 s. */
function replicaTimeoutMs(env: Env): number {
  return Math.min(2000, (env.DATABASE_TIMEOUT_SECONDS * 1000) / 4);
}

/** The pools, the heartbeat batches and the replica's lag sampling of one API process. */
export async function openApiDatabase(env: Env, log: Logger, url: string): Promise<ApiDatabase> {
  const pool = { max: env.DATABASE_POOL_SIZE, timeoutSeconds: env.DATABASE_TIMEOUT_SECONDS };
  const sql = createSql(url, pool);
  const replica = env.DATABASE_REPLICA_URL
    ? createSql(env.DATABASE_REPLICA_URL, { ...pool, applicationName: 'fleet-api-replica' })
    : null;
  // The batch has a connection of its own: one backend keeps the heartbeat's plan and the
  // pages it touches, instead of each pooled backend warming up to them in turn, and the
  // batch never waits behind check-ins in the pool's queue.
  const heartbeatSql = createSql(url, {
    max: 1,
    timeoutSeconds: pool.timeoutSeconds,
    applicationName: 'fleet-api-heartbeats',
  });
  // Check-ins with hardware commit on connections of their own: a read pipelined behind a
  // commit that waits for its WAL flush would wait with it.
  const checkinWrites = createSql(url, {
    max: 2,
    timeoutSeconds: pool.timeoutSeconds,
    applicationName: 'fleet-api-checkin-writes',
  });
  const checkin = createCheckinPath(
    { primary: sql, replica, heartbeats: heartbeatSql, writes: checkinWrites },
    { log, replica: { maxLagSeconds: env.REPLICA_MAX_LAG_SECONDS, timeoutMs: replicaTimeoutMs(env) } },
  );
  await checkin.start();
  // After the drain no request waits for an answer any more, and the heartbeats are written:
  // a short grace, then the connections are closed (Deno otherwise keeps them while a
  // request that outlasted the drain is still open).
  const close = async () => {
    await Promise.all([
      sql.end({ timeout: 2 }),
      heartbeatSql.end({ timeout: 2 }),
      checkinWrites.end({ timeout: 2 }),
      replica?.end({ timeout: 2 }),
    ]);
  };
  return { sql, replica, checkin, close };
}

/** What a runtime's HTTP front serves: the app, and the check-ins it refuses before the app. */
export interface ApiHandler {
  fetch: (request: Request, env: unknown) => Response | Promise<Response>;
  /** A prepared 503 for a check-in the gate refuses now (method and request target), or null. */
  refuseEarly: (method: string, url: string) => EarlyAnswer | null;
}

export function apiHandler(db: ApiDatabase, config: AppConfig, log: Logger): ApiHandler {
  const app = createApp({ sql: db.sql, config, log, checkin: db.checkin });
  return { fetch: app.fetch, refuseEarly: app.refuseEarly };
}

/** How a runtime delivers stop signals and ends the process. */
export interface ProcessControl {
  onSignal(signal: 'SIGINT' | 'SIGTERM', handler: () => void): void;
  exit(code: number): void;
}

/**
 * One ordered stop on SIGINT/SIGTERM: each step in turn, one log line per step, exit 0.
 * A second signal during the stop is ignored: the steps have their own time limits.
 */
export function onShutdown(log: Logger, steps: StopStep[], control: ProcessControl): void {
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info('stop: shutting down', { signal });
    for (const step of steps) {
      try {
        await step.run();
        log.info(`stop: ${step.name}`);
      } catch (err) {
        log.warn(`stop: ${step.name} failed`, { error: String(err) });
      }
    }
    log.info('stop: done');
    control.exit(0);
  };
  control.onSignal('SIGINT', () => void stop('SIGINT'));
  control.onSignal('SIGTERM', () => void stop('SIGTERM'));
}

/** The one line a failed start-up prints (then exit 1); the stack only when LOG_LEVEL=debug. */
export function startupFailureLine(err: unknown): string {
  const cause = err instanceof Error && err.message ? err.message : err === undefined ? 'unknown cause' : String(err);
  return `start-up failed: ${cause}`;
}
