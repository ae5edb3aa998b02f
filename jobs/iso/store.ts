/**
 * SQL of the build host over the pg client Graphile Worker lends its tasks. Every state
 * change is one guarded statement (`where status = ...`), so a build the sweep failed, or
 * a row deleted meanwhile, is never overwritten by a late task.
 */
import type { PoolClient } from 'pg';

export interface ClaimedBuild {
  organization_id: string;
  activation_code: string | null;
}

/**
 * pending → running. A build already `running` is taken over too: its job is locked by
 * this worker now, so the earlier attempt that left it running is gone. Null when there
 * is nothing to build (row deleted, completed or failed).
 */
export async function claimBuild(db: PoolClient, buildId: string): Promise<ClaimedBuild | null> {
  const { rows } = await db.query<ClaimedBuild>(
    `update iso_builds b
        set status = 'running', started_at = now_ms(), progress = 0
      where b.id = $1 and b.status in ('pending', 'running')
      returning b.organization_id,
                (select a.code from activation_codes a where a.organization_id = b.organization_id) as activation_code`,
    [buildId],
  );
  return rows[0] ?? null;
}

/** Progress only ever grows, and only while running. */
export async function setProgress(db: PoolClient, buildId: string, percent: number): Promise<void> {
  await db.query(`update iso_builds set progress = $2 where id = $1 and status = 'running' and progress < $2`, [
    buildId,
    percent,
  ]);
}

/** running → failed with a readable reason; false when the build is no longer running. */
export async function failBuild(db: PoolClient, buildId: string, error: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `update iso_builds set status = 'failed', finished_at = now_ms(), error = $2
      where id = $1 and status in ('pending', 'running')`,
    [buildId, error.slice(0, 2000)],
  );
  return rowCount === 1;
}

/** running → pending, for a retry after the worker was asked to stop mid-build. */
export async function releaseBuild(db: PoolClient, buildId: string): Promise<void> {
  await db.query(
    `update iso_builds set status = 'pending', started_at = null, progress = 0 where id = $1 and status = 'running'`,
    [buildId],
  );
}

export interface Completion {
  completed: boolean;
  /** Files of the older completed builds whose rows were deleted. */
  replacedFiles: string[];
}

/**
 * running → completed, and the organization's older completed builds (by trigger order)
 * deleted, in one transaction. Completions of one organization are serialized by a lock
 * on its row, so two builds finishing together still leave only the newer one.
 */
export async function completeBuild(
  db: PoolClient,
  input: { buildId: string; organizationId: string; sizeBytes: number; sha256: string; fileName: string },
): Promise<Completion> {
  await db.query('begin');
  try {
    await db.query(`select 1 from organizations where id = $1 for no key update`, [input.organizationId]);
    const { rows } = await db.query<{ created_at: Date }>(
      `update iso_builds
          set status = 'completed', progress = 100, finished_at = now_ms(),
              expires_at = now_ms() + interval '7 days', size_bytes = $2, sha256 = $3, file_name = $4
        where id = $1 and status = 'running'
        returning created_at`,
      [input.buildId, input.sizeBytes, input.sha256, input.fileName],
    );
    if (rows.length === 0) {
      await db.query('rollback');
      return { completed: false, replacedFiles: [] };
    }
    const replaced = await db.query<{ file_name: string }>(
      `delete from iso_builds
        where organization_id = $1 and status = 'completed' and id <> $2
          and (created_at, id) < ($3::timestamptz, $2::uuid)
        returning file_name`,
      [input.organizationId, input.buildId, rows[0]!.created_at],
    );
    await db.query('commit');
    return { completed: true, replacedFiles: replaced.rows.map((r) => r.file_name) };
  } catch (err) {
    await db.query('rollback').catch(() => {});
    throw err;
  }
}
