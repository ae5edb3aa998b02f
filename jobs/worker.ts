/**
 * The Graphile Worker runner: the build host's entry (`npm run worker`), also started in
 * process by `npm start`. The queue lives in PostgreSQL only.
 */
import { EventEmitter } from 'node:events';
import { fileURLToPath } from 'node:url';
import { Logger as GraphileLogger, run, type Runner, type TaskList, type WorkerEvents } from 'graphile-worker';
import pg from 'pg';
import { DEFAULT_WEBHOOK_CONCURRENCY } from '../api/config.ts';
import { createSql, databaseTimeouts } from '../api/db/client.ts';
import type { Logger } from '../api/log.ts';
import { DEFAULT_WORKER_SILENCE_SECONDS, startHeartbeat } from './heartbeat.ts';
import { REAP_DEAD_BUILDS_TASK } from './tasks/reap_dead_builds.ts';
import { buildHostTasks, deliveryTasks, reaperTasks, securityTasks } from './tasks/index.ts';
import { REFRESH_VULNERABILITY_FEEDS_TASK } from './tasks/vulnerabilities.ts';
import type { TaskDeps, WorkerDeps } from './worker_deps.ts';

export const crontabFile = fileURLToPath(new URL('./crontab', import.meta.url));

/**
 * Batched (delay 0) completion and failure are flushed before stop() or runOnce() resolves;
 * unbatched, 0.17 fires them without waiting and a job that ends during a graceful stop
 * stays locked for hours (with its payload) instead of being released.
 */
export const jobSettlement = { completeJobBatchDelay: 0, failJobBatchDelay: 0 } as const;

export interface WorkerOptions {
  /** How long a graceful stop lets running jobs finish before aborting them; default 5 s. */
  gracefulShutdownAbortTimeoutMs?: number;
  /** How often to look for jobs scheduled in the future; default 1 s (new jobs arrive by NOTIFY). */
  pollIntervalMs?: number;
  /** Time limits of the worker's database connections (as the API's); default 10 s. */
  databaseTimeoutSeconds?: number;
  /** Webhook deliveries in flight (WEBHOOK_CONCURRENCY); default 4. */
  webhookConcurrency?: number;
}

export async function startWorker(
  databaseUrl: string,
  deps: WorkerDeps,
  concurrency = 1,
  options: WorkerOptions = {},
): Promise<Runner> {
  const timeouts = databaseTimeouts(options.databaseTimeoutSeconds);
  const webhookConcurrency = options.webhookConcurrency ?? DEFAULT_WEBHOOK_CONCURRENCY;
  // Graphile Worker's own pool: the runners fetch and settle their jobs on it, beside
  // their LISTEN connections and the crontab's. The tasks and the heartbeat run the
  // project's SQL on the postgres.js client, one connection each at most.
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max: concurrency + webhookConcurrency + 2 + 5,
    connectionTimeoutMillis: timeouts.connectSeconds * 1000,
    statement_timeout: timeouts.statementMs,
    idle_in_transaction_session_timeout: timeouts.statementMs,
    application_name: 'fleet-worker',
  });
  // An idle connection that breaks (the database restarts or stops) is dropped by the pool;
  // without a listener its `error` event would end the process.
  pool.on('error', (err) => deps.log.warn('worker database connection lost', { error: err.message }));
  const lost = (err: Error) => deps.log.warn('worker database connection lost', { error: err.message });
  pool.on('connect', (client) => client.on('error', lost));
  const sql = createSql(databaseUrl, {
    max: concurrency + webhookConcurrency + 4,
    applicationName: 'fleet-worker',
    timeoutSeconds: options.databaseTimeoutSeconds,
  });
  const taskDeps: TaskDeps = { ...deps, sql };
  const workerIds = new Set<string>();
  const silence = deps.config.workerSilenceSeconds ?? DEFAULT_WORKER_SILENCE_SECONDS;
  // A silent worker seen by a beat queues the check at once, rather than at the crontab's
  // next minute: a dead host's build fails within the silence and one beat.
  let reaper: Runner | undefined;
  let security: Runner | undefined;
  const reapNow = async () => {
    await reaper
      ?.addJob(REAP_DEAD_BUILDS_TASK, {}, { jobKey: 'reap_dead_builds', maxAttempts: 1 })
      .catch((err) => deps.log.warn('could not queue the dead build check', { error: (err as Error).message }));
  };
  const heartbeat = startHeartbeat(sql, () => [...workerIds], silence, deps.log, reapNow);
  const events: WorkerEvents = new EventEmitter();
  // Jobs are locked by the pool's id (batched fetching) or a worker's: both beat, from the
  // moment they exist (a runner takes a job at once, and a host may die in its first second).
  events.on('pool:create', ({ workerPool }) => {
    workerIds.add(workerPool.id);
    void heartbeat.beat();
  });
  events.on('worker:create', ({ worker }) => {
    workerIds.add(worker.workerId);
    void heartbeat.beat();
  });
  // Four runners on one pool: deliveries, the dead build check (with the stale device
  // sweeps and the judging of rollouts) and the security data have their own slots, so
  // neither a webhook nor the failing of a dead host's build nor a stale device's
  // announcement nor a rollout's next ring waits behind an ISO build of half an hour or a
  // feed's import (a job is only fetched by a runner whose task list names it).
  let runner: Runner;
  let deliveries: Runner;
  try {
    runner = await startRunner(
      pool,
      deps,
      { concurrency, tasks: buildHostTasks(taskDeps), crontab: true },
      options,
      events,
    );
    deliveries = await startRunner(
      pool,
      deps,
      { concurrency: webhookConcurrency, tasks: deliveryTasks(taskDeps), crontab: false },
      options,
      events,
    ).catch(async (err) => {
      await runner.stop();
      throw err;
    });
    reaper = await startRunner(
      pool,
      deps,
      { concurrency: 1, tasks: reaperTasks(taskDeps), crontab: false },
      options,
      events,
    ).catch(async (err) => {
      await Promise.all([runner.stop(), deliveries.stop()]);
      throw err;
    });
    security = await startRunner(
      pool,
      deps,
      { concurrency: 1, tasks: securityTasks(taskDeps), crontab: false },
      options,
      events,
    ).catch(async (err) => {
      await Promise.all([runner.stop(), deliveries.stop(), reaper?.stop()]);
      throw err;
    });
  } catch (err) {
    await heartbeat.stop().catch(() => {});
    await Promise.all([sql.end({ timeout: 2 }).catch(() => {}), pool.end().catch(() => {})]);
    throw err;
  }
  await heartbeat.beat();
  // A worker that died while no other ran: its builds fail one silence after this start
  // rather than at the next crontab minute.
  await runner
    .addJob(
      REAP_DEAD_BUILDS_TASK,
      {},
      {
        runAt: new Date(Date.now() + (silence + 1) * 1000),
        jobKey: 'reap_dead_builds_start',
        maxAttempts: 1,
      },
    )
    .catch((err) => deps.log.warn('could not schedule the dead build check', { error: (err as Error).message }));
  // The security feeds at start, then when the crontab finds them due.
  if (deps.config.vulnFeeds?.debian || deps.config.vulnFeeds?.ubuntu) {
    await runner
      .addJob(
        REFRESH_VULNERABILITY_FEEDS_TASK,
        { force: true },
        { jobKey: 'refresh_vulnerability_feeds_start', maxAttempts: 1 },
      )
      .catch((err) => deps.log.warn('could not queue the security feeds', { error: (err as Error).message }));
  }
  deps.log.info('worker started', { concurrency, webhook_concurrency: webhookConcurrency });
  const stop = runner.stop.bind(runner);
  runner.stop = async () => {
    await Promise.all([stop(), deliveries.stop(), reaper?.stop(), security?.stop()]);
    await heartbeat.stop().catch(() => {});
    await Promise.all([sql.end({ timeout: 2 }), pool.end()]);
  };
  return runner;
}

function startRunner(
  pool: pg.Pool,
  deps: WorkerDeps,
  which: { concurrency: number; tasks: TaskList; crontab: boolean },
  options: WorkerOptions,
  events: WorkerEvents,
): Promise<Runner> {
  return run({
    pgPool: pool,
    events,
    concurrency: which.concurrency,
    noHandleSignals: true,
    pollInterval: options.pollIntervalMs ?? 1000,
    taskList: which.tasks,
    ...(which.crontab ? { crontabFile } : { parsedCronItems: [] }),
    logger: graphileLogger(deps.log),
    preset: {
      worker: {
        ...jobSettlement,
        ...(options.gracefulShutdownAbortTimeoutMs === undefined
          ? {}
          : { gracefulShutdownAbortTimeout: options.gracefulShutdownAbortTimeoutMs }),
      },
    },
  });
}

/**
 * Graphile Worker's messages in our JSON log. Only the message: its metadata carries the
 * job, whose payload may hold sealed WLAN credentials.
 */
function graphileLogger(log: Logger): GraphileLogger {
  return new GraphileLogger((scope) => (level, message) => {
    const fields = {
      component: 'graphile-worker',
      ...(scope.label ? { scope: scope.label } : {}),
      ...(scope.taskIdentifier ? { task: scope.taskIdentifier } : {}),
    };
    if (level === 'error') log.error(message, fields);
    else if (level === 'warning') log.warn(message, fields);
    else if (level === 'info') log.info(message, fields);
    else log.debug(message, fields);
  });
}
