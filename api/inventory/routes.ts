/**
 * The software inventory (api/inventory/README.md): the agent's PUT of what its device runs,
 * and the admins' reads of a device's inventory and packages.
 */
import { z } from '@hono/zod-openapi';
import { defineRoute, newRouter, withoutBodyLayer } from '../access/route.ts';
import { liveAgentDevice } from '../agent/auth.ts';
import { findAgentDevice } from '../agent/repo.ts';
import type { Db } from '../db/client.ts';
import { ApiError } from '../http/errors.ts';
import { IdParams, iso, json } from '../http/openapi.ts';
import { PageQuery } from '../http/pagination.ts';
import { readInventoryBody } from './body.ts';
import { inventoryHash } from './content.ts';
import * as ops from './operations.ts';
import {
  decodePackageCursor,
  encodePackageCursor,
  type InventoryRow,
  listPackages,
  type PackageCursor,
  readInventory,
  storeInventory,
} from './repo.ts';
import {
  DeviceInventory,
  InventoryRequest,
  MAX_INVENTORY_BYTES,
  MAX_INVENTORY_PACKAGES,
  PackageList,
} from './schemas.ts';

const putInventory = defineRoute({
  method: 'put',
  path: '/agent/inventory',
  operationId: 'agentPutInventory',
  tags: ['Agent'],
  summary: "The device's software inventory: packages, OS, kernel, pending updates",
  description:
    'Sent when a check-in answers `inventory: "wanted"`. JSON, optionally with `Content-Encoding: gzip`; at most ' +
    `${MAX_INVENTORY_BYTES} bytes uncompressed and ${MAX_INVENTORY_PACKAGES} packages (413 \`payload_too_large\`). ` +
    '422 `inventory_hash_mismatch` when `hash` is not the hash of the body (nothing is stored). Devices with the ' +
    'same package list share one stored set. The secret is checked before the body.',
  access: 'agent',
  middleware: [liveAgentDevice(findAgentDevice)] as const,
  errors: ['invalid_agent_secret', 'device_deprovisioned', 'device_archived', ['inventory_hash_mismatch', 422]],
  request: {
    body: {
      required: true,
      content: { 'application/json': { schema: InventoryRequest } },
    },
  },
  responses: { 204: { description: 'Stored' } },
});

const getInventory = defineRoute({
  method: 'get',
  path: '/devices/{id}/inventory',
  operationId: 'getDeviceInventory',
  tags: ['Devices'],
  summary: "The device's software inventory as its agent last sent it",
  description: '404 `no_inventory` before its agent sent its first (it does at its next check-in).',
  operation: ops.getDeviceInventory,
  errors: ['not_found', 'no_inventory'],
  request: { params: IdParams },
  responses: { 200: json(DeviceInventory, 'The inventory') },
});

const PackagesQuery = PageQuery.extend({
  q: z.string().min(1).max(200).optional().openapi({
    description: 'Only packages whose name starts with this (exactly; `%`, `_`, `\\` literal).',
    example: 'libssl',
  }),
});

const listPackagesRoute = defineRoute({
  method: 'get',
  path: '/devices/{id}/packages',
  operationId: 'listDevicePackages',
  tags: ['Devices'],
  summary: "The device's installed packages, by name then architecture",
  description: '404 `no_inventory` before its agent sent its first inventory.',
  operation: ops.listDevicePackages,
  errors: ['not_found', 'no_inventory'],
  request: { params: IdParams, query: PackagesQuery },
  responses: { 200: json(PackageList, 'A page of packages') },
});

/** The read's answer, shared with the portal. */
function serializeInventory(row: InventoryRow): z.infer<typeof DeviceInventory> {
  return {
    os: { id: row.os_id, version_id: row.os_version_id, codename: row.os_codename },
    kernel: row.kernel,
    packages_count: row.packages_count,
    pending: row.pending,
    security_pending_count: row.security_pending_count,
    reboot_required: row.reboot_required,
    inventory_at: iso(row.inventory_at),
  };
}

/** A device's inventory with a page of its packages, for the portal's device page; null before its first. */
export interface InventoryPage {
  inventory: z.infer<typeof DeviceInventory>;
  packages: Array<z.infer<typeof PackageList>['items'][number]>;
  nextCursor: string | null;
}

export async function readInventoryPage(
  db: Db,
  deviceId: string,
  options: { q: string | undefined; cursor: string | undefined; limit: number },
): Promise<InventoryPage | null> {
  let row: InventoryRow;
  try {
    row = await readInventory(db, deviceId);
  } catch (err) {
    if (err instanceof ApiError && err.code === 'no_inventory') return null;
    throw err;
  }
  let after: PackageCursor | null = null;
  try {
    after = decodePackageCursor(options.cursor);
  } catch {
    // A cursor the page did not make: the first page.
  }
  const rows = await listPackages(db, deviceId, { q: options.q, after, limit: options.limit });
  const packages = rows.slice(0, options.limit);
  return {
    inventory: serializeInventory(row),
    packages,
    nextCursor: rows.length > options.limit ? encodePackageCursor(packages[packages.length - 1]!) : null,
  };
}

export function inventoryRoutes() {
  const router = newRouter();

  // Documented with its body; served without the JSON layers: the body may be gzip, and its
  // hash is computed over it as parsed.
  const { middleware, ...documented } = putInventory;
  router.openAPIRegistry.registerPath(documented);
  const served = { ...putInventory, hide: true, request: undefined, middleware: withoutBodyLayer(middleware) };
  router.openapi(served, async (c) => {
    const { raw, inventory } = await readInventoryBody(c);
    if (inventoryHash(raw) !== inventory.hash) {
      throw new ApiError(
        'inventory_hash_mismatch',
        'hash is not the SHA-256 of the inventory in its canonical form (RFC 8785, packages by name and ' +
          'architecture, pending by name); nothing was stored',
      );
    }
    await storeInventory(c.get('deps').sql, c.get('agentDevice').id, inventory);
    return c.body(null, 204);
  });

  router.openapi(getInventory, async (c) => {
    const { id } = c.req.valid('param');
    return c.json(serializeInventory(await readInventory(c.get('db'), id)), 200);
  });

  router.openapi(listPackagesRoute, async (c) => {
    const { id } = c.req.valid('param');
    const { q, limit, cursor } = c.req.valid('query');
    const rows = await listPackages(c.get('db'), id, { q, after: decodePackageCursor(cursor), limit });
    const items = rows.slice(0, limit);
    return c.json(
      { items, next_cursor: rows.length > limit ? encodePackageCursor(items[items.length - 1]!) : null },
      200,
    );
  });

  return router;
}
