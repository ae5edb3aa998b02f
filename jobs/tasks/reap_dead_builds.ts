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
import type { PoolClient } from 'pg';
import type { Task } from 'graphile-worker';
import { BUILD_ISO_TASK } from '../../api/iso_builds/job.ts';
import { DEFAULT_WORKER_SILENCE_SECONDS } from '../heartbeat.ts';
import { workDirName } from '../iso/iso_files.ts';
import type { WorkerDeps } from '../worker_deps.ts';

export const REAP_DEAD_BUILDS_TASK = 'reap_dead_builds';
export const DEAD_WORKER_ERROR =
  'the build host stopped during the build (worker killed or host lost); trigger a new build';

export function reapDeadBuildsTask(deps: WorkerDeps): Task {
  return async (_payload, helpers) => {
    const failed = await helpers.withPgClient((db) => reapDeadBuilds(deps, db));
    if (failed.length > 0) deps.log.warn('failed the builds of dead workers', { builds: failed });
  };
}

export async function reapDeadBuilds(deps: WorkerDeps, db: PoolClient): Promise<string[]> {
  const silence = deps.config.workerSilenceSeconds ?? DEFAULT_WORKER_SILENCE_SECONDS;
  const { rows: dead } = await db.query<{ worker_id: string }>(
    `select worker_id from worker_heartbeats where seen_at < now() - make_interval(secs => $1)`,
    [silence],
  );
  const { rows: jobs } = await db.query<{ id: string; key: string; locked_by: string }>(
    `select id, key, locked_by from graphile_worker.jobs j
      where task_identifier = $1 and key is not null
        and (locked_by = any($2::text[])
          or (locked_at < now() - make_interval(secs => $3)
            and not exists (select from worker_heartbeats h where h.worker_id = j.locked_by)))`,
    [BUILD_ISO_TASK, dead.map((r) => r.worker_id), silence],
  );
  if (dead.length === 0 && jobs.length === 0) return [];
  const deadIds = [...new Set([...dead.map((r) => r.worker_id), ...jobs.map((j) => j.locked_by)])];
  const buildIds = jobs.map((j) => j.key.slice(BUILD_ISO_TASK.length + 1));
  // One transaction: nobody sees a failed build whose job is still locked or queued.
  await db.query('begin');
  let failed: Array<{ id: string }>;
  try {
    ({ rows: failed } = await db.query<{ id: string }>(
      `update iso_builds set status = 'failed', finished_at = now_ms(), error = $2
        where id = any($1::uuid[]) and status in ('pending', 'running')
        returning id`,
      [buildIds, DEAD_WORKER_ERROR],
    ));
    await db.query(`select graphile_worker.force_unlock_workers($1::text[])`, [deadIds]);
    await db.query(`select from graphile_worker.complete_jobs($1::bigint[])`, [jobs.map((j) => j.id)]);
    await db.query(`delete from worker_heartbeats where worker_id = any($1::text[])`, [deadIds]);
    await db.query('commit');
  } catch (err) {
    await db.query('rollback').catch(() => {});
    throw err;
  }
  for (const id of buildIds) await rm(join(deps.config.isoDir, workDirName(id)), { recursive: true, force: true });
  return failed.map((r) => r.id);
}
