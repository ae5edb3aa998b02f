/**
 * The iso_builds state machine after a build was queued (repo.ts queues it as `pending`):
 * pending → running → completed | failed, running → pending for a retry, and the sweep's
 * deletions. The build task, the sweep and the reaper all change a build's state here.
 * Every change is one guarded statement (`where status ...`), so a build the sweep failed,
 * or a row deleted meanwhile, is never overwritten by a late task.
 */
import type postgres from 'postgres';
import { type Db, transaction } from '../db/client.ts';
import { BUILD_ISO_TASK } from './job.ts';

/** Why a build failed when its own task could not say: the sweep's and the reaper's reasons. */
export const FAILURE_REASONS = {
  deadWorker: 'the build host stopped during the build (worker killed or host lost); trigger a new build',
  stuck: 'the build host stopped while building (worker killed or host lost); trigger a new build',
  jobExhausted: 'the build could not run: its job failed on every attempt (see the worker log)',
  jobLost: 'the build job was lost from the queue; trigger a new build',
} as const;

/** The longest `error` a failed build keeps. */
const MAX_ERROR_LENGTH = 2000;

export interface ClaimedBuild {
  organization_id: string;
  activation_code: string | null;
  template_id: string | null;
  enrollment_session_id: string | null;
}

/**
 * pending → running. A build already `running` is taken over too: its job is locked by
 * this worker now, so the earlier attempt that left it running is gone. Null when there
 * is nothing to build (row deleted, completed or failed).
 */
export async function claimBuild(db: Db, buildId: string): Promise<ClaimedBuild | null> {
  const [row] = await db<ClaimedBuild[]>`
    update iso_builds b
       set status = 'running', started_at = now_ms(), progress = 0
     where b.id = ${buildId} and b.status in ('pending', 'running')
     returning b.organization_id, b.template_id, b.enrollment_session_id,
               (select a.code from activation_codes a where a.organization_id = b.organization_id) as activation_code`;
  return row ?? null;
}

/** Progress only ever grows, and only while running. */
export async function setProgress(db: Db, buildId: string, percent: number): Promise<void> {
  await db`
    update iso_builds set progress = ${percent}
     where id = ${buildId} and status = 'running' and progress < ${percent}`;
}

/** running → pending, for a retry after the worker was asked to stop mid-build. */
export async function releaseBuild(db: Db, buildId: string): Promise<void> {
  await db`
    update iso_builds set status = 'pending', started_at = null, progress = 0
     where id = ${buildId} and status = 'running'`;
}

export interface Completion {
  completed: boolean;
  /** Files of the older completed builds whose rows were deleted. */
  replacedFiles: string[];
}

/**
 * running → completed, and every other completed build of the organization deleted, in
 * one transaction: whatever order builds were triggered or finish in, exactly one
 * completed build remains, the one that completed last. Completions of one organization
 * are serialized by a lock on its row, so two builds finishing together cannot both keep
 * the other.
 */
export function completeBuild(
  db: Db,
  input: {
    buildId: string;
    organizationId: string;
    sizeBytes: number;
    sha256: string;
    fileName: string;
    /** Built from the development base image: not bootable. */
    developmentBase?: boolean;
  },
): Promise<Completion> {
  return transaction(db, async (tx) => {
    await tx`select 1 from organizations where id = ${input.organizationId} for no key update`;
    const completed = await tx`
      update iso_builds
         set status = 'completed', progress = 100, finished_at = now_ms(),
             expires_at = now_ms() + interval '7 days', size_bytes = ${input.sizeBytes},
             sha256 = ${input.sha256}, file_name = ${input.fileName},
             development_base = ${input.developmentBase ?? false}
       where id = ${input.buildId} and status = 'running'`;
    // Nothing changed: the transaction ends with nothing to keep.
    if (completed.count !== 1) return { completed: false, replacedFiles: [] };
    const replaced = await tx<{ file_name: string }[]>`
      delete from iso_builds
       where organization_id = ${input.organizationId} and status = 'completed' and id <> ${input.buildId}
       returning file_name`;
    return { completed: true, replacedFiles: replaced.map((r) => r.file_name) };
  });
}

/**
 * pending | running → failed, the one statement that fails builds: `which` picks them
 * among the builds not yet finished. Returns the ids of the builds it failed.
 */
async function markFailed(db: Db, which: postgres.PendingQuery<postgres.Row[]>, error: string): Promise<string[]> {
  const rows = await db<{ id: string }[]>`
    update iso_builds b
       set status = 'failed', finished_at = now_ms(), error = ${error.slice(0, MAX_ERROR_LENGTH)}
     where b.status in ('pending', 'running') and ${which}
     returning b.id`;
  return rows.map((r) => r.id);
}

/** The build task's failure, with a readable reason; false when the build had finished already. */
export async function failBuild(db: Db, buildId: string, error: string): Promise<boolean> {
  return (await markFailed(db, db`b.id = ${buildId}`, error)).length === 1;
}

/** Builds whose job is gone for good (a dead worker's, one that exhausted its attempts). */
export function failBuilds(db: Db, buildIds: string[], error: string): Promise<string[]> {
  return markFailed(db, db`b.id = any(${buildIds}::uuid[])`, error);
}

/**
 * Builds running for longer than any build may (the script is stopped at its timeout):
 * their worker was killed or its host went away.
 */
export function failStuckBuilds(db: Db, stuckAfterMs: number): Promise<string[]> {
  return markFailed(
    db,
    db`b.status = 'running' and b.started_at < now() - make_interval(secs => ${stuckAfterMs / 1000})`,
    FAILURE_REASONS.stuck,
  );
}

/** Pending builds without a job: row and job are created together, so the job was lost. */
export async function failBuildsWithoutJob(db: Db): Promise<number> {
  const failed = await markFailed(
    db,
    db`b.status = 'pending'
       and not exists (select 1 from graphile_worker.jobs j where j.key = ${BUILD_ISO_TASK}::text || ':' || b.id::text)`,
    FAILURE_REASONS.jobLost,
  );
  return failed.length;
}

/** completed → gone once past `expires_at`; returns the files the rows owned. */
export async function deleteExpiredBuilds(db: Db): Promise<string[]> {
  const rows = await db<{ file_name: string }[]>`
    delete from iso_builds where status = 'completed' and expires_at <= now() returning file_name`;
  return rows.map((r) => r.file_name);
}

/** failed → gone a week after it failed: failed builds own no file, their rows say why for a while. */
export async function deleteOldFailedBuilds(db: Db): Promise<number> {
  const deleted = await db`
    delete from iso_builds where status = 'failed' and finished_at < now() - interval '7 days'`;
  return deleted.count;
}
