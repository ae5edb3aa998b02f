/** Escrowed disk recovery keys: the list item, the escrow and the reveal. */
import { z } from '@hono/zod-openapi';
import { Timestamp, Uuid } from '../http/openapi.ts';

/**
 * systemd's recovery key format (src/shared/recovery-key.c): 32 random bytes as 64 modhex
 * characters (alphabet `cbdefghijklnrtuv`), a dash after every 8.
 */
const RECOVERY_KEY = /^[cbdefghijklnrtuv]{8}(?:-[cbdefghijklnrtuv]{8}){7}$/;

const diskKeyStatuses = ['escrowed', 'verified', 'missing', 'rotated'] as const;

export const DiskKey = z
  .object({
    id: Uuid,
    luks_uuid: z.string().openapi({ example: '967783a6-b6eb-49f9-94d1-0fd3055ec27e' }),
    keyslot: z.number().int().openapi({ example: 1 }),
    escrowed_at: Timestamp,
    verified_at: Timestamp.nullable().openapi({ description: "When an inventory last showed the key's slot." }),
    revealed_at: Timestamp.nullable().openapi({ description: 'The last reveal; a revealed key is rotated.' }),
    status: z.enum(diskKeyStatuses).openapi({
      description:
        '`escrowed`: held, its slot not yet seen in an inventory; `verified`: its slot seen in the last ' +
        'inventory; `missing`: the inventory shows the volume without its slot (or not at all); `rotated`: the ' +
        'agent escrowed a new key in its place after a reveal.',
    }),
  })
  .openapi('DiskKey');

export type DiskKeyType = z.infer<typeof DiskKey>;

const LuksUuid = z
  .string()
  .regex(/^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/, 'must be a LUKS UUID')
  .transform((v) => v.toLowerCase())
  .openapi({ example: '967783a6-b6eb-49f9-94d1-0fd3055ec27e' });

export const EscrowRequest = z
  .strictObject({
    device_path: z
      .string()
      .min(2)
      .max(256)
      .regex(/^\/[A-Za-z0-9._/:+-]+$/, 'must be an absolute path (a block device, e.g. /dev/nvme0n1p3)')
      .openapi({ example: '/dev/nvme0n1p3' }),
    luks_uuid: LuksUuid,
    keyslot: z.number().int().min(0).max(31).openapi({ example: 1 }),
    recovery_key: z.string().regex(RECOVERY_KEY, 'must be 8 groups of 8 characters of cbdefghijklnrtuv').openapi({
      description: "The recovery key in systemd's format: 8 groups of 8 modhex characters joined by dashes.",
      example: 'fhjgbkrt-cdevnilu-rtuvcbde-fghijkln-rtuvcbde-fghijkln-rtuvcbde-fghijkln',
    }),
    replaces: Uuid.optional().openapi({
      description: 'The key this one replaces after a reveal (`disk_key_rotation.key_id`): it becomes `rotated`.',
    }),
  })
  .openapi('DiskKeyEscrowRequest');

export type EscrowInput = z.infer<typeof EscrowRequest>;

export const RevealRequest = z
  .strictObject({
    reason: z.string().trim().min(3).max(500).openapi({
      description: 'Why the key is read (3–500 characters): kept in the audit log and sent with the webhook.',
      example: 'Ticket 4711: the TPM no longer unlocks after a firmware update',
    }),
  })
  .openapi('DiskKeyRevealRequest');

export const RevealResponse = z
  .object({
    recovery_key: z
      .string()
      .openapi({ example: 'fhjgbkrt-cdevnilu-rtuvcbde-fghijkln-rtuvcbde-fghijkln-rtuvcbde-fghijkln' }),
  })
  .openapi('DiskKeyReveal');

/** One encrypted volume as an inventory reports it (from `cryptsetup luksDump`, no key material). */
const LuksVolume = z
  .strictObject({
    device_path: z.string().min(1).max(256),
    luks_uuid: LuksUuid,
    keyslots: z.array(z.number().int().min(0).max(31)).max(32),
  })
  .openapi('LuksVolume');

export type LuksVolumeType = z.infer<typeof LuksVolume>;

/** What the check-in answers while a revealed key waits for its rotation. */
export const DiskKeyRotation = z
  .object({
    key_id: Uuid,
    luks_uuid: z.string(),
    recovery_key: z.string().openapi({
      description: 'The revealed (old) key, which authorizes adding the new one and is removed after its escrow.',
    }),
  })
  .openapi('DiskKeyRotation');
