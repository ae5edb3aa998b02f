/** The OrgUnit object and its request bodies. */
import { z } from '@hono/zod-openapi';
import { Timestamp, Uuid } from '../http/openapi.ts';

const name = z.string().trim().min(1).max(200).openapi({ example: 'Schule Nord' });

const ARCHIVE_RULE =
  'Days a device of this unit or below may stay stale (no check-in for three poll intervals) before an hourly ' +
  'sweep archives it (audited as `device.archive` by the system with `details.reason: "stale"`, webhook ' +
  '`device.archived` with `reason: "stale"`). `null`: the parent unit decides; `null` all the way up means never.';

const archiveStaleAfterDays = z
  .number()
  .int()
  .min(1)
  .max(3650)
  .nullable()
  .openapi({
    description: `1–3650, or \`null\` to inherit. ${ARCHIVE_RULE}`,
    example: 90,
  });

export const OrgUnit = z
  .object({
    id: Uuid,
    organization_id: Uuid,
    parent_id: Uuid.nullable().openapi({ description: 'The parent org unit; `null` at the top level.' }),
    name: z.string().openapi({ example: 'Schule Nord' }),
    protected: z
      .boolean()
      .openapi({ description: 'True only for "Neue Geräte", which cannot be deleted, renamed or moved.' }),
    archive_stale_after_days: z
      .number()
      .int()
      .nullable()
      .openapi({ description: `This unit's own value (\`null\`: inherited). ${ARCHIVE_RULE}` }),
    devices: z.number().int().min(0).openapi({
      description:
        'Devices filed directly in this unit (their `oe_id` is this unit, not a unit below it), archived ones not counted.',
      example: 12,
    }),
    devices_total: z
      .number()
      .int()
      .min(0)
      .openapi({
        description:
          "Devices in this unit's subtree (the unit and every unit below it), archived ones not counted: what " +
          '`GET /organizations/{id}/devices?oe_id=` of this unit lists.',
        example: 240,
      }),
    created_at: Timestamp,
  })
  .openapi('OrgUnit');

export const OrgUnitCreate = z
  .strictObject({
    name,
    parent_id: Uuid.nullable()
      .optional()
      .openapi({ description: 'An org unit of the same organization; absent or `null` = top level.' }),
    archive_stale_after_days: archiveStaleAfterDays.optional(),
  })
  .openapi('OrgUnitCreate');

export const OrgUnitPatch = z
  .strictObject({
    name: name.optional(),
    parent_id: Uuid.nullable().optional().openapi({
      description:
        'Moves the unit: an org unit of the same organization that is not the unit itself or one of its descendants; `null` = top level.',
    }),
    archive_stale_after_days: archiveStaleAfterDays.optional(),
  })
  .openapi('OrgUnitPatch');

export type OrgUnitType = z.infer<typeof OrgUnit>;
export type OrgUnitCreateInput = z.infer<typeof OrgUnitCreate>;
export type OrgUnitPatchInput = z.infer<typeof OrgUnitPatch>;
