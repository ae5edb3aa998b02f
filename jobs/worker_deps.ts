/** What the worker is started with, and what its tasks get besides. */
import type { Sql } from '../api/db/client.ts';
import type { Logger } from '../api/log.ts';
import type { Resolver } from './webhooks/post.ts';

export interface WorkerConfig {
  /** Folder of the finished ISO files (shared with the API when on one host). */
  isoDir: string;
  /** The installer image to personalize (ISO_BASE_IMAGE); unset: a development base image is made. */
  isoBaseImage: string | undefined;
  /** Per backend (ISO_BASE_IMAGE_DEBIAN, ISO_BASE_IMAGE_UBUNTU), ahead of isoBaseImage. */
  isoBaseImages?: { debian?: string | undefined; ubuntu?: string | undefined };
  /** AES-256-GCM key for WLAN credentials in job payloads and webhook secrets. */
  wlanKey: Uint8Array;
  publicBaseUrl: string;
  /** The build script; default jobs/iso/build_iso.sh (tests substitute slow or failing ones). */
  isoBuildScript?: string;
  /** Hard limit of one build script run; default 30 minutes. */
  isoBuildTimeoutMs?: number;
  /** A worker without a heartbeat for this long is dead and its builds fail; default 120. */
  workerSilenceSeconds?: number;
  /**
   * AGENT_POLL_INTERVAL_SECONDS, as the API has it: a device is stale after three poll
   * intervals without a check-in (the stale sweeps); default 300.
   */
  agentPollIntervalSeconds?: number;
  /** Webhook deliveries: WEBHOOK_ALLOW_PRIVATE; tests shorten the 10 s limit and substitute DNS. */
  webhooks?: { allowPrivate: boolean; timeoutMs?: number | undefined; resolve?: Resolver | undefined };
  /**
   * The security feeds (VULN_FEED_DEBIAN_URL, VULN_FEED_UBUNTU_URL: `https://` or `file://`;
   * one unset is not read) and how often they are read (VULN_FEED_INTERVAL_MINUTES, default 60).
   */
  vulnFeeds?: { debian?: string | undefined; ubuntu?: string | undefined; intervalMinutes?: number | undefined };
}

/** What a worker process is started with: configuration and a logger. */
export interface WorkerDeps {
  config: WorkerConfig;
  log: Logger;
}

/**
 * What the tasks get: the worker's postgres.js client runs the project's own SQL, as on the
 * API side. Graphile Worker's pg pool is its own, for fetching and settling jobs.
 */
export interface TaskDeps extends WorkerDeps {
  sql: Sql;
}
