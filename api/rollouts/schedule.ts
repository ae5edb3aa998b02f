/**
 * Queues the judge of a rollout (task `judge_rollout`), in the caller's transaction. Two
 * job keys per rollout, so neither kind of call delays the other:
 * - `soon` (a creation, a resume, reports from an open ring): within a second;
 *   `preserve_run_at` keeps the one already queued, so a burst of reports makes one
 *   prompt judging, not one per report, and a steady stream cannot postpone it.
 * - `next` (the judge itself while the rollout runs): the next look, at most
 *   `JUDGE_INTERVAL_SECONDS` away (sooner when a soak ends sooner); `replace` moves it.
 * The judge locks the rollout's row, so two runs at once judge one after the other.
 */
import type { Db } from '../db/client.ts';

export const JUDGE_ROLLOUT_TASK = 'judge_rollout';

/** The longest a running rollout goes unjudged. */
export const JUDGE_INTERVAL_SECONDS = 30;

export function judgeJobKey(rolloutId: string, kind: 'soon' | 'next'): string {
  return `judge_rollout:${rolloutId}:${kind}`;
}

/** Queues the rollout's judging: `soon` (one second), or `next` in `inSeconds`. */
export async function scheduleJudge(
  db: Db,
  rolloutId: string,
  when: { kind: 'soon' } | { kind: 'next'; inSeconds: number },
): Promise<void> {
  const inSeconds = when.kind === 'soon' ? 1 : Math.min(when.inSeconds, JUDGE_INTERVAL_SECONDS);
  await db`
    select from graphile_worker.add_job(
      ${JUDGE_ROLLOUT_TASK},
      json_build_object('rollout_id', ${rolloutId}::uuid),
      run_at => now() + make_interval(secs => ${inSeconds}::double precision),
      max_attempts => 5,
      job_key => ${judgeJobKey(rolloutId, when.kind)},
      job_key_mode => ${when.kind === 'soon' ? 'preserve_run_at' : 'replace'})`;
}

/**
 * Queues `soon` for each of `rolloutIds` that is running and changes one of `merkmale`, in
 * one statement: an agent's report of those Merkmale may move its ring's figures.
 */
export async function scheduleJudgeOfReported(db: Db, rolloutIds: string[], merkmale: string[]): Promise<void> {
  await db`
    select graphile_worker.add_job(
             ${JUDGE_ROLLOUT_TASK},
             json_build_object('rollout_id', r.id),
             run_at => now() + interval '1 second',
             max_attempts => 5,
             job_key => ${JUDGE_ROLLOUT_TASK} || ':' || r.id || ':soon',
             job_key_mode => 'preserve_run_at') is not null
    from rollouts r
    where r.id = any(${rolloutIds}::uuid[]) and r.status = 'running' and r.merkmal = any(${merkmale}::text[])`;
}
