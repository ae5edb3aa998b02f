/**
 * An in-process app over a test file's own database, wired as the service wires it (its
 * check-in path from `createCheckinPath`: batched reads, batched heartbeats), and a small
 * request helper that sends JSON with the admin token unless told otherwise.
 */
import { afterAll, beforeAll } from 'vitest';
import { type CheckinPath, createCheckinPath } from '../../api/agent/checkin_path.ts';
import { createApp, type App } from '../../api/app.ts';
import type { AppConfig } from '../../api/config.ts';
import type { Sql } from '../../api/db/client.ts';
import { type Logger, silentLogger } from '../../api/log.ts';
import { createTestDatabase, type TestDatabase } from './db.ts';

export const ADMIN_TOKEN = 'test-admin-token-0123456789abcdefghijklmnopqrstuv';

export function testConfig(overrides: Partial<AppConfig> = {}): AppConfig {
  return {
    adminToken: ADMIN_TOKEN,
    publicBaseUrl: 'http://fleet.test',
    roleRepositoryUrl: 'https://roles.example.invalid/ansible-roles.git',
    agentPollIntervalSeconds: 300,
    activation: { maxFailures: 20, windowSeconds: 600, trustProxy: false },
    isoDir: '/nonexistent/isos',
    wlanKey: new Uint8Array(32).fill(7),
    diskKeyEncryptionKey: new Uint8Array(32).fill(9),
    checkin: { maxInFlight: 1000, retryAfterSeconds: 30 },
    webhooks: { allowHttp: false, allowPrivate: false },
    ...overrides,
  };
}

export interface RequestOptions {
  body?: unknown;
  /** Raw body text (sent as is). */
  rawBody?: string;
  /** Bearer token; `null` sends no Authorization header. Default: the admin token. */
  token?: string | null;
  headers?: Record<string, string>;
}

export interface TestResponse<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export interface TestContext {
  app: App;
  sql: Sql;
  db: TestDatabase;
  config: AppConfig;
  /** The app's check-in path; its heartbeats are written every second, or by `writeHeartbeats`. */
  checkin: CheckinPath;
  request<T = any>(method: string, path: string, options?: RequestOptions): Promise<TestResponse<T>>;
}

/** Call at the top of a test file: a database and an app for the file's tests. */
export function useTestApp(overrides: Partial<AppConfig> = {}): TestContext {
  const ctx = {} as TestContext;
  beforeAll(async () => {
    ctx.db = await createTestDatabase();
    ctx.sql = ctx.db.sql;
    ctx.config = testConfig(overrides);
    const app = testApp(ctx.sql, ctx.config);
    ctx.app = app;
    ctx.checkin = app.checkin;
    // As in the service: heartbeats written every second.
    await ctx.checkin.start();
    ctx.request = (method, path, options) => request(ctx.app, method, path, options);
  });
  afterAll(async () => {
    await ctx.checkin?.stop();
    await ctx.db?.drop();
  });
  return ctx;
}

/**
 * An app over `sql`, its check-in path built as the service builds it; for another
 * configuration, a counted or broken client. Its heartbeats are written when flushed
 * (`writeHeartbeats(app)`), not on a timer: `useTestApp` starts its own.
 */
export function testApp(sql: Sql, config: AppConfig, log: Logger = silentLogger): App & { checkin: CheckinPath } {
  const checkin = createCheckinPath({ primary: sql }, { log });
  return Object.assign(createApp({ sql, config, log, checkin }), { checkin });
}

/**
 * Writes the check-ins' pending heartbeats now, as the service does every second and at
 * its stop, so a test reads `agent_last_checkin` without waiting for the batch.
 */
export async function writeHeartbeats(ctx: { checkin: CheckinPath }): Promise<void> {
  await ctx.checkin.heartbeats.flush();
}

export async function request<T = any>(
  app: App,
  method: string,
  path: string,
  options: RequestOptions = {},
): Promise<TestResponse<T>> {
  const headers: Record<string, string> = { ...options.headers };
  const token = options.token === undefined ? ADMIN_TOKEN : options.token;
  if (token !== null) headers.authorization = `Bearer ${token}`;
  let body: string | undefined;
  if (options.rawBody !== undefined) body = options.rawBody;
  else if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await app.request(path, { method, headers, body });
  const text = await res.text();
  let parsed: unknown = text;
  if (res.headers.get('content-type')?.includes('application/json') && text) parsed = JSON.parse(text);
  return { status: res.status, body: parsed as T, headers: res.headers };
}
