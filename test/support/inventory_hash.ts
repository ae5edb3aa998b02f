/**
 * The software inventory's hash as the service and the agent define it, written here
 * independently of both: SHA-256 of the RFC 8785 canonical JSON of the body without `hash`.
 * RFC 8785 is what ECMAScript's JSON.stringify does with strings and numbers, with object
 * keys sorted by UTF-16 code units (what Array.prototype.sort does with strings).
 */
import { createHash } from 'node:crypto';

export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const object = value as Record<string, unknown>;
  const keys = Object.keys(object).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(object[k])}`).join(',')}}`;
}

export function inventoryHash(body: Record<string, unknown>): string {
  const { hash: _hash, ...rest } = body;
  return createHash('sha256').update(canonicalJson(rest), 'utf8').digest('hex');
}
