/** The Device object (never carries agent_secret_hash), and the hardware a device reports. */
import { z } from '@hono/zod-openapi';
import { credentialField } from '../access/viewer_view.ts';
import { jsonObject, MAX_JSON_DEPTH } from '../http/json_value.ts';
import { Timestamp, Uuid } from '../http/openapi.ts';

export const Convergence = z.enum(['converged', 'pending', 'failed']).openapi('Convergence', {
  description:
    "Of a Merkmal, since the last change of its state (the device's bootstrap when there was none): `failed` when " +
    'the last report is `apply_failed` or `remove_failed`; `converged` when it is `applied` and the state is ' +
    '`present`, or `removed` and the state is `absent`; else `pending` (nothing reported since, or a report for the ' +
    'other state). Of a device: the worst over its catalog, `failed` > `pending` > `converged`.',
  example: 'converged',
});

export const DeviceStatus = z
  .enum(['archived', 'deprovisioned', 'enrolled', 'stale', 'active'])
  .openapi('DeviceStatus', {
    description:
      'The first that holds: `archived`, `deprovisioned`, `enrolled` (its agent holds no secret yet), `stale` (no ' +
      'check-in for three poll intervals, `3 × AGENT_POLL_INTERVAL_SECONDS`, since its last check-in or its ' +
      'bootstrap), `active`.',
    example: 'active',
  });

export const Device = z
  .object({
    id: Uuid,
    organization_id: Uuid,
    serial: z.string().openapi({ example: 'PF3XK2QZ' }),
    hostname: z.string().nullable().openapi({ example: 'arbeitsplatz-017' }),
    oe_id: Uuid.openapi({ description: 'The single org unit of the device.' }),
    group_ids: z.array(Uuid),
    template_id: Uuid.openapi({
      description: 'The assigned template; the default template of the preferred backend until one is resolved.',
    }),
    backend: z.string().openapi({ example: 'debian' }),
    enrollment_session_id: credentialField(
      'enrollment_session_id',
      Uuid.nullable(),
      'The session it was activated with.',
    ),
    deprovisioned_at: Timestamp.nullable(),
    archived_at: Timestamp.nullable(),
    agent_secret_issued_at: Timestamp.nullable(),
    agent_last_checkin: Timestamp.nullable(),
    agent_version: z.string().nullable().openapi({
      description: 'The `agent_version` the last check-in that sent one sent; null before the first.',
      example: '1.4.2',
    }),
    created_at: Timestamp,
    status: DeviceStatus,
    convergence: Convergence.nullable().openapi({
      description:
        'The worst convergence over its catalog (`failed` > `pending` > `converged`); null while `enrolled`, ' +
        '`deprovisioned` or `archived`.',
    }),
  })
  .openapi('Device');

const count = z.number().int().min(0);

export const FleetStatus = z
  .object({
    devices: z.object({ total: count, enrolled: count, active: count, stale: count, deprovisioned: count }).openapi({
      description: 'The devices that are not archived, by status (`total` is their sum).',
      example: { total: 1250, enrolled: 12, active: 1180, stale: 41, deprovisioned: 17 },
    }),
    merkmale: z
      .array(
        z.object({
          merkmal: z.string(),
          name: z.string(),
          present: count,
          absent: count,
          converged: count,
          pending: count,
          failed: count,
        }),
      )
      .openapi({
        description:
          'Every catalog Merkmal, by key, over the `active` and `stale` devices that have it in their catalog: how ' +
          'many are meant to have it (`present`) or not (`absent`), and how many of these converged, are pending or ' +
          'failed (`present + absent = converged + pending + failed`).',
        example: [
          {
            merkmal: 'libreoffice',
            name: 'LibreOffice',
            present: 800,
            absent: 421,
            converged: 1190,
            pending: 24,
            failed: 7,
          },
        ],
      }),
    updates: z.object({ security_pending: count, reboot_required: count, vulnerable_high: count }).openapi({
      description:
        'Of the devices counted above that sent an inventory: how many have pending security updates, need a ' +
        'reboot, and have a `high` or `critical` CVE.',
      example: { security_pending: 312, reboot_required: 57, vulnerable_high: 140 },
    }),
    disk_encryption: z.object({ encrypted: count, escrowed: count, missing: count, unencrypted: count }).openapi({
      description:
        'The devices that are not archived, by their escrowed disk recovery keys (rotated keys left out): ' +
        '`encrypted` have any, of them `escrowed` have one the service holds for a slot in use (escrowed or ' +
        'verified) and `missing` only keys whose slot the last inventory no longer shows; `unencrypted` have ' +
        'none (`encrypted + unencrypted = devices.total`).',
      example: { encrypted: 1200, escrowed: 1198, missing: 2, unencrypted: 50 },
    }),
  })
  .openapi('FleetStatus');

export type DeviceType = z.infer<typeof Device>;

/** A list of devices: a collection that can also be walked back, page by page. */
export function deviceListOf(name: string) {
  return z
    .object({
      items: z.array(Device),
      next_cursor: z.string().nullable().openapi({ description: 'The page after this one; null on the last page.' }),
      prev_cursor: z
        .string()
        .nullable()
        .openapi({
          description:
            'The page before this one (as `cursor`), in the same order and of the same `limit`; null on the first page. ' +
            'Walking back to the start when devices came or went since answers the first page, whole.',
        }),
    })
    .openapi(name);
}

/** Largest hardware object accepted, as UTF-8 JSON text: up to 64 KiB. */
const MAX_HARDWARE_BYTES = 64 * 1024;

export const Hardware = jsonObject({ maxBytes: MAX_HARDWARE_BYTES }).openapi('Hardware', {
  description:
    'What the device reports about its hardware: a JSON object of at most 64 KiB, nested at most ' +
    `${MAX_JSON_DEPTH} levels, without lone UTF-16 surrogates in strings or keys. Replaces the stored one.`,
  example: { cpu: 'Intel Core i5-8365U', memory_mb: 16384, disks: [{ model: 'SAMSUNG MZVLB512', size_gb: 512 }] },
});
