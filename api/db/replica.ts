/**
 * Reads that may come from a streaming replica (`DATABASE_REPLICA_URL`, api/agent/README.md): the
 * check-in reads there while the replica is healthy, and from the primary otherwise.
 *
 * Health is sampled on the replica itself at most once a second: its replay lag is
 * `now() - pg_last_xact_replay_timestamp()`, except when it has replayed everything its WAL
 * receiver got while streaming (a primary without writes sends nothing, and the timestamp
 * of the last replayed transaction then only grows: the lag is 0). A replica that errors,
 * does not answer within the probe's time, is not streaming behind, or lags more than
 * `maxLagSeconds` is bypassed until a sample finds it healthy again. A read that fails or
 * hangs on the replica is answered from the primary at once and marks it unhealthy.
 */
import { Deadlines } from '../http/deadlines.ts';
import type { Db, Sql } from './client.ts';

export type ReadSource = 'replica' | 'primary';

export interface ReplicaOptions {
  /** Bypass the replica while its replay lags more than this. */
  maxLagSeconds: number;
  /** A probe or a read on the replica that takes longer marks it unhealthy. */
  timeoutMs: number;
  /** How often the lag is sampled (at most once a second). */
  sampleMs?: number;
  onChange?: (healthy: boolean, why: string) => void;
}

const REPLICA_SAMPLE_MS = 1000;

class Timeout extends Error {}

export class CheckinReads {
  /** Reads answered, by where they came from (fleet_checkin_reads_total). */
  readonly counts: Record<ReadSource, number> = { replica: 0, primary: 0 };
  /** The last sampled lag in seconds; null before the first sample or after a failed one. */
  lagSeconds: number | null = null;
  private healthy = false;
  private probing = false;
  private timer: ReturnType<typeof setInterval> | null = null;
  private readonly deadlines: Deadlines;

  constructor(
    readonly primary: Sql,
    readonly replica: Sql | null,
    private readonly options: ReplicaOptions = { maxLagSeconds: 5, timeoutMs: 2000 },
  ) {
    this.deadlines = new Deadlines(options.timeoutMs);
  }

  /** `promise`, or a `Timeout` once it took longer than the replica may. */
  private within<T>(promise: Promise<T>): Promise<T> {
    return this.deadlines.within(promise, this.timedOut);
  }

  private readonly timedOut = () => new Timeout(`no answer within ${this.options.timeoutMs} ms`);

  /** Whether reads go to the replica now. */
  get usingReplica(): boolean {
    return this.replica !== null && this.healthy;
  }

  /** Samples the lag now and then every second; the timer does not keep the process alive. */
  async start(): Promise<void> {
    if (!this.replica || this.timer) return;
    this.timer = setInterval(() => void this.sample(), this.options.sampleMs ?? REPLICA_SAMPLE_MS);
    (this.timer as { unref?: () => void }).unref?.();
    await this.sample();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /**
   * Runs the read on the replica when it is healthy, else (or when it fails or hangs
   * there) on the primary. `db` is the primary itself or a transaction of it.
   */
  async read<T>(db: Db, run: (db: Db) => Promise<T>): Promise<T> {
    if (this.replica && this.healthy) {
      try {
        const value = await this.within(run(this.replica));
        this.counts.replica++;
        return value;
      } catch (err) {
        if (!isReplicaFailure(err)) throw err;
        this.setHealthy(false, `a read failed: ${describe(err)}`);
      }
    }
    const value = await run(db);
    this.counts.primary++;
    return value;
  }

  /** A read (or a write) that must see the primary: counted as a primary read. */
  async onPrimary<T>(db: Db, run: (db: Db) => Promise<T>): Promise<T> {
    const value = await run(db);
    this.counts.primary++;
    return value;
  }

  /** One probe at a time: a replica that hangs keeps one probe waiting, not one per second. */
  async sample(): Promise<void> {
    if (!this.replica || this.probing) {
      if (this.probing) this.setHealthy(false, 'the last probe is still waiting');
      return;
    }
    this.probing = true;
    const probe = this.replica<Array<{ lag: number | null }>>`
      select case
               when not pg_is_in_recovery() then null
               when pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn()
                    and exists (select 1 from pg_stat_wal_receiver where status = 'streaming') then 0
               else extract(epoch from now() - pg_last_xact_replay_timestamp())::float8
             end as lag`;
    try {
      const [row] = await this.within(probe);
      const lag = row?.lag ?? null;
      this.lagSeconds = lag;
      if (lag === null) this.setHealthy(false, 'not a replica in recovery, or nothing replayed yet');
      else if (lag > this.options.maxLagSeconds) this.setHealthy(false, `replay lags ${lag.toFixed(1)} s`);
      else this.setHealthy(true, `replay lags ${lag.toFixed(1)} s`);
    } catch (err) {
      this.lagSeconds = null;
      this.setHealthy(false, `the probe failed: ${describe(err)}`);
    } finally {
      // A probe that timed out still holds its connection until it settles.
      void probe.catch(() => {}).finally(() => (this.probing = false));
    }
  }

  private setHealthy(healthy: boolean, why: string): void {
    if (healthy === this.healthy) return;
    this.healthy = healthy;
    this.options.onChange?.(healthy, why);
  }
}

/** What sends a read to the primary: the replica's own trouble, not an error of the query. */
function isReplicaFailure(err: unknown): boolean {
  if (err instanceof Timeout) return true;
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return true; // socket and postgres.js connection errors
  // 57014 cancelled by recovery conflict or timeout, 57P* shutdown, 53* resources, 08* connection,
  // 40001 serialization failure (recovery conflict), XX000 internal.
  return /^(57|53|08|40001|XX|ECONN|EPIPE|ETIMEDOUT|CONNECT|CONNECTION)/.test(code);
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
