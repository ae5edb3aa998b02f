/** The Group object and its request bodies. */
import { z } from '@hono/zod-openapi';
import { Timestamp, Uuid } from '../http/openapi.ts';

const name = z.string().trim().min(1).max(200).openapi({ example: 'Lehrerzimmer' });

export const Group = z
  .object({
    id: Uuid,
    organization_id: Uuid,
    name: z.string().openapi({ example: 'Lehrerzimmer' }),
    created_at: Timestamp,
  })
  .openapi('Group');

export const GroupCreate = z.strictObject({ name }).openapi('GroupCreate');
export const GroupPatch = z.strictObject({ name: name.optional() }).openapi('GroupPatch');

export type GroupType = z.infer<typeof Group>;
export type GroupCreateInput = z.infer<typeof GroupCreate>;
export type GroupPatchInput = z.infer<typeof GroupPatch>;
