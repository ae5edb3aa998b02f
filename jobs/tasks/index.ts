/** The Graphile Worker task list of the build host: one file per task, named after it. */
import type { TaskList } from 'graphile-worker';
import { BUILD_ISO_TASK } from '../../api/iso_builds/job.ts';
import type { WorkerDeps } from '../worker_deps.ts';
import { buildIsoTask } from './build_iso.ts';
import { REAP_DEAD_BUILDS_TASK, reapDeadBuildsTask } from './reap_dead_builds.ts';
import { sweepIsoBuildsTask } from './sweep_iso_builds.ts';

export const SWEEP_ISO_BUILDS_TASK = 'sweep_iso_builds';

export function createTaskList(deps: WorkerDeps): TaskList {
  return {
    [BUILD_ISO_TASK]: buildIsoTask(deps),
    [SWEEP_ISO_BUILDS_TASK]: sweepIsoBuildsTask(deps),
    [REAP_DEAD_BUILDS_TASK]: reapDeadBuildsTask(deps),
  };
}
