/**
 * The check-in's wiring, built by this one function for the service and for every test:
 * where a check-in reads (the replica while it is healthy, else the primary, with the reads
 * of one turn of the event loop batched), the heartbeats it records for the batched write,
 * and the primary's connections for the hardware it writes at once. There is no other way
 * to check in, so what the tests exercise is what the service runs.
 */
import type { Sql } from '../db/client.ts';
import { CheckinReads, type ReplicaOptions } from '../db/replica.ts';
import type { Logger } from '../log.ts';
import { Heartbeats } from './heartbeats.ts';

export interface CheckinPath {
  reads: CheckinReads;
  heartbeats: Heartbeats;
  /**
   * The primary's connections for check-ins that write at once (hardware), apart from the
   * reads' pool: a connection carries its queries in order, so a read queued behind a commit
   * that waits (a slow WAL flush) would wait with it.
   */
  writes: Sql;
  /** Starts the heartbeat batches (every second) and the replica's lag sampling. */
  start(): Promise<void>;
  /** The ordered stop's part: the lag sampling ended and the pending heartbeats written. */
  stop(): Promise<void>;
}

export interface CheckinPools {
  /** The primary's pool: the reads while no replica is healthy, and every check-in's fallback. */
  primary: Sql;
  /** A streaming replica of the primary; none: every read on the primary. */
  replica?: Sql | null;
  /** The connection the heartbeat batches are written on; default: `primary`. */
  heartbeats?: Sql;
  /** The connections of check-ins with hardware; default: `primary`. */
  writes?: Sql;
}

export interface CheckinPathOptions {
  log: Logger;
  /** When the replica is bypassed; default: a lag of 5 s, a read or probe of 2 s. */
  replica?: Omit<ReplicaOptions, 'onChange'>;
}

/**
 * The check-in path over the given pools, not yet started: the service starts it with its
 * pools open and stops it before they close; a test app starts it or flushes by hand.
 */
export function createCheckinPath(pools: CheckinPools, options: CheckinPathOptions): CheckinPath {
  const { log } = options;
  const heartbeats = new Heartbeats(pools.heartbeats ?? pools.primary, (err, devices) =>
    log.warn('heartbeats: the batched write failed; the next one retries it', { devices, error: String(err) }),
  );
  const reads = new CheckinReads(pools.primary, pools.replica ?? null, {
    maxLagSeconds: 5,
    timeoutMs: 2000,
    ...options.replica,
    onChange: (healthy, why) =>
      healthy
        ? log.info('replica: check-ins read from the replica', { why })
        : log.warn('replica: bypassed, check-ins read from the primary', { why }),
  });
  return {
    reads,
    heartbeats,
    writes: pools.writes ?? pools.primary,
    async start() {
      heartbeats.start();
      await reads.start();
    },
    async stop() {
      reads.stop();
      await heartbeats.stop();
    },
  };
}
