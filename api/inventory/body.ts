/**
 * The inventory's body: JSON, maybe gzip-compressed, up to 16 MiB uncompressed. The
 * decompression stops at that size (zlib's output bound), so a small gzip bomb costs at
 * most the bound, not what it would inflate to.
 */
import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import type { Context } from 'hono';
import { ApiError } from '../http/errors.ts';
import { requireWellFormedJson } from '../http/json_value.ts';
import { validationHook } from '../http/openapi.ts';
import { InventoryRequest, type InventoryRequestType, MAX_INVENTORY_BYTES, MAX_INVENTORY_PACKAGES } from './schemas.ts';

const gunzipAsync = promisify(gunzip);

export function inventoryTooLarge(): ApiError {
  return new ApiError(
    'payload_too_large',
    `an inventory may have at most ${MAX_INVENTORY_BYTES} bytes uncompressed and ${MAX_INVENTORY_PACKAGES} packages`,
  );
}

function invalid(message: string): ApiError {
  return new ApiError('invalid_request', message);
}

/** The body's bytes, decompressed when its Content-Encoding is gzip; 413 past the bound. */
async function bodyBytes(c: Context): Promise<Uint8Array> {
  const raw = new Uint8Array(await c.req.arrayBuffer());
  const encoding = (c.req.header('content-encoding') ?? 'identity').trim().toLowerCase();
  if (encoding === 'identity') {
    if (raw.byteLength > MAX_INVENTORY_BYTES) throw inventoryTooLarge();
    return raw;
  }
  if (encoding !== 'gzip' && encoding !== 'x-gzip') {
    throw invalid('Content-Encoding must be gzip, or none');
  }
  try {
    return await gunzipAsync(raw, { maxOutputLength: MAX_INVENTORY_BYTES });
  } catch (err) {
    if ((err as { code?: unknown }).code === 'ERR_BUFFER_TOO_LARGE') throw inventoryTooLarge();
    throw invalid('the body is not valid gzip');
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The inventory as sent: the parsed JSON (its hash is computed over it) and the same value
 * checked by the schema. 400 for what is not the schema's, 413 for too much.
 */
export async function readInventoryBody(
  c: Context,
): Promise<{ raw: Record<string, unknown>; inventory: InventoryRequestType }> {
  const contentType = c.req.header('content-type');
  if (!contentType?.toLowerCase().startsWith('application/json')) {
    throw invalid('the request body must be application/json');
  }
  const bytes = await bodyBytes(c);
  let value: unknown;
  try {
    value = JSON.parse(utf8.decode(bytes));
  } catch {
    throw invalid('the request body is not valid JSON (UTF-8)');
  }
  requireWellFormedJson(value);
  const packages = (value as { packages?: unknown } | null)?.packages;
  if (Array.isArray(packages) && packages.length > MAX_INVENTORY_PACKAGES) throw inventoryTooLarge();
  const result = InventoryRequest.safeParse(value);
  if (!result.success) validationHook({ ...result, target: 'json' }, c);
  const inventory = result.data!;
  const seen = new Set<string>();
  for (const [i, p] of inventory.packages.entries()) {
    const key = `${p.name}\u0000${p.arch}`;
    if (seen.has(key)) {
      throw new ApiError('invalid_request', `package ${p.name} (${p.arch}) is listed twice`, {
        details: [{ path: ['packages', String(i)], message: 'a second entry of this name and arch' }],
      });
    }
    seen.add(key);
  }
  return { raw: value as Record<string, unknown>, inventory };
}
