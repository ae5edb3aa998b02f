/**
 * Task `sweep_iso_builds`, hourly from the crontab: deletes builds past `expires_at`
 * (file and row) and failed builds a week after they failed, fails builds whose worker is
 * gone (stuck in `running`, a job that exhausted its attempts, a pending build without
 * a job) and deletes their jobs, and removes files in the ISO folder that no build owns.
 * Every step is idempotent, so overlapping or repeated sweeps are harmless.
 */
import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Task } from 'graphile-worker';
import type { Db } from '../../api/db/client.ts';
import { BUILD_ISO_TASK, buildIsoJobKey } from '../../api/iso_builds/job.ts';
import { buildFiles } from '../../api/iso_builds/repo.ts';
import {
  deleteExpiredBuilds,
  deleteOldFailedBuilds,
  FAILURE_REASONS,
  failBuilds,
  failBuildsWithoutJob,
  failStuckBuilds,
} from '../../api/iso_builds/transitions.ts';
import { buildIdOf, isDevBaseTemporary } from '../iso/iso_files.ts';
import { stuckAfterMs } from '../iso/worker_config.ts';
import type { TaskDeps, WorkerDeps } from '../worker_deps.ts';

interface SweepResult {
  expired: number;
  failedDeleted: number;
  stuckFailed: number;
  deadJobsFailed: number;
  lostFailed: number;
  orphansRemoved: number;
}

/** Temporaries of the development base image older than this belong to a dead build. */
const DEV_BASE_TEMP_MAX_AGE_MS = 60 * 60_000;

export function sweepIsoBuildsTask(deps: TaskDeps): Task {
  return async () => {
    const result = await sweepIsoBuilds(deps, deps.sql);
    deps.log.info('iso sweep done', { ...result });
  };
}

async function sweepIsoBuilds(deps: WorkerDeps, db: Db): Promise<SweepResult> {
  const deadJobsFailed = await failBuildsOfDeadJobs(db);
  const stuckFailed = await failStuckBuildsAndJobs(db, stuckAfterMs(deps.config));
  const lostFailed = await failBuildsWithoutJob(db);

  const expired = await deleteExpiredBuilds(db);
  for (const file of expired) await rm(join(deps.config.isoDir, file), { force: true });
  const failedDeleted = await deleteOldFailedBuilds(db);

  const orphansRemoved = await removeOrphans(deps, db);
  return { expired: expired.length, failedDeleted, stuckFailed, deadJobsFailed, lostFailed, orphansRemoved };
}

/**
 * A build_iso job that exhausted its attempts (the task could not even record a failure,
 * e.g. the database was away) would keep the sealed WLAN credentials: delete it, and fail
 * its build.
 */
async function failBuildsOfDeadJobs(db: Db): Promise<number> {
  const rows = await db<{ key: string | null }[]>`
    select key from graphile_worker.complete_jobs(array(
      select id from graphile_worker.jobs
       where task_identifier = ${BUILD_ISO_TASK} and attempts >= max_attempts and locked_at is null))`;
  const ids = rows.map((r) => r.key?.split(':')[1]).filter((id): id is string => !!id);
  if (ids.length === 0) return 0;
  return (await failBuilds(db, ids, FAILURE_REASONS.jobExhausted)).length;
}

/**
 * A build running far longer than any build may lost its worker: fail it, and delete its
 * job, which the dead worker still locks, so the sealed credentials go now rather than
 * when Graphile Worker reclaims stale locks hours later.
 */
async function failStuckBuildsAndJobs(db: Db, stuckAfter: number): Promise<number> {
  const failed = await failStuckBuilds(db, stuckAfter);
  if (failed.length === 0) return 0;
  const keys = failed.map(buildIsoJobKey);
  // Only locks as old as the build itself: those workers are certainly dead.
  await db`
    select graphile_worker.force_unlock_workers(array(
      select distinct locked_by from graphile_worker.jobs
       where key = any(${keys}::text[]) and locked_by is not null
         and locked_at < now() - make_interval(secs => ${stuckAfter / 1000})))`;
  await db`
    select from graphile_worker.complete_jobs(array(
      select id from graphile_worker.jobs where key = any(${keys}::text[]) and locked_at is null))`;
  return failed.length;
}

/**
 * Files and work folders no build owns. The folder is listed before the rows are read,
 * so an entry that appears meanwhile is simply not looked at; a build's files stay while
 * it is pending or running, and a completed build keeps exactly its file_name.
 */
async function removeOrphans(deps: WorkerDeps, db: Db): Promise<number> {
  const dir = deps.config.isoDir;
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw err;
  }
  const byId = new Map<string, string[]>();
  const doomed: string[] = [];
  for (const name of names) {
    const id = buildIdOf(name);
    if (id) byId.set(id, [...(byId.get(id) ?? []), name]);
    else if (isDevBaseTemporary(name)) {
      const info = await stat(join(dir, name)).catch(() => null);
      if (info && Date.now() - info.mtimeMs > DEV_BASE_TEMP_MAX_AGE_MS) doomed.push(name);
    }
    // Anything else is not ours to delete.
  }
  if (byId.size > 0) {
    const builds = new Map((await buildFiles(db, [...byId.keys()])).map((r) => [r.id, r]));
    for (const [id, entries] of byId) {
      const build = builds.get(id);
      for (const name of entries) {
        const live = build && (build.status === 'pending' || build.status === 'running');
        const owned = build?.status === 'completed' && build.file_name === name;
        if (!live && !owned) doomed.push(name);
      }
    }
  }
  for (const name of doomed) {
    await rm(join(dir, name), { recursive: true, force: true });
    deps.log.info('iso sweep removed an orphan', { name });
  }
  return doomed.length;
}
