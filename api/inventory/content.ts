/**
 * The inventory's hashes, the one rule the agent shares (its Python computes the same):
 * `hash` is the SHA-256, lowercase hex, of the UTF-8 bytes of the RFC 8785 form of the
 * inventory body without `hash`, its `packages` sorted by name then architecture and its
 * `pending` by name (code point order; a stable sort, so entries with equal keys keep the
 * order they were sent in). A package set's hash is that of its sorted package list alone:
 * devices with the same packages share the set whatever their kernel or pending updates.
 */
import { Buffer } from 'node:buffer';
import { sha256 } from '@oslojs/crypto/sha2';
import { canonicalJson, compareCodePoints } from '../http/canonical_json.ts';

export interface InventoryPackage {
  name: string;
  version: string;
  arch: string;
  source: string;
  source_version: string;
}

interface PendingUpdate {
  name: string;
  installed: string;
  candidate: string;
  security: boolean;
}

/** The packages by name, then architecture, in code point order. */
function sortedPackages<P extends { name: string; arch: string }>(packages: readonly P[]): P[] {
  return [...packages].sort((a, b) => compareCodePoints(a.name, b.name) || compareCodePoints(a.arch, b.arch));
}

/** The pending updates by name, in code point order. */
export function sortedPending<P extends { name: string }>(pending: readonly P[]): P[] {
  return [...pending].sort((a, b) => compareCodePoints(a.name, b.name));
}

const utf8 = new TextEncoder();

function sha256Hex(text: string): string {
  return Buffer.from(sha256(utf8.encode(text))).toString('hex');
}

/**
 * The hash of an inventory body as it was received (parsed JSON, `hash` left out), its
 * arrays sorted here: an agent that sent them in another order still matches.
 */
export function inventoryHash(body: Record<string, unknown>): string {
  const { hash: _hash, ...rest } = body;
  return sha256Hex(
    canonicalJson({
      ...rest,
      packages: sortedPackages(rest['packages'] as InventoryPackage[]),
      pending: sortedPending(rest['pending'] as PendingUpdate[]),
    }),
  );
}

/** The content hash of a package set: of its packages, sorted, in their canonical form. */
export function packageSetHash(packages: readonly InventoryPackage[]): Uint8Array {
  return sha256(
    utf8.encode(
      canonicalJson(
        sortedPackages(packages).map((p) => ({
          name: p.name,
          version: p.version,
          arch: p.arch,
          source: p.source,
          source_version: p.source_version,
        })),
      ),
    ),
  );
}

/**
 * The release the security data is matched on: Debian's codename (bookworm), Ubuntu's
 * VERSION_ID (24.04); any other system its codename when it has one, else its version.
 */
export function releaseOf(os: { id: string; version_id: string; codename: string }): string {
  if (os.id === 'debian') return os.codename;
  if (os.id === 'ubuntu') return os.version_id;
  return os.codename !== '' ? os.codename : os.version_id;
}
