/**
 * WLAN credentials in flight: the API seals them into the build job's payload and the
 * build task opens them, with WebCrypto AES-256-GCM (works on Node and Deno alike). The
 * build id is bound as additional data, so a sealed value copied into another build's job
 * does not open. The plaintext exists only in memory of the API request and of the task.
 */
import { Buffer } from 'node:buffer';
import { z } from 'zod';

export interface WlanCredentials {
  ssid: string;
  psk: string;
}

/** What the job payload carries instead of the credentials. */
export const SealedWlan = z.strictObject({
  v: z.literal(1),
  iv: z.string().regex(/^[A-Za-z0-9_-]{16}$/),
  data: z
    .string()
    .regex(/^[A-Za-z0-9_-]+$/)
    .max(4096),
});
export type SealedWlanType = z.infer<typeof SealedWlan>;

const IV_BYTES = 12;

async function importKey(key: Uint8Array, usage: 'encrypt' | 'decrypt'): Promise<CryptoKey> {
  if (key.length !== 32) {
    // A configuration problem, never a client one: the message names the variable, not the key.
    throw new Error(`the WLAN encryption key must be 32 bytes (ISO_ENCRYPTION_KEY), got ${key.length}`);
  }
  return crypto.subtle.importKey('raw', new Uint8Array(key), { name: 'AES-GCM' }, false, [usage]);
}

export async function sealWlan(key: Uint8Array, buildId: string, wlan: WlanCredentials): Promise<SealedWlanType> {
  const iv = crypto.getRandomValues(new Uint8Array(IV_BYTES));
  const plain = new TextEncoder().encode(JSON.stringify({ ssid: wlan.ssid, psk: wlan.psk }));
  const sealed = await crypto.subtle.encrypt(
    { name: 'AES-GCM', iv, additionalData: new TextEncoder().encode(buildId) },
    await importKey(key, 'encrypt'),
    plain,
  );
  plain.fill(0);
  return { v: 1, iv: Buffer.from(iv).toString('base64url'), data: Buffer.from(sealed).toString('base64url') };
}

/** Throws when the key or the build id do not match (a tampered or foreign payload). */
export async function openWlan(key: Uint8Array, buildId: string, sealed: SealedWlanType): Promise<WlanCredentials> {
  const plain = await crypto.subtle.decrypt(
    {
      name: 'AES-GCM',
      iv: new Uint8Array(Buffer.from(sealed.iv, 'base64url')),
      additionalData: new TextEncoder().encode(buildId),
    },
    await importKey(key, 'decrypt'),
    new Uint8Array(Buffer.from(sealed.data, 'base64url')),
  );
  const parsed = z.object({ ssid: z.string(), psk: z.string() }).parse(JSON.parse(new TextDecoder().decode(plain)));
  return { ssid: parsed.ssid, psk: parsed.psk };
}
