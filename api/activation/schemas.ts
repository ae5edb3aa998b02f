/** Request and response schemas of the installer's handshake: activate and resolve. */
import { z } from '@hono/zod-openapi';
import { Hardware } from '../devices/schemas.ts';
import { Uuid } from '../http/openapi.ts';
import { Partitioning, Template } from '../templates/schemas.ts';

/** The credential: the classic code (any case, dashes or spaces optional) or an enrollment session id. */
const code = z
  .string()
  .trim()
  .min(1)
  .max(64)
  .openapi({
    description:
      'The classic activation code of the organization (matched case-insensitively), or the id (a UUID) of an ' +
      'enrollment session. A UUID is only ever looked up as an enrollment session.',
    example: 'K7M2Q-4XW9D-PZ3RT-8HBNC',
  });

// No control characters; surrounding blanks (as DMI tables pad them) are trimmed.
const printable = /^\P{Cc}+$/u;

/** A host name: dot-separated labels of letters, digits, `-` and `_`, none starting or ending with `-`. */
export const HOSTNAME =
  /^[A-Za-z0-9](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9])?)*$/;

export const ActivateBody = z
  .strictObject({
    code,
    serial: z
      .string()
      .trim()
      .min(1)
      .max(128)
      .regex(printable, 'must be printable characters')
      // The document states the pattern without the `u` flag that the zod regex carries.
      .openapi({
        description: "The device's hardware serial, 1–128 printable characters.",
        pattern: '^\\P{Cc}+$',
        example: 'PF3XK2QZ',
      }),
    hostname: z.string().max(253).regex(HOSTNAME, 'must be a host name').nullable().optional().openapi({
      description: 'Host name to record on the device; absent or null keeps the stored one.',
      example: 'arbeitsplatz-017',
    }),
    // A union, not `.nullable()`: the document drops `null` from a nullable component reference.
    hardware: z.union([Hardware, z.null()]).optional(),
  })
  .openapi('ActivateRequest');

export type ActivateInput = z.infer<typeof ActivateBody>;

export const Activation = z
  .object({
    organization_id: Uuid,
    device_id: Uuid,
    templates: z.array(Template).openapi({
      description: 'Classic code: every template. Enrollment session: only its template, with `is_default: true`.',
    }),
    default_template_id: Uuid.openapi({
      description: 'Classic code: the default template of the preferred backend. Enrollment session: its template.',
    }),
  })
  .openapi('Activation');

export type ActivationType = z.infer<typeof Activation>;

export const ResolveBody = z
  .strictObject({
    code,
    device_id: Uuid.openapi({ description: 'The `device_id` returned by activate.' }),
  })
  .openapi('ResolveRequest');

export type ResolveInput = z.infer<typeof ResolveBody>;

const MerkmalBlueprint = z
  .object({
    merkmal: z.string().openapi({ example: 'firefox' }),
    ansible_role: z.string().openapi({ example: 'firefox' }),
  })
  .openapi('MerkmalBlueprint');

export const RuntimeBlueprint = z
  .object({
    device_id: Uuid,
    organization_id: Uuid,
    template: z.object({ id: Uuid, name: z.string().openapi({ example: 'Debian Standard' }) }),
    workspace: z.object({ key: z.string().openapi({ example: 'standard' }), name: z.string() }),
    backend: z.object({
      key: z.string().openapi({ example: 'debian' }),
      name: z.string(),
      distribution: z.string().openapi({ example: 'Debian 12' }),
    }),
    blueprints: z.array(MerkmalBlueprint).openapi({
      description:
        "The workspace's Merkmale resolved to Ansible roles for the template's backend, ordered by Merkmal key.",
    }),
    installation: z
      .record(z.string(), z.unknown())
      .openapi({ description: 'Installation directives of the template.' }),
    partitioning: Partitioning,
    disk_encryption: z
      .object({
        install_passphrase: z.string().openapi({
          description:
            'A one-time passphrase of 32 random bytes (base64url, 43 characters) that the installer encrypts the ' +
            'disk with; the late command replaces it with the escrowed recovery key. Created for this resolve, ' +
            'returned only here and never stored.',
          example: 'q3v9Zr0kH1mXyT4bW8nP2cL6sD5fG7jK0aE9uR1oI3w',
        }),
      })
      .nullable()
      .openapi({ description: "Present when the template's partitioning is encrypted, else null." }),
    agent: z.object({
      base_url: z.string().openapi({ example: 'https://fleet.example.org' }),
      device_id: Uuid,
      bootstrap_token: z.string().openapi({
        description:
          'One-time token for POST /api/v1/agent/bootstrap, valid 7 days. Returned only here; every resolve ' +
          'of the device voids the earlier one.',
      }),
    }),
  })
  .openapi('RuntimeBlueprint');

export type RuntimeBlueprintType = z.infer<typeof RuntimeBlueprint>;
