/**
 * Heartbeats written in batches (api/agent/README.md, Heartbeats): each check-in records its device and the
 * time of the check-in here; once a second one statement writes every pending heartbeat to
 * the primary, and the ordered stop writes the rest before the pool closes. A check-in then
 * reads without writing, so an unchanged one costs the database a single read.
 *
 * The time of a check-in answered while the device was live is written even when the
 * device was deprovisioned or archived before the write: it did check in then.
 *
 * `greatest(...)` keeps the later time when two API processes write the same device, and a
 * flush that fails puts its heartbeats back (the later time wins) for the next one, so
 * nothing is lost while the process lives. A crash loses at most the unwritten last second;
 * the device's next check-in sets it again.
 */
import type { Sql } from '../db/client.ts';

const HEARTBEAT_FLUSH_MS = 1000;

/**
 * One batch: $1 the device ids and $2 the check-in times (ms since the epoch), each joined
 * with commas. A plain update: every device has its row, made with it; a device deleted
 * meanwhile has none.
 *
 * Ids in order: a plan that walks the ids (a nested loop, or the probe side of a hash join
 * once the batch is large) locks their rows in this order in every process. A small batch
 * may be hashed and the table walked in its own order instead; two processes whose plans
 * differ could then deadlock, and PostgreSQL ends one batch, which the next flush writes
 * again: heartbeats a second late, never lost.
 */
export const HEARTBEAT_WRITE = `update device_heartbeats h set at = greatest(h.at, to_timestamp(b.ms / 1000))
  from (
    select id, ms from unnest(string_to_array($1, ',')::uuid[], string_to_array($2, ',')::float8[]) as u (id, ms)
    order by id
  ) as b
  where h.device_id = b.id`;

export interface FlushResult {
  devices: number;
  seconds: number;
  error?: unknown;
}

export class Heartbeats {
  /** device id → time of its latest check-in, in ms since the epoch. */
  private pending = new Map<string, number>();
  private flushing: Promise<void> | null = null;
  private timer: ReturnType<typeof setInterval> | null = null;
  private readonly listeners: Array<(result: FlushResult) => void> = [];

  constructor(
    private readonly sql: Sql,
    private readonly onError: (err: unknown, devices: number) => void = () => {},
  ) {}

  /** Heartbeats recorded and not yet written. */
  get size(): number {
    return this.pending.size;
  }

  /** Notes a check-in of the device at `at` (ms since the epoch). */
  record(deviceId: string, at: number): void {
    const known = this.pending.get(deviceId);
    if (known === undefined || known < at) this.pending.set(deviceId, at);
  }

  /** Called after every flush that wrote or tried to write something (metrics). */
  onFlush(listener: (result: FlushResult) => void): void {
    this.listeners.push(listener);
  }

  /** Flushes every second until `stop()`; the timer does not keep the process alive. */
  start(intervalMs = HEARTBEAT_FLUSH_MS): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.flush(), intervalMs);
    (this.timer as { unref?: () => void }).unref?.();
  }

  /** Stops the timer and writes what is pending (the ordered stop, before the pool closes). */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.flush();
    // A flush that was running when stop began may have failed and put its batch back.
    if (this.pending.size > 0) await this.flush();
  }

  /**
   * Writes the pending heartbeats in one statement. One flush at a time: a call during a
   * flush waits for it and then writes what came in meanwhile.
   */
  async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    this.flushing = this.write(batch).finally(() => {
      this.flushing = null;
    });
    await this.flushing;
  }

  private async write(batch: Map<string, number>): Promise<void> {
    // Two joined texts, sorted by PostgreSQL: sorting thousands of ids here and serializing
    // them as arrays would hold up, on the event loop, the check-ins due meanwhile; the
    // primary sorts them at no extra cost. Milliseconds, not dates: cheaper to make.
    const ids = [...batch.keys()].join(',');
    const ms = [...batch.values()].join(',');
    const started = performance.now();
    let error: unknown;
    try {
      await this.sql.unsafe(HEARTBEAT_WRITE, [ids, ms], { prepare: true });
    } catch (err) {
      error = err;
      for (const [id, at] of batch) this.record(id, at);
      this.onError(err, batch.size);
    }
    const result: FlushResult = { devices: batch.size, seconds: (performance.now() - started) / 1000, error };
    for (const listener of this.listeners) listener(result);
  }
}
