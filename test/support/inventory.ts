/**
 * Builders of inventories for tests: a package list, an inventory body with its hash (by
 * the service's rule, checked against independent vectors in test/inventory/canonical_json.test.ts),
 * and the agent's PUT, plain or gzip-compressed.
 */
import { gzipSync } from 'node:zlib';
import { inventoryHash } from '../../api/inventory/content.ts';
import type { TestContext, TestResponse } from './app.ts';

export interface Pkg {
  name: string;
  version: string;
  arch: string;
  source: string;
  source_version: string;
}

export function pkg(name: string, version = '1.0-1', source = name, arch = 'amd64'): Pkg {
  return { name, version, arch, source, source_version: version };
}

/** `n` packages named `prefix-00000`…, one source each. */
export function packages(n: number, prefix = 'pkg'): Pkg[] {
  return Array.from({ length: n }, (_, i) => pkg(`${prefix}-${String(i).padStart(5, '0')}`));
}

export interface InventoryBody {
  hash: string;
  os: { id: string; version_id: string; codename: string };
  kernel: string;
  packages: Pkg[];
  pending: { name: string; installed: string; candidate: string; security: boolean }[];
  reboot_required: boolean;
  luks?: { device_path: string; luks_uuid: string; keyslots: number[] }[];
}

/** An inventory (Debian 12 unless told) with its hash. */
export function inventory(fields: Partial<Omit<InventoryBody, 'hash'>> = {}): InventoryBody {
  const body = {
    os: { id: 'debian', version_id: '12', codename: 'bookworm' },
    kernel: '6.1.0-28-amd64',
    packages: [pkg('bash', '5.2.15-2+b7'), pkg('libssl3', '3.0.15-1~deb12u1', 'openssl')],
    pending: [],
    reboot_required: false,
    ...fields,
  };
  return { hash: inventoryHash(body), ...body };
}

/** PUT /api/v1/agent/inventory, the body as JSON or gzip-compressed JSON (or given bytes). */
export async function putInventory(
  ctx: TestContext,
  secret: string | null,
  body: unknown,
  options: { gzip?: boolean; raw?: Uint8Array; headers?: Record<string, string> } = {},
): Promise<TestResponse> {
  const json = typeof body === 'string' ? body : JSON.stringify(body);
  const payload = options.raw ?? (options.gzip ? gzipSync(json) : json);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    ...(options.gzip || options.raw ? { 'content-encoding': 'gzip' } : {}),
    ...(secret === null ? {} : { authorization: `Bearer ${secret}` }),
    ...options.headers,
  };
  const res = await ctx.app.request('/api/v1/agent/inventory', { method: 'PUT', headers, body: payload as BodyInit });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
}
