/**
 * Secrets: random tokens, SHA-256 hashes for storage, constant-time comparison.
 * Agent secrets and bootstrap tokens are stored only as these hashes.
 */
import { sha256 } from '@oslojs/crypto/sha2';
import { constantTimeEqual } from '@oslojs/crypto/subtle';
import { encodeBase64urlNoPadding } from '@oslojs/encoding';

/** A random token of `bytes` bytes (default 32 = 256 bits), base64url without padding. */
export function randomToken(bytes = 32): string {
  return encodeBase64urlNoPadding(crypto.getRandomValues(new Uint8Array(bytes)));
}

const utf8 = new TextEncoder();

export function hashSecret(secret: string): Uint8Array {
  return sha256(utf8.encode(secret));
}

/** Compares two strings in time independent of where they differ. */
export function secretsEqual(a: string, b: string): boolean {
  // Hashing first makes the lengths equal, so not even the length leaks.
  return constantTimeEqual(hashSecret(a), hashSecret(b));
}
