/**
 * `npm run schema:dump` and `npm run schema:check`: sql/schema.sql is the whole schema that
 * sql/migrations makes, as dbmate dumps it (pg_dump, schema only, then dbmate's list of
 * applied versions).
 *
 *   tsx .ci/schema.ts dump              writes sql/schema.sql
 *   tsx .ci/schema.ts check [file...]   exit 1 with a unified diff for each file the dump
 *                                       differs from (sql/schema.sql unless named)
 *
 * The dump is made on a throw-away cluster of Debian's PostgreSQL 15 (package postgresql-15):
 * the embedded PostgreSQL 17 ships no pg_dump, and Debian 12's pg_dump 15 refuses a newer
 * server. The cluster listens on a socket in a temporary folder only, and is removed after.
 * initdb and postgres refuse to run as root: under root they run as the postgres user (the
 * package creates it).
 */
import { execFileSync, type SpawnOptions, spawn, spawnSync } from 'node:child_process';
import {
  accessSync,
  appendFileSync,
  chownSync,
  constants,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, isAbsolute, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { resolveBinary } from 'dbmate';

const root = fileURLToPath(new URL('..', import.meta.url));
const committed = join(root, 'sql', 'schema.sql');
const pgBin = '/usr/lib/postgresql/15/bin';
const name = 'schema';

const [mode, ...named] = process.argv.slice(2);
const files = named.length === 0 ? [committed] : named.map((file) => resolve(file));
if (mode !== 'dump' && mode !== 'check') fail('usage: tsx .ci/schema.ts dump | check [file...]');
try {
  accessSync(join(pgBin, 'initdb'), constants.X_OK);
} catch {
  fail(`needs Debian's PostgreSQL 15 in ${pgBin} (apt-get install postgresql-15)`);
}

const dir = mkdtempSync(join(tmpdir(), 'fleet-schema-'));
const data = join(dir, 'data');
const asOwner: SpawnOptions = { cwd: dir, env: { PATH: process.env.PATH, LC_ALL: 'C', TZ: 'UTC' } };
const cleanUp = () => {
  spawnSync(join(pgBin, 'pg_ctl'), ['--pgdata', data, '--mode', 'immediate', '--wait', '--silent', 'stop'], asOwner);
  rmSync(dir, { recursive: true, force: true });
};
// pg_ctl starts the server in a session of its own: an interrupt does not reach it.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.once(signal, () => {
    cleanUp();
    process.kill(process.pid, signal);
  });
}
try {
  if (process.getuid?.() === 0) {
    Object.assign(asOwner, postgresUser());
    chownSync(dir, asOwner.uid!, asOwner.gid!);
  }
  const dump = await dumpMigrations();
  if (mode === 'dump') {
    // Written beside, then renamed over the target: never half a file.
    const next = join(root, 'sql', '.schema.sql.next');
    writeFileSync(next, dump);
    renameSync(next, committed);
    console.error(`${name}: wrote ${shown(committed)}`);
  } else {
    const dumped = join(dir, 'dumped.sql');
    writeFileSync(dumped, dump);
    for (const file of files) {
      if (dump === readFileSync(file, 'utf8')) {
        console.error(`${name}: ${shown(file)} is the schema the migrations make`);
        continue;
      }
      spawnSync('diff', ['-u', '--label', shown(file), '--label', 'dump of sql/migrations', file, dumped], {
        stdio: 'inherit',
      });
      console.error(`${name}: ${shown(file)} differs from the migrations; run \`npm run schema:dump\` and commit it`);
      process.exitCode = 1;
    }
  }
} catch (error) {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 2;
} finally {
  cleanUp();
}

/** A fresh cluster, every migration applied by dbmate, and dbmate's dump of it. */
async function dumpMigrations(): Promise<string> {
  await run(
    join(pgBin, 'initdb'),
    ['--pgdata', data, '--username', 'postgres', '--auth', 'trust', '--encoding', 'UTF8', '--locale', 'C', '--no-sync'],
    asOwner,
  );
  appendFileSync(
    join(data, 'postgresql.conf'),
    `listen_addresses = ''\nunix_socket_directories = '${dir}'\nfsync = off\ntimezone = 'UTC'\n`,
  );
  const log = join(dir, 'server.log');
  try {
    await run(join(pgBin, 'pg_ctl'), ['--pgdata', data, '--log', log, '--wait', '--silent', 'start'], asOwner);
  } catch (error) {
    throw new Error(`${(error as Error).message}\n${readFileSync(log, 'utf8').trim()}`);
  }

  const url = `postgres://postgres@/fleet?socket=${encodeURIComponent(dir)}&sslmode=disable`;
  // pg_dump 15 from PATH; no PG* variable of the caller's may change what it writes.
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('PG')));
  Object.assign(env, { DATABASE_URL: url, PATH: `${pgBin}:${process.env.PATH}` });
  const migrations = join(root, 'sql', 'migrations');
  const schemaFile = join(dir, 'schema.sql');
  await run(resolveBinary(), ['--migrations-dir', migrations, '--no-dump-schema', 'up'], { env });
  await run(resolveBinary(), ['--schema-file', schemaFile, 'dump'], { env });
  return steady(readFileSync(schemaFile, 'utf8'));
}

/**
 * The dump without what changes from run to run or machine to machine: pg_dump's random
 * `\restrict` key becomes the fixed one dbmate itself passes from version 2.29 on, and the
 * server and pg_dump versions go, so a Debian point release is no change of schema.
 */
function steady(dump: string): string {
  return dump
    .replace(/^\\(un)?restrict [A-Za-z0-9]+$/gm, (_, un = '') => `\\${un}restrict dbmate`)
    .replace(/^-- Dumped from database version .*\n-- Dumped by pg_dump version .*\n\n/m, '');
}

function postgresUser(): { uid: number; gid: number } {
  const id = (flag: string) => Number.parseInt(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }), 10);
  try {
    return { uid: id('-u'), gid: id('-g') };
  } catch {
    throw new Error(
      `${name}: under root initdb runs as the postgres user, and there is none (apt-get install postgresql-15)`,
    );
  }
}

/** Runs a program; its output is shown only when it fails. */
function run(command: string, args: string[], options: SpawnOptions): Promise<void> {
  return new Promise((done, failed) => {
    const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout?.on('data', (chunk) => (output += chunk));
    child.stderr?.on('data', (chunk) => (output += chunk));
    child.on('error', failed);
    child.on('close', (code) => {
      if (code === 0) done();
      else
        failed(new Error(`${name}: ${basename(command)} ${args.join(' ')} failed (exit ${code}):\n${output.trim()}`));
    });
  });
}

/** A path as the reader knows it: from the repository's root when it lies inside. */
function shown(path: string): string {
  const inside = relative(root, path);
  return inside.startsWith('..') || isAbsolute(inside) ? path : inside;
}

function fail(message: string): never {
  console.error(`${name}: ${message}`);
  process.exit(2);
}
