/**
 * The `build_iso` job as both sides see it: the API queues it in SQL (no Graphile Worker
 * import, so the API also runs on Deno) and the task parses its payload before use.
 */
import { z } from 'zod';
import { SealedWlan } from './wlan_crypto.ts';

export const BUILD_ISO_TASK = 'build_iso';

/**
 * Attempts cover a worker stopped mid-build (SIGTERM releases the job for a retry). The
 * task catches every build failure itself and returns normally, so a job never ends as a
 * permanently failed row that would keep the sealed WLAN credentials.
 */
export const BUILD_ISO_MAX_ATTEMPTS = 3;

/** One job per build: queueing is idempotent and the sweep can find the job of a build. */
export function buildIsoJobKey(buildId: string): string {
  return `${BUILD_ISO_TASK}:${buildId}`;
}

export const BuildIsoPayload = z.object({
  build_id: z.uuid(),
  wlan: SealedWlan.nullable(),
});
export type BuildIsoPayloadType = z.infer<typeof BuildIsoPayload>;
