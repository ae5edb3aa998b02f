/**
 * Configuration from the environment (the table: README.md, Configuration), validated once
 * at start-up. A bad value stops the service with a message that names the variable.
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
 * A decimal integer from min to max, digits only: `Number()` would also take " 3000",
 * "0x10" and "1e3", and a port then binds where nobody meant it to.
 */
function integer(min: number, max = Number.MAX_SAFE_INTEGER) {
  return z
    .string()
    .regex(/^[0-9]{1,15}$/, 'must be a decimal integer (digits only)')
    .transform(Number)
    .pipe(z.number().int().min(min, `must be at least ${min}`).max(max, `must be at most ${max}`));
}

/**
 * A repository address `git clone` takes: an `https`, `http`, `ssh`, `git` or
 * `file` URL, or the scp-like `[user@]host:path`. Never an option (leading `-`), a
 * `transport::address` (git's `ext::` runs commands), whitespace or control characters:
 * every device passes this to git.
 */
const gitUrl = z
  .string()
  .min(1)
  .max(2000)
  .refine(
    (v) => isGitRepositoryUrl(v),
    'must be a URL git clone takes: https://, http://, ssh://, git://, file:///path or user@host:path',
  );

const scpLike = /^(?:[A-Za-z0-9._-]+@)?[A-Za-z0-9][A-Za-z0-9.-]*:(?!\/\/)[^:\s][^\s]*$/;

function isGitRepositoryUrl(value: string): boolean {
  const unprintable = [...value].some((ch) => ch <= ' ' || ch === '\u007f');
  if (unprintable || /\s/.test(value) || value.startsWith('-') || value.includes('::')) return false;
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(value)?.[1]?.toLowerCase();
  if (scheme === undefined) return scpLike.test(value);
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    return false;
  }
  if (scheme === 'file') return parsed.host === '' && parsed.pathname.length > 1;
  return ['https', 'http', 'ssh', 'git'].includes(scheme) && parsed.hostname !== '' && parsed.pathname.length > 1;
}

/** A security feed's address: `https://`, or `file://` with an absolute path. */
const feedUrl = z
  .string()
  .max(2000)
  .refine((v) => {
    try {
      const u = new URL(v);
      return u.protocol === 'https:' ? u.hostname !== '' : u.protocol === 'file:' && u.pathname.length > 1;
    } catch {
      return false;
    }
  }, 'must be an https:// URL or a file:// path');

const DEFAULT_VULN_FEED_DEBIAN_URL = 'https://security-tracker.debian.org/tracker/data/json';

const DEFAULT_ROLE_REPOSITORY_URL = 'https://roles.example.invalid/fleet/ansible-roles.git';

/** Webhook deliveries in flight per worker (WEBHOOK_CONCURRENCY). */
export const DEFAULT_WEBHOOK_CONCURRENCY = 4;
/** AGENT_POLL_INTERVAL_SECONDS when unset: also the worker's, whose stale sweeps count in it. */
export const DEFAULT_AGENT_POLL_INTERVAL_SECONDS = 300;

/** INVENTORY_REFRESH_HOURS when unset. */
export const DEFAULT_INVENTORY_REFRESH_HOURS = 6;

/**
 * The API's connections: twice the host's cores, from 4 to 10. postgres.js pipelines
 * queries on busy connections, so a few connections carry one process's load, with fewer
 * backends competing for the cores (test/bench/README.md). Four leave room beside a slow query.
 */
export const DEFAULT_POOL_SIZE = Math.min(10, Math.max(4, 2 * cpus().length));

const EnvSchema = z.object({
  PORT: integer(1, 65535).default(3000),
  DATABASE_URL: z
    .string()
    .refine((v) => /^postgres(ql)?:\/\//.test(v), 'must be a postgres:// URL')
    .optional(),
  /** A streaming replica of DATABASE_URL: check-ins read there while it keeps up (api/agent/README.md). */
  DATABASE_REPLICA_URL: z
    .string()
    .refine((v) => /^postgres(ql)?:\/\//.test(v), 'must be a postgres:// URL')
    .optional(),
  /** The replica is bypassed while its replay lags more than this. */
  REPLICA_MAX_LAG_SECONDS: integer(1, 3600).default(5),
  DATA_DIR: z.string().min(1).default('./.data'),
  ADMIN_TOKEN: z.string().min(32, 'must be at least 32 characters').optional(),
  PUBLIC_BASE_URL: url.optional(),
  ROLE_REPOSITORY_URL: gitUrl.default(DEFAULT_ROLE_REPOSITORY_URL),
  AGENT_POLL_INTERVAL_SECONDS: integer(5, 86_400).default(DEFAULT_AGENT_POLL_INTERVAL_SECONDS),
  /** How often at most an agent refreshes its apt lists for the pending updates it reports. */
  INVENTORY_REFRESH_HOURS: integer(1, 168).default(DEFAULT_INVENTORY_REFRESH_HOURS),
  ISO_BASE_IMAGE: z.string().min(1).optional(),
  ISO_BASE_IMAGE_DEBIAN: z.string().min(1).optional(),
  ISO_BASE_IMAGE_UBUNTU: z.string().min(1).optional(),
  /** base64 of 32 bytes: the AES-256-GCM key for WLAN credentials in queued ISO jobs and webhook secrets. */
  ISO_ENCRYPTION_KEY: z
    .string()
    .refine((v) => Buffer.from(v, 'base64').length === 32, 'must be base64 of exactly 32 bytes')
    .optional(),
  /**
   * base64 of 32 bytes: the AES-256-GCM key of escrowed disk recovery keys. Without it the
   * service runs, but encrypted templates, escrow and reveal answer 422.
   */
  DISK_KEY_ENCRYPTION_KEY: z
    .string()
    .regex(/^[A-Za-z0-9+/]{43}=$/, 'must be base64 of exactly 32 bytes')
    .optional(),
  ACTIVATION_MAX_FAILURES: integer(1).default(20),
  ACTIVATION_FAILURE_WINDOW_SECONDS: integer(1).default(600),
  TRUST_PROXY: boolean.default(false),
  WORKER_CONCURRENCY: integer(1, 16).default(1),
  DATABASE_POOL_SIZE: integer(1, 200).default(DEFAULT_POOL_SIZE),
  /** Check-ins in flight per API process before more are refused with 503 (default: 32 per pool connection). */
  CHECKIN_MAX_IN_FLIGHT: integer(1, 100_000).optional(),
  /** Check-ins are refused while the event loop lags more than this (ms): what is admitted is answered quickly. */
  CHECKIN_MAX_EVENT_LOOP_DELAY_MS: integer(1, 60_000).default(100),
  /** The least Retry-After of a refused check-in; the jitter adds up to as much again. */
  CHECKIN_RETRY_AFTER_SECONDS: integer(1, 3600).default(30),
  /** A bearer token for GET /metrics besides the operator token (at least 32 characters). */
  METRICS_TOKEN: z.string().min(32, 'must be at least 32 characters').optional(),
  LOG_LEVEL: z.enum(['debug', 'info', 'warn', 'error']).default('info'),
  /** How long a stop lets in-flight requests finish before closing their connections. */
  SHUTDOWN_DRAIN_SECONDS: integer(0, 600).default(10),
  /** The longest a request waits for the database before it answers 503. */
  DATABASE_TIMEOUT_SECONDS: integer(2, 600).default(10),
  /** A worker without a heartbeat for this long is dead: its running builds fail. */
  WORKER_SILENCE_SECONDS: integer(2, 86_400).default(120),
  /** Webhook URLs may be `http` when their host is loopback (for a receiver on the same host). */
  WEBHOOK_ALLOW_HTTP: boolean.default(false),
  /** Webhooks may reach private, loopback and link-local addresses (an internal receiver). */
  WEBHOOK_ALLOW_PRIVATE: boolean.default(false),
  /** Webhook deliveries in flight per worker, beside (never behind) the ISO builds. */
  WEBHOOK_CONCURRENCY: integer(1, 64).default(DEFAULT_WEBHOOK_CONCURRENCY),
  /** The Debian Security Tracker's JSON: an https:// URL, or a file:// path for a site without internet. */
  VULN_FEED_DEBIAN_URL: feedUrl.default(DEFAULT_VULN_FEED_DEBIAN_URL),
  /** Ubuntu's OSV records: a .tar.gz or .zip (https:// or file://), or a file:// folder of *.json; unset: not read. */
  VULN_FEED_UBUNTU_URL: feedUrl.optional(),
  /** How often the security feeds are read (and at the worker's start). */
  VULN_FEED_INTERVAL_MINUTES: integer(1, 10_080).default(60),
});

export type Env = z.infer<typeof EnvSchema>;

export class ConfigError extends Error {}

/** Parses the environment; throws a ConfigError naming every bad variable, on one line. */
export function loadEnv(env: Record<string, string | undefined>): Env {
  // An empty variable counts as unset, as shells and .env files commonly write them.
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = EnvSchema.safeParse(present);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`invalid configuration: ${problems.join('; ')}`);
  }
  return parsed.data;
}

/**
 * Settings that work on one machine but not in a fleet: the defaults of PUBLIC_BASE_URL
 * (written into ISOs and blueprints; `localhost` is the device itself) and of
 * ROLE_REPOSITORY_URL (a placeholder). Logged as warnings at start-up.
 */
export function configWarnings(env: Env): string[] {
  const warnings: string[] = [];
  if (env.PUBLIC_BASE_URL === undefined) {
    warnings.push(
      `PUBLIC_BASE_URL is not set: ISOs and blueprints will point devices at http://localhost:${env.PORT}, ` +
        'which only works on this machine',
    );
  }
  if (env.ROLE_REPOSITORY_URL === DEFAULT_ROLE_REPOSITORY_URL) {
    warnings.push(`ROLE_REPOSITORY_URL is not set: agents get the placeholder ${DEFAULT_ROLE_REPOSITORY_URL}`);
  }
  return warnings;
}

/** Which webhook URLs may be subscribed (api/webhooks/url_policy.ts applies it). */
export interface WebhookNetworkPolicy {
  /** `http` is allowed for a loopback host (WEBHOOK_ALLOW_HTTP). */
  allowHttp: boolean;
  /** Private, loopback and link-local addresses are allowed (WEBHOOK_ALLOW_PRIVATE). */
  allowPrivate: boolean;
}

/** What the HTTP app needs, already resolved (secrets loaded or generated). */
export interface AppConfig {
  adminToken: string;
  /** A second bearer token that may read GET /metrics (and nothing else). */
  metricsToken?: string;
  publicBaseUrl: string;
  roleRepositoryUrl: string;
  agentPollIntervalSeconds: number;
  /** The check-in's `inventory_refresh_hours`; default `DEFAULT_INVENTORY_REFRESH_HOURS`. */
  inventoryRefreshHours?: number;
  activation: { maxFailures: number; windowSeconds: number; trustProxy: boolean };
  /** Folder of the finished ISO files. */
  isoDir: string;
  /** AES-256-GCM key (32 bytes) for WLAN credentials in queued ISO jobs and webhook secrets. */
  wlanKey: Uint8Array;
  /** AES-256-GCM key (32 bytes) of escrowed disk recovery keys; absent: disk encryption is unavailable. */
  diskKeyEncryptionKey?: Uint8Array;
  /** Which webhook URLs may be subscribed (api/webhooks/url_policy.ts). */
  webhooks: WebhookNetworkPolicy;
  /** Load shedding of check-ins (api/agent/README.md, Load shedding). */
  checkin: { maxInFlight: number; retryAfterSeconds: number; maxEventLoopDelayMs?: number };
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
    metricsToken: env.METRICS_TOKEN,
    publicBaseUrl: (env.PUBLIC_BASE_URL ?? `http://localhost:${env.PORT}`).replace(/\/+$/, ''),
    roleRepositoryUrl: env.ROLE_REPOSITORY_URL,
    agentPollIntervalSeconds: env.AGENT_POLL_INTERVAL_SECONDS,
    inventoryRefreshHours: env.INVENTORY_REFRESH_HOURS,
    activation: {
      maxFailures: env.ACTIVATION_MAX_FAILURES,
      windowSeconds: env.ACTIVATION_FAILURE_WINDOW_SECONDS,
      trustProxy: env.TRUST_PROXY,
    },
    isoDir: `${secrets.dataDir}/isos`,
    wlanKey: new Uint8Array(Buffer.from(secrets.wlanKeyBase64, 'base64')),
    ...(env.DISK_KEY_ENCRYPTION_KEY === undefined
      ? {}
      : { diskKeyEncryptionKey: new Uint8Array(Buffer.from(env.DISK_KEY_ENCRYPTION_KEY, 'base64')) }),
    checkin: {
      // Enough to keep every connection busy with a short queue behind it, no more.
      maxInFlight: env.CHECKIN_MAX_IN_FLIGHT ?? env.DATABASE_POOL_SIZE * 32,
      retryAfterSeconds: env.CHECKIN_RETRY_AFTER_SECONDS,
      maxEventLoopDelayMs: env.CHECKIN_MAX_EVENT_LOOP_DELAY_MS,
    },
    databaseTimeoutSeconds: env.DATABASE_TIMEOUT_SECONDS,
    webhooks: { allowHttp: env.WEBHOOK_ALLOW_HTTP, allowPrivate: env.WEBHOOK_ALLOW_PRIVATE },
  };
}
