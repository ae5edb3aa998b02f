/**
 * Configuration from the environment (CONTRACT §11), validated once at start-up. A bad
 * value stops the service with a message that names the variable.
 */
import { Buffer } from 'node:buffer';
import { cpus } from 'node:os';
import { z } from 'zod';

const boolean = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');
const url = z
  .string()
  .url()
  .refine((v) => /^https?:\/\//.test(v), 'must be an http(s) URL');

/**
 * The API's connections: twice the host's cores, from 4 to 10. postgres.js pipelines
 * queries on busy connections, so a few connections carry one process's load; on the
 * 2-core bench machine 2 to 4 did at least as well as 10 (README "Benchmark"), with fewer
 * backends competing for the cores. Four leave room beside a slow query.
 */
export const DEFAULT_POOL_SIZE = Math.min(10, Math.max(4, 2 * cpus().length));

const EnvSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  DATABASE_URL: z
    .string()
    .refine((v) => /^postgres(ql)?:\/\//.test(v), 'must be a postgres:// URL')
    .optional(),
  DATA_DIR: z.string().min(1).default('./.data'),
  ADMIN_TOKEN: z.string().min(32, 'must be at least 32 characters').optional(),
  PUBLIC_BASE_URL: url.optional(),
  ROLE_REPOSITORY_URL: url.default('https://roles.example.invalid/fleet/ansible-roles.git'),
  AGENT_POLL_INTERVAL_SECONDS: z.coerce.number().int().min(5).max(86_400).default(300),
  ISO_BASE_IMAGE: z.string().min(1).optional(),
  /** base64 of 32 bytes: the AES-256-GCM key for WLAN credentials in queued ISO jobs. */
  ISO_ENCRYPTION_KEY: z
    .string()
    .refine((v) => Buffer.from(v, 'base64').length === 32, 'must be base64 of exactly 32 bytes')
    .optional(),
  ACTIVATION_MAX_FAILURES: z.coerce.number().int().min(1).default(20),
  ACTIVATION_FAILURE_WINDOW_SECONDS: z.coerce.number().int().min(1).default(600),
  TRUST_PROXY: boolean.default(false),
  WORKER_CONCURRENCY: z.coerce.number().int().min(1).max(16).default(1),
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(200).default(DEFAULT_POOL_SIZE),
  LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error']).default('info'),
  /** How long a stop lets in-flight requests finish before closing their connections. */
  SHUTDOWN_DRAIN_SECONDS: z.coerce.number().min(0).max(600).default(10),
  /** The longest a request waits for the database before it answers 503. */
  DATABASE_TIMEOUT_SECONDS: z.coerce.number().min(1).max(600).default(10),
  /** A worker without a heartbeat for this long is dead: its running builds fail. */
  WORKER_SILENCE_SECONDS: z.coerce.number().int().min(2).max(86_400).default(120),
});

export type Env = z.infer<typeof EnvSchema>;

export class ConfigError extends Error {}

/** Parses the environment; throws a ConfigError naming every bad variable. */
export function loadEnv(env: Record<string, string | undefined>): Env {
  // An empty variable counts as unset, as shells and .env files commonly write them.
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = EnvSchema.safeParse(present);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`invalid configuration:\n${lines.join('\n')}`);
  }
  return parsed.data;
}

/** What the HTTP app needs, already resolved (secrets loaded or generated). */
export interface AppConfig {
  adminToken: string;
  publicBaseUrl: string;
  roleRepositoryUrl: string;
  agentPollIntervalSeconds: number;
  activation: { maxFailures: number; windowSeconds: number; trustProxy: boolean };
  /** Folder of the finished ISO files. */
  isoDir: string;
  /** AES-256-GCM key (32 bytes) for WLAN credentials in queued ISO jobs. */
  wlanKey: Uint8Array;
  /** The longest a request waits for the database before it answers 503; default 10. */
  databaseTimeoutSeconds?: number;
}

/**
 * The app's configuration from the environment and the secrets resolved at start-up
 * (from the environment or generated into DATA_DIR): the one place both entries build it.
 */
export function appConfig(
  env: Env,
  secrets: { adminToken: string; wlanKeyBase64: string; dataDir: string },
): AppConfig {
  return {
    adminToken: secrets.adminToken,
    publicBaseUrl: (env.PUBLIC_BASE_URL ?? `http://localhost:${env.PORT}`).replace(/\/+$/, ''),
    roleRepositoryUrl: env.ROLE_REPOSITORY_URL,
    agentPollIntervalSeconds: env.AGENT_POLL_INTERVAL_SECONDS,
    activation: {
      maxFailures: env.ACTIVATION_MAX_FAILURES,
      windowSeconds: env.ACTIVATION_FAILURE_WINDOW_SECONDS,
      trustProxy: env.TRUST_PROXY,
    },
    isoDir: `${secrets.dataDir}/isos`,
    wlanKey: new Uint8Array(Buffer.from(secrets.wlanKeyBase64, 'base64')),
    databaseTimeoutSeconds: env.DATABASE_TIMEOUT_SECONDS,
  };
}
