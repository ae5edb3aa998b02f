/**
 * WLAN credentials in flight: the API seals them into the build job's payload and the
 * build task opens them, bound to the build id (api/http/sealed_box.ts). The plaintext
 * exists only in memory of the API request and of the task.
 */
import { z } from 'zod';
import { open, Sealed, type SealedType, seal } from '../http/sealed_box.ts';

export interface WlanCredentials {
  ssid: string;
  psk: string;
}

/** What the job payload carries instead of the credentials. */
export const SealedWlan = Sealed;
export type SealedWlanType = SealedType;

export function sealWlan(key: Uint8Array, buildId: string, wlan: WlanCredentials): Promise<SealedWlanType> {
  return seal(key, buildId, JSON.stringify({ ssid: wlan.ssid, psk: wlan.psk }));
}

/** Throws when the key or the build id do not match (a tampered or foreign payload). */
export async function openWlan(key: Uint8Array, buildId: string, sealed: SealedWlanType): Promise<WlanCredentials> {
  const parsed = z.object({ ssid: z.string(), psk: z.string() }).parse(JSON.parse(await open(key, buildId, sealed)));
  return { ssid: parsed.ssid, psk: parsed.psk };
}
