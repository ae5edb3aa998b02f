/**
 * Task `judge_running_rollouts`, every minute from the crontab: queues the judge of every
 * running rollout at once. Each judging queues the next itself, so this only matters when
 * that chain broke: a job lost with its worker, a database restored without its queue.
 */
import type { Task } from 'graphile-worker';
import type { Db } from '../../api/db/client.ts';
import { scheduleJudge } from '../../api/rollouts/schedule.ts';
import type { TaskDeps } from '../worker_deps.ts';

export const JUDGE_RUNNING_ROLLOUTS_TASK = 'judge_running_rollouts';

export function judgeRunningRolloutsTask(deps: TaskDeps): Task {
  return async () => {
    await judgeRunningRollouts(deps.sql);
  };
}

/** Queues the judge of each running rollout now; returns their ids. */
export async function judgeRunningRollouts(db: Db): Promise<string[]> {
  const running = await db<{ id: string }[]>`select id from rollouts where status = 'running' order by id`;
  for (const { id } of running) await scheduleJudge(db, id, { kind: 'next', inSeconds: 0 });
  return running.map((r) => r.id);
}
