/** The Device object. Never carries agent_secret_hash. */
import { z } from '@hono/zod-openapi';
import { credentialField } from '../access/viewer_view.ts';
import { Timestamp, Uuid } from '../http/openapi.ts';

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
    created_at: Timestamp,
  })
  .openapi('Device');

export type DeviceType = z.infer<typeof Device>;
