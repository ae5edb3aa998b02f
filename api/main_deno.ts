/**
 * Deno entry (`deno task api`): serves the same app with Deno.serve against DATABASE_URL
 * (migrated beforehand with `npm run migrate`). ADMIN_TOKEN and ISO_ENCRYPTION_KEY must be
 * set: this entry has no data folder to generate them into.
 */
import { createApp } from './app.ts';
import { loadEnv } from './config.ts';
import { createSql } from './db/client.ts';
import { createLogger } from './log.ts';

const env = loadEnv(Deno.env.toObject());
if (!env.DATABASE_URL || !env.ADMIN_TOKEN || !env.ISO_ENCRYPTION_KEY) {
  console.error('DATABASE_URL, ADMIN_TOKEN and ISO_ENCRYPTION_KEY: all required for the Deno entry');
  Deno.exit(2);
}
const log = createLogger(env.LOG_LEVEL);
const sql = createSql(env.DATABASE_URL, { max: env.DATABASE_POOL_SIZE });
const app = createApp({
  sql,
  log,
  config: {
    adminToken: env.ADMIN_TOKEN,
    publicBaseUrl: (env.PUBLIC_BASE_URL ?? `http://localhost:${env.PORT}`).replace(/\/+$/, ''),
    roleRepositoryUrl: env.ROLE_REPOSITORY_URL,
    agentPollIntervalSeconds: env.AGENT_POLL_INTERVAL_SECONDS,
    activation: { maxFailures: env.ACTIVATION_MAX_FAILURES, windowSeconds: env.ACTIVATION_FAILURE_WINDOW_SECONDS, trustProxy: env.TRUST_PROXY },
    isoDir: `${env.DATA_DIR}/isos`,
    wlanKey: Uint8Array.from(atob(env.ISO_ENCRYPTION_KEY), (ch) => ch.charCodeAt(0)),
  },
});
Deno.serve({ port: env.PORT, onListen: ({ port }) => log.info('deno api ready', { port }) }, app.fetch);
