/**
 * `Fleet-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">` (api/webhooks/README.md),
 * keyed with the UTF-8 bytes of the webhook's secret. The time inside the signed text lets
 * a receiver refuse a replayed old delivery.
 */
import { hmac } from '@oslojs/crypto/hmac';
import { SHA256 } from '@oslojs/crypto/sha2';
import { encodeHexLowerCase } from '@oslojs/encoding';

export function fleetSignature(secret: string, unixSeconds: number, body: string): string {
  const encoder = new TextEncoder();
  const mac = hmac(SHA256, encoder.encode(secret), encoder.encode(`${unixSeconds}.${body}`));
  return `t=${unixSeconds},v1=${encodeHexLowerCase(mac)}`;
}
