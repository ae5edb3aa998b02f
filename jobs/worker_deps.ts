import type { Resolver } from './webhooks/post.ts';

/** What the worker's tasks need: configuration and a logger (tasks get their pg client from Graphile Worker). */
import type { Logger } from '../api/log.ts';

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
  /** Webhook deliveries: WEBHOOK_ALLOW_PRIVATE; tests shorten the 10 s limit and substitute DNS. */
  webhooks?: { allowPrivate: boolean; timeoutMs?: number | undefined; resolve?: Resolver | undefined };
}

export interface WorkerDeps {
  config: WorkerConfig;
  log: Logger;
}
