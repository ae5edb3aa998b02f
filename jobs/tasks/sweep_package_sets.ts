/**
 * Task `sweep_package_sets`, hourly from the crontab: the package sets no device's
 * inventory refers to any more (every device moved on to another package list, or was
 * deleted) go, with their packages and matches. It holds the matching lock, so a set is
 * never deleted while it is being matched; the entry lists only those sets used go at the
 * next match.
 */
import type { Task } from 'graphile-worker';
import type { Sql } from '../../api/db/client.ts';
import { deleteUnusedPackageSets } from '../../api/inventory/repo.ts';
import { withMatchingLock } from '../../api/vulnerabilities/matching.ts';
import type { TaskDeps } from '../worker_deps.ts';

export const SWEEP_PACKAGE_SETS_TASK = 'sweep_package_sets';

export function sweepPackageSetsTask(deps: TaskDeps): Task {
  return async () => {
    const deleted = await sweepPackageSets(deps.sql);
    if (deleted > 0) deps.log.info('unused package sets deleted', { sets: deleted });
  };
}

/** Deletes the unused package sets; returns how many. */
export async function sweepPackageSets(sql: Sql): Promise<number> {
  return withMatchingLock(sql, () => deleteUnusedPackageSets(sql));
}
