/** The ApiKey object and its create body. */
import { z } from '@hono/zod-openapi';
import { FutureTimestamp, Timestamp, Uuid } from '../http/openapi.ts';

const ApiKeyRole = z.enum(['admin', 'viewer']).openapi({
  description:
    '`admin`: everything the operator can do for this organization. `viewer`: every read of the organization ' +
    'except the activation code, the ISO download, the API keys and the audit log.',
});

export const ApiKey = z
  .object({
    id: Uuid,
    organization_id: Uuid,
    name: z.string().openapi({ example: 'Kundenportal' }),
    role: ApiKeyRole,
    prefix: z
      .string()
      .openapi({ description: 'The first 12 characters of the key, to recognise it.', example: 'fpk_Q2x8dRw1' }),
    created_at: Timestamp,
    expires_at: Timestamp.nullable(),
    last_used_at: Timestamp.nullable().openapi({ description: 'Moves at most once a minute.' }),
    revoked_at: Timestamp.nullable(),
  })
  .openapi('ApiKey');

export const CreatedApiKey = ApiKey.extend({
  key: z.string().openapi({ description: 'The key itself: shown this once, stored only as a hash.' }),
}).openapi('CreatedApiKey');

export const ApiKeyCreate = z
  .strictObject({
    name: z.string().trim().min(1).max(200).openapi({ example: 'Kundenportal' }),
    role: ApiKeyRole,
    expires_at: FutureTimestamp.optional().openapi({ description: 'When the key stops working; never when absent.' }),
  })
  .openapi('ApiKeyCreate');
