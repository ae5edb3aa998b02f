/**
 * Task `device_bulk`: one chunk of a bulk action on devices (api/device_bulk/jobs.ts), which
 * queues the next chunk itself. Each run is short (one chunk), so it runs beside the dead
 * build check and the rollout judge, never behind an ISO build, and holds neither long.
 */
import type { Task } from 'graphile-worker';
import { z } from 'zod';
import { DEFAULT_AGENT_POLL_INTERVAL_SECONDS } from '../../api/config.ts';
import { failBulkJob, runBulkChunk } from '../../api/device_bulk/jobs.ts';
import type { TaskDeps } from '../worker_deps.ts';

const Payload = z.object({ bulk_job_id: z.uuid() });

export function deviceBulkTask(deps: TaskDeps): Task {
  return async (rawPayload, helpers) => {
    const payload = Payload.safeParse(rawPayload);
    if (!payload.success) {
      deps.log.error('device_bulk: payload not understood, job dropped', { job_id: helpers.job.id });
      return;
    }
    const id = payload.data.bulk_job_id;
    try {
      const finished = await runBulkChunk(
        deps.sql,
        id,
        deps.config.agentPollIntervalSeconds ?? DEFAULT_AGENT_POLL_INTERVAL_SECONDS,
      );
      if (finished) deps.log.info('bulk action finished', { bulk_job_id: id });
    } catch (err) {
      // Retried by Graphile Worker (the chunk was rolled back whole); after the last attempt the job ends as failed.
      if (helpers.job.attempts >= helpers.job.max_attempts) {
        await failBulkJob(deps.sql, id, `a chunk failed: ${(err as Error).message}`);
        deps.log.error('bulk action failed', { bulk_job_id: id, error: (err as Error).message });
        return;
      }
      throw err;
    }
  };
}
