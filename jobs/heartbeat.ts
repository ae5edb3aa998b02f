/**
 * Worker heartbeats: every Graphile Worker id of this process is written to
 * `worker_heartbeats` at a quarter of the silence after which the reaper declares a
 * worker dead, so a live worker is always several beats away from being reaped.
 */
import { hostname } from 'node:os';
import type { Sql } from '../api/db/client.ts';
import type { Logger } from '../api/log.ts';

export const DEFAULT_WORKER_SILENCE_SECONDS = 120;

function heartbeatIntervalMs(silenceSeconds: number): number {
  return Math.max(500, Math.min(30_000, (silenceSeconds * 1000) / 4));
}

/**
 * Beats for the given worker ids; `onSilentWorker` is called after a beat that saw another
 * worker silent for longer than the silence (the dead build check then runs at once).
 */
export function startHeartbeat(
  sql: Sql,
  workerIds: () => string[],
  silenceSeconds: number,
  log: Logger,
  onSilentWorker: () => Promise<void> = async () => {},
) {
  let failing = false;
  const beat = async () => {
    const ids = workerIds();
    if (ids.length === 0) return;
    try {
      const rows = await sql<{ silent: boolean }[]>`
        with beat as (
          insert into worker_heartbeats (worker_id, host, pid, seen_at)
          select id, ${hostname()}, ${process.pid}, now() from unnest(${ids}::text[]) id
          on conflict (worker_id) do update set seen_at = now()
        )
        select exists (
          select from worker_heartbeats
           where seen_at < now() - make_interval(secs => ${silenceSeconds}) and worker_id <> all(${ids}::text[])
        ) as silent`;
      if (failing) log.info('worker heartbeat recorded again');
      failing = false;
      if (rows[0]?.silent) await onSilentWorker();
    } catch (err) {
      // Said once per outage: the database being away is logged elsewhere too.
      if (!failing) log.warn('worker heartbeat failed', { error: (err as Error).message });
      failing = true;
    }
  };
  const timer = setInterval(() => void beat(), heartbeatIntervalMs(silenceSeconds));
  timer.unref();
  return {
    /** Beats now (also when a new worker id appears), besides the regular interval. */
    beat,
    /** After a clean stop the rows go: the workers released their jobs. */
    async stop() {
      clearInterval(timer);
      const ids = workerIds();
      if (ids.length > 0) await sql`delete from worker_heartbeats where worker_id = any(${ids}::text[])`;
    },
  };
}
