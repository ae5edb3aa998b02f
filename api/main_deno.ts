/**
 * Deno entry (`deno task api`): serves the same app with Deno.serve against DATABASE_URL
 * (migrated beforehand with `npm run migrate`). ADMIN_TOKEN and ISO_ENCRYPTION_KEY must be
 * set: this entry has no data folder to generate them into.
 */
import { createApp } from './app.ts';
import { appConfig, ConfigError, configWarnings, type Env, loadEnv } from './config.ts';
import { createSql } from './db/client.ts';
import { createLogger } from './log.ts';

/** In-flight requests get this long to finish after SIGTERM or SIGINT. */
const DRAIN_MS = 10_000;

function readEnv(): Env {
  try {
    return loadEnv(Deno.env.toObject());
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    console.error(err.message);
    Deno.exit(2);
  }
}

const env = readEnv();
if (!env.DATABASE_URL || !env.ADMIN_TOKEN || !env.ISO_ENCRYPTION_KEY) {
  console.error(
    'invalid configuration: DATABASE_URL, ADMIN_TOKEN and ISO_ENCRYPTION_KEY are all required for the Deno entry',
  );
  Deno.exit(2);
}
const log = createLogger(env.LOG_LEVEL);
for (const warning of configWarnings(env)) log.warn(warning);
const sql = createSql(env.DATABASE_URL, { max: env.DATABASE_POOL_SIZE, timeoutSeconds: env.DATABASE_TIMEOUT_SECONDS });
const config = appConfig(env, {
  adminToken: env.ADMIN_TOKEN,
  wlanKeyBase64: env.ISO_ENCRYPTION_KEY,
  dataDir: env.DATA_DIR,
});
const app = createApp({ sql, log, config });
const server = Deno.serve({ port: env.PORT, onListen: ({ port }) => log.info('deno api ready', { port }) }, app.fetch);

let stopping = false;
async function stop(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  log.info('stopping', { signal });
  // shutdown() stops accepting connections and resolves when in-flight requests are answered.
  const drained = await Promise.race([
    server.shutdown().then(() => true),
    new Promise<false>((resolve) => setTimeout(() => resolve(false), DRAIN_MS)),
  ]);
  if (!drained) log.warn('in-flight requests did not finish in time', { ms: DRAIN_MS });
  await sql.end({ timeout: 5 });
  log.info('stopped');
  Deno.exit(0);
}

for (const signal of ['SIGTERM', 'SIGINT'] as const) Deno.addSignalListener(signal, () => void stop(signal));
