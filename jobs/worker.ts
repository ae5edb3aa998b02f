/**
 * The Graphile Worker runner: the build host's entry (`npm run worker`), also started in
 * process by `npm start`. The queue lives in PostgreSQL only.
 */
import { fileURLToPath } from 'node:url';
import { Logger as GraphileLogger, run, type Runner } from 'graphile-worker';
import type { Logger } from '../api/log.ts';
import { createTaskList } from './tasks/index.ts';
import type { WorkerDeps } from './worker_deps.ts';

export const crontabFile = fileURLToPath(new URL('./crontab', import.meta.url));

export interface WorkerOptions {
  /** How long a graceful stop lets running jobs finish before aborting them; default 5 s. */
  gracefulShutdownAbortTimeoutMs?: number;
  /** How often to look for jobs scheduled in the future; default 1 s (new jobs arrive by NOTIFY). */
  pollIntervalMs?: number;
}

export async function startWorker(
  databaseUrl: string,
  deps: WorkerDeps,
  concurrency = 1,
  options: WorkerOptions = {},
): Promise<Runner> {
  const runner = await run({
    connectionString: databaseUrl,
    concurrency,
    noHandleSignals: true,
    pollInterval: options.pollIntervalMs ?? 1000,
    taskList: createTaskList(deps),
    crontabFile,
    logger: graphileLogger(deps.log),
    preset: {
      worker: {
        // Batched (delay 0) completion and failure are flushed before stop() resolves;
        // unbatched, 0.17 fires them without waiting and a job that ends during a graceful
        // stop stays locked for hours (with its payload) instead of being released.
        completeJobBatchDelay: 0,
        failJobBatchDelay: 0,
        ...(options.gracefulShutdownAbortTimeoutMs === undefined
          ? {}
          : { gracefulShutdownAbortTimeout: options.gracefulShutdownAbortTimeoutMs }),
      },
    },
  });
  deps.log.info('worker started', { concurrency });
  return runner;
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
