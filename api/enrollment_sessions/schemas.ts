/** The EnrollmentSession object and its create body. */
import { z } from '@hono/zod-openapi';
import { FutureTimestamp, Timestamp, Uuid } from '../http/openapi.ts';

const MAX_SESSION_DEVICES = 100_000;

export const EnrollmentSession = z
  .object({
    id: Uuid.openapi({ description: 'Also the credential an installer presents as `code` at activation.' }),
    organization_id: Uuid,
    template_id: Uuid.openapi({ description: 'The one template the session offers.' }),
    expires_at: Timestamp,
    max_devices: z.number().int().openapi({ example: 25 }),
    devices_used: z
      .number()
      .int()
      .openapi({ description: 'Successful activations so far; never above max_devices.', example: 3 }),
    revoked_at: Timestamp.nullable(),
    created_at: Timestamp,
  })
  .openapi('EnrollmentSession');

export const EnrollmentSessionCreate = z
  .strictObject({
    template_id: Uuid.openapi({ description: 'An existing template (404 `not_found` otherwise).' }),
    expires_at: FutureTimestamp.openapi({
      description: 'When the session stops working; must be in the future (and before the year 10000, UTC).',
      example: '2026-12-31T23:59:59.000Z',
    }),
    max_devices: z
      .number()
      .int()
      .min(1)
      .max(MAX_SESSION_DEVICES)
      .openapi({ description: `How many activations the session allows, 1–${MAX_SESSION_DEVICES}.`, example: 25 }),
  })
  .openapi('EnrollmentSessionCreate');

export type EnrollmentSessionCreateInput = z.infer<typeof EnrollmentSessionCreate>;
