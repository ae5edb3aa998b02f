/**
 * Task `expire_device_actions`, every minute from the crontab: device actions not started
 * by their `expires_at` are written `expired` (webhook `action.finished` by trigger), and
 * the judge of each rollout that queued one is asked to look soon. An overdue action
 * already reads expired and is refused at its start; this writes it so for the webhook
 * and the rollouts' figures.
 */
import type { Task } from 'graphile-worker';
import { expireDueActions } from '../../api/actions/service.ts';
import { transaction, type Db } from '../../api/db/client.ts';
import { scheduleJudge } from '../../api/rollouts/schedule.ts';
import type { TaskDeps } from '../worker_deps.ts';

export const EXPIRE_DEVICE_ACTIONS_TASK = 'expire_device_actions';

/** Batches of one transaction each, at most this many per run (the rest wait a minute). */
const BATCH = 1000;
const MAX_BATCHES = 20;

export function expireDeviceActionsTask(deps: TaskDeps): Task {
  return async () => {
    const expired = await expireDeviceActions(deps.sql);
    if (expired > 0) deps.log.info('device actions expired', { actions: expired });
  };
}

/** Expires the overdue actions, each batch with its rollouts' judging; returns how many. */
export async function expireDeviceActions(db: Db, batch = BATCH): Promise<number> {
  let total = 0;
  for (let i = 0; i < MAX_BATCHES; i++) {
    const expired = await transaction(db, async (tx) => {
      const rows = await expireDueActions(tx, batch);
      const rollouts = [...new Set(rows.flatMap((r) => (r.rollout_id === null ? [] : [r.rollout_id])))];
      for (const id of rollouts) await scheduleJudge(tx, id, { kind: 'soon' });
      return rows.length;
    });
    total += expired;
    if (expired < batch) break;
  }
  return total;
}
