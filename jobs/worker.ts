/**
 * The Graphile Worker runner: the build host's entry (`npm run worker`), also started in
 * process by `npm start`. The queue lives in PostgreSQL only.
 */
import { fileURLToPath } from 'node:url';
import { run, type Runner } from 'graphile-worker';
import { createTaskList } from './tasks/index.ts';
import type { WorkerDeps } from './worker_deps.ts';

export const crontabFile = fileURLToPath(new URL('./crontab', import.meta.url));

export async function startWorker(databaseUrl: string, deps: WorkerDeps, concurrency = 1): Promise<Runner> {
  const runner = await run({
    connectionString: databaseUrl,
    concurrency,
    noHandleSignals: true,
    pollInterval: 1000,
    taskList: createTaskList(deps),
    crontabFile,
  });
  deps.log.info('worker started', { concurrency });
  return runner;
}

