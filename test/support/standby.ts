/**
 * A real PostgreSQL streaming replica for tests and the bench, made from the embedded
 * PostgreSQL's own binaries (the npm package has no pg_basebackup): a primary is migrated
 * and stopped cleanly, its data folder copied, and the copy started with `standby.signal`
 * and a `primary_conninfo` pointing at the primary, which it then follows by streaming
 * replication (initdb's pg_hba already lets `postgres` replicate over 127.0.0.1; PostgreSQL's
 * default wal_level is `replica`).
 */
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { appendFile, chmod, copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import postgres from 'postgres';
import { migrate } from '../../api/db/migrate.ts';
import { type Logger, silentLogger } from '../../api/log.ts';
import { type RunningPostgres, startEmbeddedPostgres } from '../../api/runtime/embedded_postgres.ts';

export interface PrimaryAndStandby {
  primary: RunningPostgres;
  standby: RunningPostgres;
  /** Everything the primary wrote to its log (with `log_statement`, its statements). */
  primaryLog(): string;
  /** The standby's postmaster and its children (backends, startup, WAL receiver). */
  standbyPids(): number[];
  /** Waits until the standby has replayed everything the primary has written so far. */
  caughtUp(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

/** The pids of a postmaster and its direct children (Linux /proc). */
export function processTree(root: number): number[] {
  const pids = [root];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === root) pids.push(Number(entry));
    } catch {
      // gone
    }
  }
  return pids;
}

function capturingLogger(lines: string[]): Logger {
  return {
    ...silentLogger,
    debug: (_msg, fields) => {
      if (typeof fields?.message === 'string') lines.push(fields.message);
    },
  };
}

/**
 * A migrated primary with database `database` and its standby. `durable`: fsync and full
 * page writes on (the bench), else the tests' throwaway settings.
 */
export async function startPrimaryAndStandby(
  options: { database?: string; durable?: boolean; prepare?: (url: string) => Promise<void> } = {},
): Promise<PrimaryAndStandby> {
  const database = options.database ?? 'fleet';
  const ephemeral = !options.durable;
  const dir = await mkdtemp(join(tmpdir(), 'fleet-standby-'));
  await chmod(dir, 0o711); // the postgres user must traverse into it when we run as root
  const primaryDir = join(dir, 'primary');
  const standbyDir = join(dir, 'standby');
  await mkdir(primaryDir, { mode: 0o711 });
  await mkdir(standbyDir, { mode: 0o711 });
  const lines: string[] = [];
  const log = capturingLogger(lines);
  let primary: RunningPostgres | null = await startEmbeddedPostgres({ stateDir: primaryDir, database, log, ephemeral });
  let standby: RunningPostgres | null = null;
  try {
    await migrate(primary.url, silentLogger);
    await options.prepare?.(primary.url);
    const admin = postgres(primary.urlOf('postgres'), { max: 1, onnotice: () => {} });
    // WAL kept for a standby that was stopped for a while (the tests stop it on purpose).
    await admin`alter system set wal_keep_size = '512MB'`;
    await admin.end();
    await primary.stop();
    // A cleanly stopped primary: its data folder is a consistent base for the standby.
    await promisify(execFile)('cp', ['-a', join(primaryDir, 'postgres'), join(standbyDir, 'postgres')]);
    await copyFile(join(primaryDir, 'postgres-password'), join(standbyDir, 'postgres-password'));
    await rm(join(standbyDir, 'postgres', 'fleet-service.pid'), { force: true });
    primary = await startEmbeddedPostgres({ stateDir: primaryDir, database, log, ephemeral });
    const source = new URL(primary.url);
    const password = decodeURIComponent(source.password);
    const conninfo = `host=127.0.0.1 port=${source.port} user=postgres password=${password} application_name=fleet-standby`;
    await appendFile(
      join(standbyDir, 'postgres', 'postgresql.auto.conf'),
      `primary_conninfo = '${conninfo.replaceAll("'", "''")}'\n`,
    );
    await writeFile(join(standbyDir, 'postgres', 'standby.signal'), '');
    standby = await startEmbeddedPostgres({ stateDir: standbyDir, database, log: silentLogger, ephemeral });
  } catch (err) {
    await standby?.stop().catch(() => {});
    await primary.stop().catch(() => {});
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  const running = { primary, standby };
  return {
    primary: running.primary,
    standby: running.standby,
    primaryLog: () => lines.join(''),
    standbyPids: () => processTree(running.standby.pid() ?? 0),
    async caughtUp(timeoutMs = 30_000) {
      const p = postgres(running.primary.urlOf('postgres'), { max: 1, onnotice: () => {} });
      const s = postgres(running.standby.urlOf('postgres'), { max: 1, onnotice: () => {} });
      try {
        // The insert position, not pg_current_wal_lsn(): with synchronous_commit off (the
        // tests' clusters) a commit may not be written yet, and the write position would
        // then be behind it, so "caught up" would come before the commit reached the standby.
        const [{ lsn }] = (await p`select pg_current_wal_insert_lsn()::text as lsn`) as unknown as [{ lsn: string }];
        const deadline = Date.now() + timeoutMs;
        for (;;) {
          const [row] = await s`select pg_last_wal_replay_lsn() >= ${lsn}::pg_lsn as done`;
          if (row?.done) return;
          if (Date.now() > deadline) throw new Error(`the standby did not replay up to ${lsn} in time`);
          await new Promise((r) => setTimeout(r, 50));
        }
      } finally {
        await p.end();
        await s.end();
      }
    },
    async stop() {
      await running.standby.stop().catch(() => {});
      await running.primary.stop().catch(() => {});
      await rm(dir, { recursive: true, force: true });
    },
  };
}
