/** The Graphile Worker task list of the build host: one file per task, named after it. */
import type { TaskList } from 'graphile-worker';
import type { WorkerDeps } from '../worker_deps.ts';

export function createTaskList(_deps: WorkerDeps): TaskList {
  return {};
}
