/**
 * Secrets the service must read back (WLAN credentials in a build job, a webhook's signing
 * secret) are sealed with WebCrypto AES-256-GCM under the service's encryption key
 * (ISO_ENCRYPTION_KEY, or the one generated into DATA_DIR), on Node and Deno alike. The
 * `context` (a build id, a webhook id) is bound as additional data, so a sealed value
 * copied onto another row does not open.
 */
import { Buffer } from 'node:buffer';
import { z } from 'zod';

export const Sealed = z.strictObject({
  v: z.literal(1),
  iv: z.string().regex(/^[A-Za-z0-9_-]{16}$/),
  data: z
    .string()
    .regex(/^[A-Za-z0-9_-]+$/)
    .max(4096),
});
export type SealedType = z.infer<typeof Sealed>;

const IV_BYTES = 12;

async function importKey(key: Uint8Array, usage: 'encrypt' | 'decrypt'): Promise<CryptoKey> {
  if (key.length !== 32) {
    // A configuration problem, never a client one: the message names the variable, not the key.
    throw new Error(`the encryption key must be 32 bytes (ISO_ENCRYPTION_KEY), got ${key.length}`);
  }
  return crypto.subtle.importKey('raw', new Uint8Array(key), { name: 'AES-GCM' }, false, [usage]);
}

export async function seal(key: Uint8Array, context: string, plaintext: string): Promise<SealedType> {
  const iv = crypto.getRandomValues(new Uint8Array(IV_BYTES));
  const plain = new TextEncoder().encode(plaintext);
  const sealed = await crypto.subtle.encrypt(
    { name: 'AES-GCM', iv, additionalData: new TextEncoder().encode(context) },
    await importKey(key, 'encrypt'),
    plain,
  );
  plain.fill(0);
  return { v: 1, iv: Buffer.from(iv).toString('base64url'), data: Buffer.from(sealed).toString('base64url') };
}

/** Throws when the key or the context do not match (a tampered or foreign value). */
export async function open(key: Uint8Array, context: string, sealed: SealedType): Promise<string> {
  const plain = await crypto.subtle.decrypt(
    {
      name: 'AES-GCM',
      iv: new Uint8Array(Buffer.from(sealed.iv, 'base64url')),
      additionalData: new TextEncoder().encode(context),
    },
    await importKey(key, 'decrypt'),
    new Uint8Array(Buffer.from(sealed.data, 'base64url')),
  );
  return new TextDecoder().decode(plain);
}
