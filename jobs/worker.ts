/**
 * The Graphile Worker runner: the build host's entry (`npm run worker`), also started in
 * process by `npm start`. The queue lives in PostgreSQL only.
 */
import { fileURLToPath } from 'node:url';
import { Logger as WorkerLogger, run, type Runner } from 'graphile-worker';
import pg from 'pg';
import type { Logger } from '../api/log.ts';
import { createTaskList } from './tasks/index.ts';
import type { WorkerDeps } from './worker_deps.ts';

export const crontabFile = fileURLToPath(new URL('./crontab', import.meta.url));

export interface StartedWorker {
  runner: Runner;
  stop(): Promise<void>;
}

export async function startWorker(databaseUrl: string, deps: WorkerDeps, concurrency = 1): Promise<StartedWorker> {
  // Our own pool, so a connection lost during shutdown is logged instead of crashing.
  const pgPool = new pg.Pool({ connectionString: databaseUrl, max: concurrency + 2, application_name: 'fleet-worker' });
  pgPool.on('error', (err) => deps.log.warn('worker database connection lost', { error: err.message }));
  const runner = await run({
    pgPool,
    concurrency,
    noHandleSignals: true,
    pollInterval: 1000,
    logger: workerLogger(deps.log),
    taskList: createTaskList(deps),
    crontabFile,
  });
  deps.log.info('worker started', { concurrency });
  return {
    runner,
    async stop() {
      await runner.stop();
      await pgPool.end();
    },
  };
}

/** Graphile Worker's log lines as our JSON lines. */
function workerLogger(log: Logger): WorkerLogger {
  return new WorkerLogger((scope) => (level, message, meta) => {
    const fields = { scope: scope.label ?? 'worker', job_id: scope.jobId, task: scope.taskIdentifier, ...(meta?.error ? { error: String(meta.error) } : {}) };
    if (level === 'error') log.error(message, fields);
    else if (level === 'warning') log.warn(message, fields);
    else if (level === 'info') log.info(message, fields);
    else log.debug(message, fields);
  });
}
