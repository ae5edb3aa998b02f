/**
 * Worker heartbeats: every Graphile Worker id of this process is written to
 * `worker_heartbeats` at a quarter of the silence after which the reaper declares a
 * worker dead, so a live worker is always several beats away from being reaped.
 */
import { hostname } from 'node:os';
import type pg from 'pg';
import type { Logger } from '../api/log.ts';

export const DEFAULT_WORKER_SILENCE_SECONDS = 120;

export function heartbeatIntervalMs(silenceSeconds: number): number {
  return Math.max(500, Math.min(30_000, (silenceSeconds * 1000) / 4));
}

export function startHeartbeat(pool: pg.Pool, workerIds: () => string[], silenceSeconds: number, log: Logger) {
  let failing = false;
  const beat = async () => {
    const ids = workerIds();
    if (ids.length === 0) return;
    try {
      await pool.query(
        `insert into worker_heartbeats (worker_id, host, pid, seen_at)
         select id, $2, $3, now() from unnest($1::text[]) id
         on conflict (worker_id) do update set seen_at = now()`,
        [ids, hostname(), process.pid],
      );
      if (failing) log.info('worker heartbeat recorded again');
      failing = false;
    } catch (err) {
      // Said once per outage: the database being away is logged elsewhere too.
      if (!failing) log.warn('worker heartbeat failed', { error: (err as Error).message });
      failing = true;
    }
  };
  const first = beat();
  const timer = setInterval(() => void beat(), heartbeatIntervalMs(silenceSeconds));
  timer.unref();
  return {
    first,
    /** After a clean stop the rows go: the workers released their jobs. */
    async stop() {
      clearInterval(timer);
      const ids = workerIds();
      if (ids.length > 0) await pool.query(`delete from worker_heartbeats where worker_id = any($1::text[])`, [ids]);
    },
  };
}
