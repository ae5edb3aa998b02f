/** The Rollout object, its create body and its list's query. */
import { z } from '@hono/zod-openapi';
import { Optionen, Reported } from '../catalog/schemas.ts';
import { Convergence } from '../devices/schemas.ts';
import { DeviceActionEcho, DeviceActionSpec } from '../actions/schemas.ts';
import { Timestamp, Uuid } from '../http/openapi.ts';
import { collectionOf, PageQuery } from '../http/pagination.ts';

const ROLLOUT_STATUSES = ['running', 'paused', 'completed', 'aborted'] as const;
export type RolloutStatus = (typeof ROLLOUT_STATUSES)[number];

export const DEFAULT_RINGS = [10, 50, 100] as const;
export const DEFAULT_MAX_FAILURE_RATIO = 0.1;
export const DEFAULT_MIN_REPORTED_RATIO = 0.9;
export const DEFAULT_SOAK_SECONDS = 3600;
const MAX_SOAK_SECONDS = 604_800;

const Scope = z.enum(['org_unit', 'group']).openapi({
  description: "`org_unit`: the unit's whole subtree; `group`: the group's members.",
  example: 'org_unit',
});

const Action = z.enum(['select', 'deselect', 'unset']).openapi({
  description: 'What the rollout writes at the scope once it completes, as a selection there would.',
  example: 'select',
});

const Status = z.enum(ROLLOUT_STATUSES).openapi({
  description:
    '`running`: judged after every report of the open ring and at least every 30 s. `paused`: by hand or by the ' +
    'failure ratio; the open rings keep the change, no further ring opens. `completed`: the change is written at ' +
    'the scope. `aborted`: every device of an opened ring got its previous state back.',
});

const PausedReason = z.enum(['failure_ratio', 'manual']).nullable().openapi({
  description: 'Why it is paused; null unless `status` is `paused`.',
});

const Rings = z
  .array(z.number().int().min(1).max(100))
  .min(1)
  .max(10)
  .refine((rings) => rings.every((p, i) => i === 0 || p > rings[i - 1]!), 'must be strictly ascending')
  .refine((rings) => rings[rings.length - 1] === 100, 'the last ring must be 100')
  .openapi({
    description:
      'Cumulative percentages of the devices the change alters: ring k holds about `rings[k] - rings[k-1]` percent. ' +
      '1 to 10 integers from 1 to 100, strictly ascending, the last 100.',
    example: [10, 50, 100],
  });

const Ratio = z.number().min(0).max(1);

const CreatedBy = z
  .union([
    z.object({ type: z.literal('operator') }),
    z.object({ type: z.literal('api_key'), api_key_id: Uuid, name: z.string() }),
  ])
  .openapi({ description: 'Who created it, as the audit log names an actor.', example: { type: 'operator' } });

const WaitingFor = z
  .object({
    reason: z.enum(['no_live_devices', 'soak', 'reports']).openapi({
      description:
        'The first condition of the next ring the ring does not meet yet, in this order: `no_live_devices` (none of ' +
        'its devices is active: all stale, or not bootstrapped yet), `soak` (its `soak_seconds` have not passed), ' +
        '`reports` (fewer than `needed` of its active devices reported).',
    }),
    until: Timestamp.optional().openapi({ description: 'With `soak`: when the soak ends.' }),
    reported: z.number().int().min(0).openapi({
      description: 'Its active devices that reported (converged or failed) since the change reached them.',
      example: 3,
    }),
    needed: z
      .number()
      .int()
      .min(0)
      .openapi({
        description:
          'The reports it takes in all (not those still missing): max(min(5, active), ' +
          'ceil(`min_reported_ratio` × active)).',
        example: 5,
      }),
  })
  .nullable()
  .openapi('RolloutRingWaitingFor', {
    description:
      'What the current ring of a running or paused rollout waits for before the next ring opens (a ring passes on ' +
      'evidence, never on silence); null for every other ring, for a rollout that ended, and once the ring meets ' +
      'every condition (the next judging opens the next ring, or pauses for failures). A ring none of whose ' +
      'devices is still managed (none fell into it, or all were archived or deprovisioned) passes at once.',
    example: { reason: 'reports', reported: 3, needed: 5 },
  });

const RingDetail = z
  .object({
    ring: z.number().int().openapi({ description: 'The ring, 0 first.', example: 0 }),
    percent: z.number().int().openapi({ description: 'Its cumulative percentage.', example: 10 }),
    devices: z.number().int().openapi({ description: 'The devices put in this ring at creation.', example: 31 }),
    opened_at: Timestamp.nullable().openapi({ description: 'When it opened; null while closed.' }),
    converged: z.number().int().openapi({
      description:
        "Of its devices that are active (not archived, deprovisioned or stale): converged on the rollout's Merkmal.",
      example: 27,
    }),
    pending: z.number().int().openapi({ description: 'Of those: not reported since the change.', example: 3 }),
    failed: z.number().int().openapi({ description: 'Of those: reported a failure since the change.', example: 1 }),
    waiting_for: WaitingFor,
  })
  .openapi('RolloutRing');

export const Rollout = z
  .object({
    id: Uuid,
    organization_id: Uuid,
    scope: Scope,
    scope_id: Uuid.openapi({ description: 'The org unit or the group.' }),
    merkmal: z
      .string()
      .nullable()
      .openapi({ description: 'The Merkmal; null for a device action.', example: 'libreoffice' }),
    action: Action.nullable(),
    optionen: Optionen.nullable().openapi({
      description: 'The options a `select` or `deselect` writes (`{}` for `unset`); null for a device action.',
    }),
    device_action: DeviceActionEcho.nullable().openapi({
      description: 'The action each device of an opened ring gets (`rollout_id` set on it); null for a catalog change.',
    }),
    rings: z.array(z.number().int()).openapi({ example: [10, 50, 100] }),
    max_failure_ratio: z.number().openapi({ example: 0.1 }),
    min_reported_ratio: z.number().openapi({ example: 0.9 }),
    soak_seconds: z.number().int().openapi({ example: 3600 }),
    status: Status,
    paused_reason: PausedReason,
    current_ring: z.number().int().openapi({ description: 'The last ring opened.', example: 0 }),
    created_by: CreatedBy,
    created_at: Timestamp,
    completed_at: Timestamp.nullable().openapi({ description: 'When it completed or was aborted; else null.' }),
    rings_detail: z.array(RingDetail),
  })
  .openapi('Rollout');

export type RolloutType = z.infer<typeof Rollout>;

export const RolloutCreate = z
  .strictObject({
    scope: Scope,
    scope_id: Uuid.openapi({ description: 'An org unit (`scope: "org_unit"`) or a group of the organization.' }),
    merkmal: z.string().min(1).max(200).optional().openapi({
      description: 'A catalog Merkmal key (with `action`), or none for a `device_action`.',
      example: 'libreoffice',
    }),
    action: Action.optional(),
    optionen: Optionen.optional().openapi({
      description: 'Options of the order for `select` and `deselect`; `{}` when absent. `unset` takes none.',
    }),
    device_action: DeviceActionSpec.optional().openapi({
      description:
        'Instead of `merkmal` and `action`: a device action (`POST /devices/{id}/actions`) each device of the scope ' +
        "gets when its ring opens. Its devices are the scope's devices not archived or deprovisioned at creation.",
    }),
    expected_devices: z
      .number()
      .int()
      .min(0)
      .max(10_000_000)
      .optional()
      .openapi({
        description:
          'With a `device_action`: the count of devices the admin confirmed; another count now is 409 ' +
          '`device_count_changed`. Required for a `script`.',
        example: 40,
      }),
    rings: Rings.optional().openapi({ default: [...DEFAULT_RINGS] }),
    max_failure_ratio: Ratio.optional().openapi({
      description:
        'The rollout pauses by itself when the open ring has failed > 0 and failed / reported above this ' +
        '(reported: converged + failed, at least min(5, ring size)). 0 to 1.',
      default: DEFAULT_MAX_FAILURE_RATIO,
      example: DEFAULT_MAX_FAILURE_RATIO,
    }),
    min_reported_ratio: Ratio.optional().openapi({
      description:
        "The next ring opens only when this share of the open ring's live devices, and at least min(5, live), " +
        'reported; a ring without a live device waits. 0 to 1.',
      default: DEFAULT_MIN_REPORTED_RATIO,
      example: DEFAULT_MIN_REPORTED_RATIO,
    }),
    soak_seconds: z.number().int().min(0).max(MAX_SOAK_SECONDS).optional().openapi({
      description: 'How long a ring stays open before the next may open, 0 to 604800 (a week).',
      default: DEFAULT_SOAK_SECONDS,
      example: DEFAULT_SOAK_SECONDS,
    }),
  })
  .superRefine((body, ctx) => {
    const issue = (path: string, message: string) => ctx.addIssue({ code: 'custom', path: [path], message });
    if (body.device_action !== undefined) {
      for (const field of ['merkmal', 'action', 'optionen'] as const) {
        if (body[field] !== undefined) issue(field, 'a rollout of a device action changes no Merkmal');
      }
      if (body.device_action.type === 'script' && body.expected_devices === undefined) {
        issue('expected_devices', 'a script rollout needs the count of devices the admin confirmed');
      }
      return;
    }
    if (body.merkmal === undefined) issue('merkmal', 'a Merkmal (with action), or a device_action');
    if (body.action === undefined) issue('action', 'select, deselect or unset (with merkmal), or a device_action');
    if (body.expected_devices !== undefined) issue('expected_devices', 'only with a device_action');
    // As a selection: an unset takes no body, so no options.
    if (body.action === 'unset' && body.optionen !== undefined) issue('optionen', 'an unset takes no optionen');
  })
  .openapi('RolloutCreate', {
    description: 'A Merkmal with its `action` (and `optionen`), or a `device_action`.',
    example: {
      scope: 'org_unit',
      scope_id: '3f1c2b7e-8d4a-4c55-9b1e-2a7d6c0f9e41',
      merkmal: 'libreoffice',
      action: 'select',
      rings: [10, 50, 100],
    },
  });

export type RolloutCreateBody = z.input<typeof RolloutCreate>;

export const RolloutQuery = PageQuery.extend({
  status: Status.optional().openapi({ description: 'Only rollouts in this status.' }),
});

export const RolloutList = collectionOf(Rollout, 'RolloutList');

/** A ring's number in a query: one decimal digit (a rollout has at most 10 rings), else the schema refuses it. */
const ringDigit = (value: unknown) => (typeof value === 'string' && /^[0-9]$/.test(value) ? Number(value) : value);

export const RolloutDeviceQuery = PageQuery.extend({
  ring: z
    .preprocess(ringDigit, z.number().int().min(0).max(9))
    .optional()
    .openapi({ type: 'integer', minimum: 0, maximum: 9, description: 'Only the devices of this ring (0 first).' }),
  convergence: Convergence.optional().openapi({
    description:
      "Only the devices with this convergence on the rollout's Merkmal (a ring not opened yet has none; stale " +
      'devices are listed, marked `stale`, though the ring figures do not count them).',
  }),
});

const RolloutDevice = z
  .object({
    device_id: Uuid,
    serial_number: z.string().openapi({ description: "The device's serial.", example: 'PF3XK2QZ' }),
    hostname: z.string().nullable().openapi({ example: 'arbeitsplatz-017' }),
    ring: z.number().int().openapi({ description: 'Its ring, 0 first.', example: 0 }),
    convergence: Convergence.nullable().openapi({
      description:
        "On the rollout's Merkmal, since its last change (as a device's catalog says it); null while its ring is not " +
        'opened, and for a device that has no convergence (`enrolled`, `deprovisioned`, `archived`).',
    }),
    reported: Reported,
    stale: z.boolean().openapi({
      description: 'No check-in for three poll intervals: the ring figures and the judge do not count it.',
      example: false,
    }),
  })
  .openapi('RolloutDevice');

export type RolloutDeviceType = z.infer<typeof RolloutDevice>;

export const RolloutDeviceList = collectionOf(RolloutDevice, 'RolloutDeviceList');
