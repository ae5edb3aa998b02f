/** The Template object (Bereitstellungsvorlage). */
import { z } from '@hono/zod-openapi';
import { Uuid } from '../http/openapi.ts';

const DiskEncryption = z
  .object({
    type: z.literal('luks2'),
    unlock: z.enum(['tpm2', 'passphrase']).openapi({
      description:
        '`tpm2`: unlocked by the TPM (clevis, PCR 7) where the device has one, else by the recovery key at boot; ' +
        '`passphrase`: by the recovery key at boot.',
    }),
  })
  .openapi('DiskEncryption');

export const Partitioning = z
  .object({
    scheme: z.string().openapi({ example: 'single' }),
    root_filesystem: z.string().openapi({ example: 'ext4' }),
    encryption: DiskEncryption.nullable().openapi({
      description: 'How the disk is encrypted: an object exactly when `scheme` is `luks-lvm`, else null.',
    }),
  })
  .openapi('Partitioning');

export const Template = z
  .object({
    id: Uuid,
    name: z.string().openapi({ example: 'Debian Standard' }),
    backend: z.string().openapi({ example: 'debian' }),
    workspace: z.string().openapi({ example: 'standard' }),
    partitioning: Partitioning,
    installation: z
      .record(z.string(), z.unknown())
      .openapi({ description: 'Installation directives for the installer.' }),
    is_default: z.boolean().openapi({ description: 'True for the one default template of its backend.' }),
  })
  .openapi('Template');

export type TemplateType = z.infer<typeof Template>;
