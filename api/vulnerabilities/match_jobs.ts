/**
 * The job `vulnerability_match`, queued by an inventory upload whose (package set, release)
 * changed: it matches every pair of the organization not yet matched at its feed's
 * version, and recounts the organization. So one waiting job per organization stands for
 * a wave of uploads (a job key per organization); one queued while it runs is a new job.
 */
import type { Db } from '../db/client.ts';

export const VULNERABILITY_MATCH_TASK = 'vulnerability_match';

/** Queues the organization's match, in the caller's transaction; a job already waiting stays the one job. */
export async function queueVulnerabilityMatch(db: Db, organizationId: string): Promise<void> {
  await db`
    select from graphile_worker.add_job(
      ${VULNERABILITY_MATCH_TASK},
      json_build_object('organization_id', ${organizationId}::uuid),
      max_attempts => 5,
      job_key => ${`${VULNERABILITY_MATCH_TASK}:${organizationId}`})`;
}
