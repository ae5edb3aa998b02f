/**
 * ISO build test support: a temporary ISO folder, the worker's deps over it, running the
 * queued jobs with the real task list (Graphile Worker's runOnce against the test file's
 * database), reading images back with xorriso, and a full database dump.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Logger, runOnce } from 'graphile-worker';
import { expect } from 'vitest';
import { createLogger, type Logger as AppLogger } from '../../api/log.ts';
import { createTaskList } from '../../jobs/tasks/index.ts';
import { jobSettlement } from '../../jobs/worker.ts';
import type { TaskDeps, WorkerConfig, WorkerDeps } from '../../jobs/worker_deps.ts';
import type { Sql } from '../../api/db/client.ts';
import type { TestContext } from './app.ts';

/** A fresh ISO folder for a test file (created synchronously: useTestApp needs it at load). */
export function tempIsoDir(): string {
  return join(mkdtempSync(join(tmpdir(), 'fleet-isos-')), 'isos');
}

/** A logger that keeps every line, to assert what was (not) logged. */
export function capturingLogger(): AppLogger & { lines: string[] } {
  const lines: string[] = [];
  return Object.assign(
    createLogger('debug', (line) => lines.push(line)),
    { lines },
  );
}

export function workerDeps(
  ctx: TestContext,
  overrides: Partial<WorkerConfig> = {},
  log: AppLogger = capturingLogger(),
): WorkerDeps {
  return {
    log,
    config: {
      isoDir: ctx.config.isoDir,
      isoBaseImage: undefined,
      wlanKey: ctx.config.wlanKey,
      publicBaseUrl: ctx.config.publicBaseUrl,
      agentPollIntervalSeconds: ctx.config.agentPollIntervalSeconds,
      ...overrides,
    },
  };
}

/** The worker's deps as its tasks get them, over the test file's postgres.js client. */
export function taskDeps(ctx: TestContext, overrides: Partial<WorkerConfig> = {}, log?: AppLogger): TaskDeps {
  return { ...workerDeps(ctx, overrides, log), sql: ctx.sql };
}

export const silentGraphileLogger = new Logger(() => () => {});

/** Runs every job that is due, with the real task list, then returns. */
export async function runJobs(ctx: TestContext, deps: WorkerDeps): Promise<void> {
  await runOnce({
    connectionString: ctx.db.url,
    taskList: createTaskList({ ...deps, sql: ctx.sql }),
    noHandleSignals: true,
    logger: silentGraphileLogger,
    // As the real worker settles jobs, so that a job is completed when runOnce returns.
    preset: { worker: jobSettlement },
  });
}

export async function queueJob(sql: Sql, task: string, payload: unknown = {}): Promise<void> {
  await sql`select from graphile_worker.add_job(${task}, ${JSON.stringify(payload)}::text::json)`;
}

export async function triggerBuild(ctx: TestContext, organizationId: string, body?: unknown) {
  const res = await ctx.request(
    'POST',
    `/api/v1/organizations/${organizationId}/iso-builds`,
    body === undefined ? {} : { body },
  );
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  return res.body as { id: string; status: string; [key: string]: unknown };
}

export function getBuild(ctx: TestContext, id: string) {
  return ctx.request('GET', `/api/v1/iso-builds/${id}`);
}

export function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

export async function sha256OfFile(path: string): Promise<string> {
  return sha256Hex(await readFile(path));
}

export async function downloadBytes(ctx: TestContext, id: string, headers: Record<string, string> = {}) {
  const res = await ctx.app.request(`/api/v1/iso-builds/${id}/download`, {
    headers: { authorization: `Bearer ${ctx.config.adminToken}`, ...headers },
  });
  return { status: res.status, headers: res.headers, bytes: new Uint8Array(await res.arrayBuffer()) };
}

/** The files in an ISO 9660 image, as xorriso lists them ("/fleet/provisioning.json"). */
export function isoFiles(image: string): string[] {
  const out = spawnSync('xorriso', ['-indev', image, '-find', '/', '-type', 'f'], { encoding: 'utf8' });
  expect(out.status, out.stderr).toBe(0);
  return out.stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => l.replace(/^'|'$/g, ''));
}

/** One file of an image, extracted with xorriso. */
export async function extractFromIso(image: string, path: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'fleet-iso-extract-'));
  try {
    const out = spawnSync('xorriso', ['-osirrox', 'on', '-indev', image, '-extract', path, join(dir, 'f')], {
      encoding: 'utf8',
    });
    expect(out.status, out.stderr).toBe(0);
    return readFileSync(join(dir, 'f'), 'utf8');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** True when the bytes are an ISO 9660 image (primary volume descriptor at sector 16). */
export function isIso9660(bytes: Uint8Array): boolean {
  return Buffer.from(bytes.subarray(32769, 32774)).toString('latin1') === 'CD001';
}

/**
 * The whole database as text. pg_dump when its version can read the server; when the
 * server is newer (pg_dump refuses), every row of every table of every schema, the
 * Graphile Worker tables included, via `select t::text`.
 */
export async function dumpDatabase(sql: Sql, url: string): Promise<{ via: 'pg_dump' | 'select'; text: string }> {
  const u = new URL(url);
  const dump = spawnSync('pg_dump', ['--no-owner'], {
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
    env: {
      ...process.env,
      PGHOST: u.hostname,
      PGPORT: u.port,
      PGUSER: decodeURIComponent(u.username),
      PGPASSWORD: decodeURIComponent(u.password),
      PGDATABASE: u.pathname.slice(1),
    },
  });
  if (dump.status === 0) return { via: 'pg_dump', text: dump.stdout };
  if (!/version mismatch/.test(dump.stderr ?? '') && dump.error === undefined) {
    throw new Error(`pg_dump failed: ${dump.stderr}`);
  }
  const tables = await sql<{ schemaname: string; tablename: string }[]>`
    select schemaname, tablename from pg_tables
    where schemaname not in ('pg_catalog', 'information_schema') order by 1, 2`;
  const parts: string[] = [];
  for (const t of tables) {
    const rows = await sql<{ row: string }[]>`select r::text as row from ${sql(t.schemaname)}.${sql(t.tablename)} r`;
    parts.push(`-- ${t.schemaname}.${t.tablename}`, ...rows.map((r) => r.row));
  }
  return { via: 'select', text: parts.join('\n') };
}

/** Polls the build until it reaches one of the states (the real worker is running). */
export async function waitForStatus(ctx: TestContext, id: string, states: string[], timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await getBuild(ctx, id);
    if (res.status === 200 && states.includes(res.body.status)) return res.body;
    if (Date.now() > deadline)
      throw new Error(`build ${id} did not reach ${states.join('/')}: ${JSON.stringify(res.body)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
