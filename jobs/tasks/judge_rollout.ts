/**
 * Task `judge_rollout`: one look at a running rollout (api/rollouts/judge.ts), queued by
 * its creation and resume, promptly after reports from its open ring, by the judge itself
 * while the rollout runs, and every minute by `judge_running_rollouts`. Short, so it runs
 * beside the dead build check and never waits behind an ISO build.
 */
import type { Task } from 'graphile-worker';
import { z } from 'zod';
import { DEFAULT_AGENT_POLL_INTERVAL_SECONDS } from '../../api/config.ts';
import { judgeRollout } from '../../api/rollouts/judge.ts';
import type { TaskDeps } from '../worker_deps.ts';

const Payload = z.object({ rollout_id: z.uuid() });

export function judgeRolloutTask(deps: TaskDeps): Task {
  return async (rawPayload, helpers) => {
    const payload = Payload.safeParse(rawPayload);
    if (!payload.success) {
      deps.log.error('judge_rollout: payload not understood, job dropped', { job_id: helpers.job.id });
      return;
    }
    const rolloutId = payload.data.rollout_id;
    const outcome = await judgeRollout(deps.sql, rolloutId, {
      pollIntervalSeconds: deps.config.agentPollIntervalSeconds ?? DEFAULT_AGENT_POLL_INTERVAL_SECONDS,
      requestId: `job:${helpers.job.id}`,
    });
    if (outcome !== 'waiting' && outcome !== 'not_running')
      deps.log.info('rollout judged', { rollout_id: rolloutId, outcome });
  };
}
