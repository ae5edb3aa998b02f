/**
 * Task `sweep_iso_builds`, hourly from the crontab: deletes builds past `expires_at`
 * (file and row) and failed builds a week after they failed, fails builds whose worker is
 * gone (stuck in `running`, a job that exhausted its attempts, a pending build without
 * a job) and deletes their jobs, and removes files in the ISO folder that no build owns.
 * Every step is idempotent, so overlapping or repeated sweeps are harmless.
 */
import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { PoolClient } from 'pg';
import type { Task } from 'graphile-worker';
import { BUILD_ISO_TASK } from '../../api/iso_builds/job.ts';
import { buildIdOf, DEV_BASE_NAME, isDevBaseTemporary } from '../iso/iso_files.ts';
import { stuckAfterMs } from '../iso/worker_config.ts';
import type { WorkerDeps } from '../worker_deps.ts';

export interface SweepResult {
  expired: number;
  failedDeleted: number;
  stuckFailed: number;
  deadJobsFailed: number;
  lostFailed: number;
  orphansRemoved: number;
}

/** Temporaries of the development base image older than this belong to a dead build. */
const DEV_BASE_TEMP_MAX_AGE_MS = 60 * 60_000;

export function sweepIsoBuildsTask(deps: WorkerDeps): Task {
  return async (_payload, helpers) => {
    const result = await helpers.withPgClient((db) => sweepIsoBuilds(deps, db));
    deps.log.info('iso sweep done', { ...result });
  };
}

export async function sweepIsoBuilds(deps: WorkerDeps, db: PoolClient): Promise<SweepResult> {
  const deadJobsFailed = await failBuildsOfDeadJobs(db);
  const stuckFailed = await failStuckBuilds(db, stuckAfterMs(deps.config));
  const lostFailed = await failPendingWithoutJob(db);

  const expired = await db.query<{ file_name: string }>(
    `delete from iso_builds where status = 'completed' and expires_at <= now() returning file_name`,
  );
  for (const row of expired.rows) await rm(join(deps.config.isoDir, row.file_name), { force: true });
  // Failed builds own no file; their rows are kept a week so a portal can show why.
  const failedDeleted = await db.query(
    `delete from iso_builds where status = 'failed' and finished_at < now() - interval '7 days'`,
  );

  const orphansRemoved = await removeOrphans(deps, db);
  return {
    expired: expired.rowCount ?? 0,
    failedDeleted: failedDeleted.rowCount ?? 0,
    stuckFailed,
    deadJobsFailed,
    lostFailed,
    orphansRemoved,
  };
}

/**
 * A build_iso job that exhausted its attempts (the task could not even record a failure,
 * e.g. the database was away) would keep the sealed WLAN credentials: delete it, and fail
 * its build.
 */
async function failBuildsOfDeadJobs(db: PoolClient): Promise<number> {
  const { rows } = await db.query<{ key: string | null }>(
    `select key from graphile_worker.complete_jobs(array(
       select id from graphile_worker.jobs
        where task_identifier = $1 and attempts >= max_attempts and locked_at is null))`,
    [BUILD_ISO_TASK],
  );
  const ids = rows.map((r) => r.key?.split(':')[1]).filter((id): id is string => !!id);
  if (ids.length === 0) return 0;
  const failed = await db.query(
    `update iso_builds set status = 'failed', finished_at = now_ms(),
            error = 'the build could not run: its job failed on every attempt (see the worker log)'
      where id = any($1::uuid[]) and status in ('pending', 'running')`,
    [ids],
  );
  return failed.rowCount ?? 0;
}

/**
 * A build running far longer than any build may (the script is stopped at its timeout)
 * lost its worker: killed with SIGKILL, or the host went away. Fail it, and delete its job,
 * which the dead worker still locks, so the sealed credentials go now rather than when
 * Graphile Worker reclaims stale locks hours later.
 */
async function failStuckBuilds(db: PoolClient, stuckAfter: number): Promise<number> {
  const { rows } = await db.query<{ id: string }>(
    `update iso_builds set status = 'failed', finished_at = now_ms(),
            error = 'the build host stopped while building (worker killed or host lost); trigger a new build'
      where status = 'running' and started_at < now() - make_interval(secs => $1)
      returning id`,
    [stuckAfter / 1000],
  );
  if (rows.length === 0) return 0;
  const keys = rows.map((r) => `${BUILD_ISO_TASK}:${r.id}`);
  // Only locks as old as the build itself: those workers are certainly dead.
  await db.query(
    `select graphile_worker.force_unlock_workers(array(
       select distinct locked_by from graphile_worker.jobs
        where key = any($1::text[]) and locked_by is not null and locked_at < now() - make_interval(secs => $2)))`,
    [keys, stuckAfter / 1000],
  );
  await db.query(
    `select from graphile_worker.complete_jobs(array(
       select id from graphile_worker.jobs where key = any($1::text[]) and locked_at is null))`,
    [keys],
  );
  return rows.length;
}

/** Row and job are created together, and the job ends only after the build does. */
async function failPendingWithoutJob(db: PoolClient): Promise<number> {
  const { rowCount } = await db.query(
    `update iso_builds b set status = 'failed', finished_at = now_ms(),
            error = 'the build job was lost from the queue; trigger a new build'
      where b.status = 'pending'
        and not exists (select 1 from graphile_worker.jobs j where j.key = $1 || ':' || b.id::text)`,
    [BUILD_ISO_TASK],
  );
  return rowCount ?? 0;
}

/**
 * Files and work folders no build owns. The folder is listed before the rows are read,
 * so an entry that appears meanwhile is simply not looked at; a build's files stay while
 * it is pending or running, and a completed build keeps exactly its file_name.
 */
async function removeOrphans(deps: WorkerDeps, db: PoolClient): Promise<number> {
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
    else if (name !== DEV_BASE_NAME && isDevBaseTemporary(name)) {
      const info = await stat(join(dir, name)).catch(() => null);
      if (info && Date.now() - info.mtimeMs > DEV_BASE_TEMP_MAX_AGE_MS) doomed.push(name);
    }
    // Anything else is not ours to delete.
  }
  if (byId.size > 0) {
    const { rows } = await db.query<{ id: string; status: string; file_name: string | null }>(
      `select id, status, file_name from iso_builds where id = any($1::uuid[])`,
      [[...byId.keys()]],
    );
    const builds = new Map(rows.map((r) => [r.id, r]));
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
