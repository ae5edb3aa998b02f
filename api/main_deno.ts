/**
 * Deno entry (`deno task api`): serves the same app with Deno.serve against DATABASE_URL
 * (migrated beforehand with `npm run migrate`). ADMIN_TOKEN and ISO_ENCRYPTION_KEY must be
 * set: this entry has no data folder to generate them into.
 */
import { createApp } from './app.ts';
import { appConfig, loadEnv } from './config.ts';
import { createSql } from './db/client.ts';
import { createLogger } from './log.ts';

const env = loadEnv(Deno.env.toObject());
if (!env.DATABASE_URL || !env.ADMIN_TOKEN || !env.ISO_ENCRYPTION_KEY) {
  console.error('DATABASE_URL, ADMIN_TOKEN and ISO_ENCRYPTION_KEY: all required for the Deno entry');
  Deno.exit(2);
}
const log = createLogger(env.LOG_LEVEL);
const sql = createSql(env.DATABASE_URL, { max: env.DATABASE_POOL_SIZE, timeoutSeconds: env.DATABASE_TIMEOUT_SECONDS });
const config = appConfig(env, {
  adminToken: env.ADMIN_TOKEN,
  wlanKeyBase64: env.ISO_ENCRYPTION_KEY,
  dataDir: env.DATA_DIR,
});
const app = createApp({ sql, log, config });
Deno.serve({ port: env.PORT, onListen: ({ port }) => log.info('deno api ready', { port }) }, app.fetch);
