/** The inventory an agent sends (PUT /api/v1/agent/inventory) and what the admins read of it. */
import { z } from '@hono/zod-openapi';
import { collectionOf } from '../http/pagination.ts';
import { Timestamp } from '../http/openapi.ts';

/** The most packages an inventory may list (413 beyond). */
export const MAX_INVENTORY_PACKAGES = 20_000;
/** The most bytes an inventory may have, uncompressed (413 beyond). */
export const MAX_INVENTORY_BYTES = 16 * 1024 * 1024;

/** A field of dpkg's or apt's: printable text, no control characters. */
function field(max: number, min = 1) {
  return z
    .string()
    .min(min)
    .max(max)
    .refine((v) => !/\p{Cc}/u.test(v), 'no control characters');
}

const Os = z
  .strictObject({
    id: field(100).openapi({ description: '`ID` of /etc/os-release.', example: 'debian' }),
    version_id: field(100, 0).openapi({ description: '`VERSION_ID` ("" when it has none).', example: '12' }),
    codename: field(100, 0).openapi({ description: '`VERSION_CODENAME` ("" when it has none).', example: 'bookworm' }),
  })
  .openapi('InventoryOs');

const InventoryPackage = z
  .strictObject({
    name: field(200).openapi({ example: 'libssl3' }),
    version: field(200).openapi({ example: '3.0.15-1~deb12u1' }),
    arch: field(50).openapi({ example: 'amd64' }),
    source: field(200).openapi({ description: 'The source package.', example: 'openssl' }),
    source_version: field(200).openapi({ example: '3.0.15-1~deb12u1' }),
  })
  .openapi('InventoryPackage');

const PendingUpdate = z
  .strictObject({
    name: field(200).openapi({ example: 'libssl3' }),
    installed: field(200, 0).openapi({
      description: 'The installed version ("" for a new package).',
      example: '3.0.15-1~deb12u1',
    }),
    candidate: field(200).openapi({ example: '3.0.15-1~deb12u2' }),
    security: z.boolean().openapi({ description: "The candidate comes from the distribution's security suite." }),
  })
  .openapi('PendingUpdate');

const LuksVolume = z
  .strictObject({
    device_path: field(4096),
    luks_uuid: field(100),
    keyslots: z.array(z.number().int().min(0).max(31)).max(32),
  })
  .openapi('InventoryLuksVolume');

export const InventoryRequest = z
  .strictObject({
    hash: z
      .string()
      .regex(/^[0-9a-f]{64}$/, 'SHA-256 as 64 lowercase hex digits')
      .openapi({
        description:
          'SHA-256, lowercase hex, of the UTF-8 bytes of this body without `hash` in the RFC 8785 canonical form ' +
          '(keys sorted, no whitespace), with `packages` sorted by name then `arch` and `pending` by name (code ' +
          'point order, entries with equal keys in the order sent). The check-in sends it as `inventory_hash`.',
      }),
    os: Os,
    kernel: field(200).openapi({ description: '`uname -r`.', example: '6.1.0-28-amd64' }),
    packages: z
      .array(InventoryPackage)
      .max(MAX_INVENTORY_PACKAGES)
      .openapi({
        description: `Every installed package (dpkg-query), at most ${MAX_INVENTORY_PACKAGES}; one entry per name and architecture.`,
      }),
    pending: z.array(PendingUpdate).max(MAX_INVENTORY_PACKAGES).openapi({
      description: 'The upgrades apt would install, from the lists the agent has.',
    }),
    reboot_required: z.boolean(),
    luks: z.array(LuksVolume).max(64).optional().openapi({
      description: 'Each encrypted volume and its used key slots (`cryptsetup luksDump`; no key material).',
    }),
  })
  .openapi('AgentInventoryRequest');

export type InventoryRequestType = z.infer<typeof InventoryRequest>;

export const DeviceInventory = z
  .object({
    os: Os.openapi({ description: 'As the agent reported it.' }),
    kernel: z.string().openapi({ example: '6.1.0-28-amd64' }),
    packages_count: z.number().int().openapi({ example: 1874 }),
    pending: z.array(PendingUpdate).openapi({ description: 'The pending updates, by name.' }),
    security_pending_count: z.number().int().openapi({ description: 'How many of `pending` are security updates.' }),
    reboot_required: z.boolean(),
    inventory_at: Timestamp.openapi({ description: 'When the service received this inventory.' }),
  })
  .openapi('DeviceInventory');

export const PackageList = collectionOf(InventoryPackage, 'DevicePackageList');
