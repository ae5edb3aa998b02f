/** Request and response schemas of ISO builds. */
import { z } from '@hono/zod-openapi';
import { credentialField } from '../access/viewer_view.ts';
import { Timestamp, Uuid } from '../http/openapi.ts';

const utf8Length = (s: string) => new TextEncoder().encode(s).length;

const WlanInput = z
  .strictObject({
    ssid: z
      .string()
      .refine((s) => utf8Length(s) >= 1 && utf8Length(s) <= 32, 'must be 1–32 bytes (UTF-8)')
      .openapi({ description: 'The network name, 1–32 bytes (UTF-8).', example: 'Verwaltung-WLAN' }),
    psk: z
      .string()
      // WPA2/WPA3-Personal passphrase; the message never repeats the value.
      .regex(/^[\x20-\x7e]{8,63}$/, 'must be 8–63 printable ASCII characters')
      .openapi({
        description: 'WPA passphrase, 8–63 printable ASCII characters. Never stored, never returned.',
        example: 'correct horse battery',
      }),
  })
  .openapi('IsoBuildWlan');

export const IsoBuildCreate = z
  .strictObject({
    wlan: WlanInput.optional().openapi({
      description:
        'WLAN the installed devices join. Written into the image as a NetworkManager profile; ' +
        'kept only encrypted in the job queue until the build ends, never in the build record or logs.',
    }),
    template_id: Uuid.optional().openapi({
      description:
        "Template the image installs (its backend picks the base image). Default: the enrollment session's " +
        'template, else none: the installer takes the default template the activation offers.',
    }),
    enrollment_session_id: Uuid.optional().openapi({
      description:
        'Enrollment session of the organization whose id the image carries as its credential instead of the ' +
        "organization's activation code; fixes the template to the session's own. Must be usable now " +
        '(not revoked, not expired, quota left).',
    }),
  })
  .openapi('IsoBuildCreate');

const IsoBuildStatus = z.enum(['pending', 'running', 'completed', 'failed']).openapi({
  description: '`failed` is the failure state (see `error`).',
});

export const IsoBuild = z
  .object({
    id: Uuid,
    organization_id: Uuid,
    status: IsoBuildStatus,
    progress: z
      .number()
      .int()
      .min(0)
      .max(100)
      .openapi({ description: '0–100 while running, 100 when completed.', example: 40 }),
    created_at: Timestamp,
    started_at: Timestamp.nullable(),
    finished_at: Timestamp.nullable().openapi({ description: 'Set when the build completed or failed.' }),
    expires_at: Timestamp.nullable().openapi({
      description: '`finished_at` + 7 days, set on success; the hourly sweep deletes the build then.',
    }),
    size_bytes: z.number().int().nullable().openapi({ example: 681574400 }),
    sha256: z.string().nullable().openapi({
      description: 'Hex SHA-256 of the image; also the download ETag.',
      example: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
    }),
    error: z.string().nullable().openapi({ description: 'Why the build failed (status `failed`).' }),
    template_id: Uuid.nullable().openapi({
      description: 'The template the image installs; null: the default one offered.',
    }),
    enrollment_session_id: credentialField(
      'enrollment_session_id',
      Uuid.nullable(),
      "The enrollment session whose id is the image's credential; null: the organization's activation code.",
    ),
    development_base: z.boolean().openapi({
      description:
        'True when the build host had no installer image for the backend (`ISO_BASE_IMAGE`, ' +
        '`ISO_BASE_IMAGE_<BACKEND>`) and used its development base image: the result is a valid ISO 9660 image ' +
        'that is NOT bootable, for development and tests only. Known once the build ran its script.',
      example: false,
    }),
  })
  .openapi('IsoBuild');

export type IsoBuildType = z.infer<typeof IsoBuild>;
