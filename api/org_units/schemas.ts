/** The OrgUnit object and its request bodies. */
import { z } from '@hono/zod-openapi';
import { Timestamp, Uuid } from '../http/openapi.ts';

const name = z.string().trim().min(1).max(200).openapi({ example: 'Schule Nord' });

export const OrgUnit = z
  .object({
    id: Uuid,
    organization_id: Uuid,
    parent_id: Uuid.nullable().openapi({ description: 'The parent org unit; `null` at the top level.' }),
    name: z.string().openapi({ example: 'Schule Nord' }),
    protected: z
      .boolean()
      .openapi({ description: 'True only for "Neue Geräte", which cannot be deleted, renamed or moved.' }),
    created_at: Timestamp,
  })
  .openapi('OrgUnit');

export const OrgUnitCreate = z
  .strictObject({
    name,
    parent_id: Uuid.nullable()
      .optional()
      .openapi({ description: 'An org unit of the same organization; absent or `null` = top level.' }),
  })
  .openapi('OrgUnitCreate');

export const OrgUnitPatch = z
  .strictObject({
    name: name.optional(),
    parent_id: Uuid.nullable().optional().openapi({
      description:
        'Moves the unit: an org unit of the same organization that is not the unit itself or one of its descendants; `null` = top level.',
    }),
  })
  .openapi('OrgUnitPatch');

export type OrgUnitType = z.infer<typeof OrgUnit>;
export type OrgUnitCreateInput = z.infer<typeof OrgUnitCreate>;
export type OrgUnitPatchInput = z.infer<typeof OrgUnitPatch>;
