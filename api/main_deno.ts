/**
 * Deno entry (`deno task api`): the API process of api/runtime/api_service.ts (the same
 * pools, heartbeat batches, replica reads and ordered stop as `npm run api`) behind
 * Deno.serve, against DATABASE_URL (migrated beforehand with `npm run migrate`).
 * ADMIN_TOKEN and ISO_ENCRYPTION_KEY must be set: this entry has no data folder to
 * generate them into.
 */
import { appConfig, ConfigError, configWarnings, type Env, loadEnv } from './config.ts';
import { createLogger, type Logger } from './log.ts';
import { checkPostgresQueue } from './db/postgres_queue_fix.ts';
import { errorBody } from './http/errors.ts';
import { processMetrics } from './metrics/metrics.ts';
import {
  type ApiDatabase,
  apiHandler,
  type ApiHandler,
  apiStopSteps,
  type HttpFront,
  onShutdown,
  openApiDatabase,
  startupFailureLine,
} from './runtime/api_service.ts';

function readEnv(): Env {
  try {
    return loadEnv(Deno.env.toObject());
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    console.error(err.message);
    Deno.exit(2);
  }
}

/** A check-in the gate refuses now, answered before the app (the request target is the URL's path and query). */
function early(app: ApiHandler, request: Request): Response | null {
  if (request.method !== 'POST') return null;
  const url = request.url;
  const refused = app.refuseEarly('POST', url.slice(url.indexOf('/', url.indexOf('//') + 2)));
  return refused ? new Response(refused.body, { status: refused.status, headers: refused.headers }) : null;
}

/** Deno.serve as the runtime's front: bound first, 503 while starting, `connection: close` while draining. */
function listenFirst(env: Env, log: Logger): HttpFront {
  let app: ApiHandler | null = null;
  let draining = false;
  const starting = () =>
    new Response(JSON.stringify(errorBody('service_unavailable', 'the service is starting; retry later')), {
      status: 503,
      headers: { 'content-type': 'application/json', 'retry-after': '5' },
    });
  let server: Deno.HttpServer;
  try {
    server = Deno.serve({ port: env.PORT, hostname: '0.0.0.0', onListen: () => {} }, async (request, info) => {
      const response = app ? (early(app, request) ?? (await app.fetch(request, info))) : starting();
      if (!draining) return response;
      // While draining, every answer closes its connection so keep-alive clients move on.
      try {
        response.headers.set('connection', 'close');
        return response;
      } catch {
        // Immutable headers (a Response.redirect, a fetched one): copy them.
        const headers = new Headers(response.headers);
        headers.set('connection', 'close');
        return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
      }
    });
  } catch (err) {
    if (err instanceof Deno.errors.AddrInUse) throw new Error(`PORT ${env.PORT} is in use by another process`);
    if (err instanceof Deno.errors.PermissionDenied || err instanceof Deno.errors.NotCapable) {
      throw new Error(`PORT ${env.PORT} may not be used by this user`);
    }
    throw new Error(`cannot listen on PORT ${env.PORT}: ${err instanceof Error ? err.message : String(err)}`);
  }
  return {
    port: (server.addr as Deno.NetAddr).port,
    attach(handler) {
      app = handler;
    },
    async close() {
      draining = true;
      log.info('stop: no longer accepting connections; draining in-flight requests', {
        drain_seconds: env.SHUTDOWN_DRAIN_SECONDS,
      });
      // shutdown() stops accepting and resolves once in-flight requests are answered.
      let timer: ReturnType<typeof setTimeout> | undefined;
      const drained = await Promise.race([
        server.shutdown().then(() => true),
        new Promise<boolean>((done) => (timer = setTimeout(() => done(false), env.SHUTDOWN_DRAIN_SECONDS * 1000))),
      ]);
      clearTimeout(timer);
      const outcome = drained ? 'in-flight requests finished' : 'drain time over; the other connections close on exit';
      log.info(`stop: ${outcome}`);
    },
  };
}

const env = readEnv();
if (!env.DATABASE_URL || !env.ADMIN_TOKEN || !env.ISO_ENCRYPTION_KEY) {
  console.error(
    'invalid configuration: DATABASE_URL, ADMIN_TOKEN and ISO_ENCRYPTION_KEY are all required for the Deno entry',
  );
  Deno.exit(2);
}
const log = createLogger(env.LOG_LEVEL);
let http: HttpFront | null = null;
let db: ApiDatabase | null = null;
// Before anything starts: a signal during start-up stops what runs so far.
onShutdown(log, [{ name: 'requests drained', run: async () => http?.close() }, ...apiStopSteps(() => db)], {
  onSignal: (signal, run) => Deno.addSignalListener(signal, run),
  exit: (code) => Deno.exit(code),
});
try {
  for (const warning of configWarnings(env)) log.warn(warning);
  checkPostgresQueue(log, processMetrics());
  http = listenFirst(env, log);
  const config = appConfig(env, {
    adminToken: env.ADMIN_TOKEN,
    wlanKeyBase64: env.ISO_ENCRYPTION_KEY,
    dataDir: env.DATA_DIR,
  });
  db = await openApiDatabase(env, log, env.DATABASE_URL);
  http.attach(apiHandler(db, config, log));
  log.info('deno api ready', { port: http.port });
} catch (err) {
  console.error(startupFailureLine(err));
  if (env.LOG_LEVEL === 'debug' && err instanceof Error) console.error(err.stack);
  Deno.exit(1);
}
