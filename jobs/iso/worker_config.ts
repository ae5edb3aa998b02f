/** Defaults of the build host's ISO settings that WorkerConfig leaves optional. */
import { fileURLToPath } from 'node:url';
import type { WorkerConfig } from '../worker_deps.ts';

export const DEFAULT_BUILD_SCRIPT = fileURLToPath(new URL('./build_iso.sh', import.meta.url));

/** Far above what a remaster of an installer image takes on a slow disk. */
const DEFAULT_BUILD_TIMEOUT_MS = 30 * 60_000;

export function buildScriptOf(config: WorkerConfig): string {
  return config.isoBuildScript ?? DEFAULT_BUILD_SCRIPT;
}

export function buildTimeoutOf(config: WorkerConfig): number {
  return config.isoBuildTimeoutMs ?? DEFAULT_BUILD_TIMEOUT_MS;
}

/**
 * A build `running` longer than this has lost its worker (killed with SIGKILL, host
 * gone): the sweep fails it. Always well above the build timeout, which stops every live
 * build before.
 */
export function stuckAfterMs(config: WorkerConfig): number {
  return Math.max(2 * 60 * 60_000, buildTimeoutOf(config) + 30 * 60_000);
}
