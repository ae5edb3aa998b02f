/**
 * Start-up of the processes: `npm start` (database, migrations, API and worker in one
 * process), `npm run api`, `npm run worker` and `npm run migrate` for split deployments.
 * Node only; Deno serves the same app through main_deno.ts.
 */
import { Buffer } from 'node:buffer';
import { resolve } from 'node:path';
import { serve } from '@hono/node-server';
import { createApp } from '../app.ts';
import { appConfig, ConfigError, configWarnings, loadEnv, type AppConfig, type Env } from '../config.ts';
import { createSql, type Sql } from '../db/client.ts';
import { migrate } from '../db/migrate.ts';
import { randomToken } from '../http/crypto.ts';
import { createLogger, type Logger } from '../log.ts';
import { startWorker } from '../../jobs/worker.ts';
import { ensureDataDir, loadOrCreateSecret } from './data_dir.ts';
import { startEmbeddedPostgres, type RunningPostgres } from './embedded_postgres.ts';

interface Runtime {
  env: Env;
  log: Logger;
  dataDir: string;
  config: AppConfig;
  adminTokenFile: string | null;
}

/** Reads the environment and DATA_DIR, generating the admin token and WLAN key once. */
export async function loadRuntime(): Promise<Runtime> {
  let env: Env;
  try {
    env = loadEnv(process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(2);
    }
    throw err;
  }
  const log = createLogger(env.LOG_LEVEL);
  for (const warning of configWarnings(env)) log.warn(warning);
  const dataDir = resolve(env.DATA_DIR);
  await ensureDataDir(dataDir);
  const admin = env.ADMIN_TOKEN
    ? { value: env.ADMIN_TOKEN, path: null }
    : await loadOrCreateSecret(dataDir, 'admin-token', () => randomToken(32));
  const wlanKey = env.ISO_ENCRYPTION_KEY
    ? env.ISO_ENCRYPTION_KEY
    : (
        await loadOrCreateSecret(dataDir, 'iso-encryption-key', () =>
          Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64'),
        )
      ).value;
  const config = appConfig(env, { adminToken: admin.value, wlanKeyBase64: wlanKey, dataDir });
  return { env, log, dataDir, config, adminTokenFile: admin.path };
}

/** DATABASE_URL, or the embedded PostgreSQL under DATA_DIR. */
async function openDatabase(rt: Runtime): Promise<{ url: string; embedded: RunningPostgres | null }> {
  if (rt.env.DATABASE_URL) return { url: rt.env.DATABASE_URL, embedded: null };
  const embedded = await startEmbeddedPostgres({ stateDir: rt.dataDir, database: 'fleet', log: rt.log });
  return { url: embedded.url, embedded };
}

function workerDeps(rt: Runtime) {
  return {
    log: rt.log,
    config: {
      isoDir: rt.config.isoDir,
      isoBaseImage: rt.env.ISO_BASE_IMAGE,
      isoBaseImages: { debian: rt.env.ISO_BASE_IMAGE_DEBIAN, ubuntu: rt.env.ISO_BASE_IMAGE_UBUNTU },
      wlanKey: rt.config.wlanKey,
      publicBaseUrl: rt.config.publicBaseUrl,
    },
  };
}

function serveApi(rt: Runtime, sql: Sql): Promise<{ close(): Promise<void>; port: number }> {
  const app = createApp({ sql, config: rt.config, log: rt.log });
  return new Promise((resolveServer) => {
    const server = serve({ fetch: app.fetch, port: rt.env.PORT, hostname: '0.0.0.0' }, (info) => {
      resolveServer({
        port: info.port,
        close: () => new Promise<void>((done) => server.close(() => done())),
      });
    });
  });
}

/** Stops everything in reverse order on SIGINT/SIGTERM. */
function onShutdown(log: Logger, steps: Array<() => Promise<unknown>>) {
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info('shutting down', { signal });
    for (const step of steps.reverse()) {
      await step().catch((err) => log.warn('shutdown step failed', { error: String(err) }));
    }
    process.exit(0);
  };
  // embedded-postgres installs exit hooks that stop the database at once on a signal;
  // ours stop the API and worker first and the database last.
  process.removeAllListeners('SIGINT');
  process.removeAllListeners('SIGTERM');
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

function announce(rt: Runtime, port: number) {
  const base = `http://localhost:${port}`;
  const how = rt.adminTokenFile
    ? `the admin token is in ${rt.adminTokenFile} (mode 0600): Authorization: Bearer $(cat ${rt.adminTokenFile})`
    : 'the admin token is the value of ADMIN_TOKEN: Authorization: Bearer $ADMIN_TOKEN';
  rt.log.info('service ready', { docs: `${base}/api/v1/docs`, health: `${base}/api/v1/health`, auth: how });
  console.log(
    `\n  Fleet provisioning service is running.\n  Docs:   ${base}/api/v1/docs\n  Health: ${base}/api/v1/health\n  Auth:   ${how}\n`,
  );
}

/** `npm start`: database (embedded unless DATABASE_URL), migrations, API and worker. */
export async function runAll(): Promise<void> {
  const rt = await loadRuntime();
  const db = await openDatabase(rt);
  const steps: Array<() => Promise<unknown>> = [];
  if (db.embedded) steps.push(() => db.embedded!.stop());
  onShutdown(rt.log, steps);
  await migrate(db.url, rt.log);
  const sql = createSql(db.url, { max: rt.env.DATABASE_POOL_SIZE });
  steps.push(() => sql.end({ timeout: 5 }));
  const worker = await startWorker(db.url, workerDeps(rt), rt.env.WORKER_CONCURRENCY);
  steps.push(() => worker.stop());
  const server = await serveApi(rt, sql);
  steps.push(() => server.close());
  announce(rt, server.port);
}

/** `npm run api`: the API only, against DATABASE_URL (already migrated). */
export async function runApiOnly(): Promise<void> {
  const rt = await loadRuntime();
  if (!rt.env.DATABASE_URL) {
    console.error('DATABASE_URL: required for `npm run api` (use `npm start` for the embedded database)');
    process.exit(2);
  }
  const sql = createSql(rt.env.DATABASE_URL, { max: rt.env.DATABASE_POOL_SIZE });
  const server = await serveApi(rt, sql);
  onShutdown(rt.log, [() => sql.end({ timeout: 5 }), () => server.close()]);
  announce(rt, server.port);
}

/** `npm run worker`: Graphile Worker only (the build host), against DATABASE_URL. */
export async function runWorkerOnly(): Promise<void> {
  const rt = await loadRuntime();
  if (!rt.env.DATABASE_URL) {
    console.error('DATABASE_URL: required for `npm run worker`');
    process.exit(2);
  }
  const worker = await startWorker(rt.env.DATABASE_URL, workerDeps(rt), rt.env.WORKER_CONCURRENCY);
  onShutdown(rt.log, [() => worker.stop()]);
}

/** `npm run migrate`: migrations and the Graphile Worker schema, then exit. */
export async function runMigrateOnly(): Promise<void> {
  const rt = await loadRuntime();
  const db = await openDatabase(rt);
  try {
    await migrate(db.url, rt.log);
  } finally {
    await db.embedded?.stop();
  }
}
