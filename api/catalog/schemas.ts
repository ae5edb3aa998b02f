/** Schemas of the order catalog: effective states, overrides, selection bodies. */
import { z } from '@hono/zod-openapi';
import { jsonObject, MAX_JSON_DEPTH } from '../http/json_value.ts';
import { Convergence } from '../devices/schemas.ts';
import { Timestamp } from '../http/openapi.ts';
import { collectionOf } from '../http/pagination.ts';

export const Optionen = jsonObject().openapi({
  type: 'object',
  additionalProperties: true,
  description:
    'Per-order options (a JSON object nested at most ' +
    MAX_JSON_DEPTH +
    ' levels, without lone UTF-16 surrogates ' +
    "in strings or keys), passed through to the agent in the check-in's `auftraege`.",
  example: { sprache: 'de' },
});

const OverrideState = z.enum(['present', 'absent']);

const Origin = z.enum(['workspace', 'oe', 'gruppe', 'geraet']).openapi({
  description:
    'Where the effective state comes from: the workspace default, the nearest org unit with an override, ' +
    "the majority of the device's groups, or the device's own override.",
});

/** The agent's last report of a Merkmal (§22): a catalog item's, a rollout device's. */
export const Reported = z
  .object({
    event: z.enum(['applied', 'apply_failed', 'removed', 'remove_failed']),
    at: Timestamp,
    detail: z.unknown().openapi({ description: "The report entry's `detail`; null without one.", example: null }),
  })
  .nullable()
  .openapi({
    description: "The agent's last report for this Merkmal (whenever it was); null when it never reported one.",
    example: { event: 'applied', at: '2026-11-26T08:15:00.000Z', detail: null },
  });

const CatalogItem = z
  .object({
    merkmal: z.string().openapi({ example: 'libreoffice' }),
    name: z.string().openapi({ example: 'LibreOffice' }),
    kategorie: z.string().openapi({ example: 'app-store' }),
    state: OverrideState,
    origin: Origin,
    optionen: Optionen.openapi({ description: 'From the override that decided (`{}` for the workspace default).' }),
    reported: Reported,
    convergence: Convergence,
  })
  .openapi('CatalogItem');

export const DeviceCatalog = collectionOf(
  CatalogItem,
  'DeviceCatalog',
  "Every catalog Merkmal of the device's backend, ordered by key.",
);

export const CatalogOverride = z
  .object({
    merkmal: z.string().openapi({ example: 'libreoffice' }),
    state: OverrideState,
    optionen: Optionen,
  })
  .openapi('CatalogOverride');

export const CatalogOverrideList = collectionOf(
  CatalogOverride,
  'CatalogOverrideList',
  'The overrides set at this scope, ordered by Merkmal key.',
);

export const SelectionBody = z
  .strictObject({
    optionen: Optionen.optional().openapi({
      description: 'Options of this order; `{}` when absent. Must be a JSON object.',
    }),
  })
  .openapi('SelectionBody');

export type CatalogOverrideType = z.infer<typeof CatalogOverride>;

const ExplainStep = z
  .discriminatedUnion('step', [
    z.object({
      step: z.literal('workspace'),
      state: OverrideState.openapi({
        description: "The workspace default: present when the Merkmal is in the device's workspace.",
      }),
    }),
    z.object({
      step: z.literal('oe'),
      org_unit_id: z.string().uuid(),
      name: z.string(),
      state: OverrideState.nullable().openapi({ description: 'The override at this unit; null where it has none.' }),
    }),
    z.object({
      step: z.literal('gruppe'),
      present: z.number().int(),
      absent: z.number().int(),
      groups: z.array(z.object({ group_id: z.string().uuid(), name: z.string(), state: OverrideState })),
    }),
    z.object({
      step: z.literal('rollout'),
      rollout_id: z.string().uuid(),
      ring: z.number().int().openapi({ description: "The device's ring in the rollout (0 first)." }),
      ring_open: z.boolean().openapi({
        description:
          'Whether that ring is open: then the change is in place for the device; else it holds the device back.',
      }),
      state: OverrideState.openapi({ description: 'The state the rollout gives the device once its ring is open.' }),
    }),
    z.object({
      step: z.literal('geraet'),
      state: OverrideState.nullable().openapi({ description: "The device's own override; null without one." }),
    }),
  ])
  .openapi('ExplainStep');

export const CatalogExplanation = z
  .object({
    merkmal: z.string().openapi({ example: 'libreoffice' }),
    state: OverrideState,
    origin: Origin,
    optionen: Optionen.openapi({ description: 'From the override that decided (`{}` for the workspace default).' }),
    steps: z.array(ExplainStep).openapi({
      description:
        "The whole resolution in order: `workspace`; one `oe` step per org unit from the device's own up to the top; " +
        '`gruppe` with the votes of every group of the device that overrides the Merkmal (groups by name); ' +
        '`rollout` when a running or paused rollout of the Merkmal holds the device back or has moved it; `geraet`.',
    }),
  })
  .openapi('CatalogExplanation');
