/**
 * Task `reap_dead_builds`, every minute from the crontab and once shortly after a worker
 * starts: a build whose job is locked by a worker silent for longer than the silence
 * (WORKER_SILENCE_SECONDS) lost its build host. The build fails, the dead workers' locks
 * are released and the job is deleted (and with it the sealed WLAN credentials), and the
 * build's work folder (plaintext WLAN profile, partial image) is removed. Live workers
 * beat far more often than the silence, so builds of other hosts are never touched. A job
 * locked for longer than the silence by a worker without any heartbeat is a dead worker's
 * too: one that died before its first beat was recorded.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Task } from 'graphile-worker';
import { type Db, transaction } from '../../api/db/client.ts';
import { BUILD_ISO_TASK } from '../../api/iso_builds/job.ts';
import { FAILURE_REASONS, failBuilds } from '../../api/iso_builds/transitions.ts';
import { DEFAULT_WORKER_SILENCE_SECONDS } from '../heartbeat.ts';
import { workDirName } from '../iso/iso_files.ts';
import type { TaskDeps, WorkerDeps } from '../worker_deps.ts';

export const REAP_DEAD_BUILDS_TASK = 'reap_dead_builds';

export function reapDeadBuildsTask(deps: TaskDeps): Task {
  return async () => {
    const failed = await reapDeadBuilds(deps, deps.sql);
    if (failed.length > 0) deps.log.warn('failed the builds of dead workers', { builds: failed });
  };
}

export async function reapDeadBuilds(deps: WorkerDeps, db: Db): Promise<string[]> {
  const silence = deps.config.workerSilenceSeconds ?? DEFAULT_WORKER_SILENCE_SECONDS;
  const dead = await db<{ worker_id: string }[]>`
    select worker_id from worker_heartbeats where seen_at < now() - make_interval(secs => ${silence})`;
  const jobs = await db<{ id: string; key: string; locked_by: string }[]>`
    select id, key, locked_by from graphile_worker.jobs j
     where task_identifier = ${BUILD_ISO_TASK} and key is not null
       and (locked_by = any(${dead.map((r) => r.worker_id)}::text[])
         or (locked_at < now() - make_interval(secs => ${silence})
           and not exists (select from worker_heartbeats h where h.worker_id = j.locked_by)))`;
  if (dead.length === 0 && jobs.length === 0) return [];
  const deadIds = [...new Set([...dead.map((r) => r.worker_id), ...jobs.map((j) => j.locked_by)])];
  const buildIds = jobs.map((j) => j.key.slice(BUILD_ISO_TASK.length + 1));
  // One transaction: nobody sees a failed build whose job is still locked or queued.
  const failed = await transaction(db, async (tx) => {
    const ids = await failBuilds(tx, buildIds, FAILURE_REASONS.deadWorker);
    await tx`select graphile_worker.force_unlock_workers(${deadIds}::text[])`;
    await tx`select from graphile_worker.complete_jobs(${jobs.map((j) => j.id)}::bigint[])`;
    await tx`delete from worker_heartbeats where worker_id = any(${deadIds}::text[])`;
    return ids;
  });
  for (const id of buildIds) await rm(join(deps.config.isoDir, workDirName(id)), { recursive: true, force: true });
  return failed;
}
