/** The Action object, its create body, the agent's result, and each type's parameters with their defaults. */
import { Buffer } from 'node:buffer';
import { z } from '@hono/zod-openapi';
import { jsonObject } from '../http/json_value.ts';
import { Timestamp, Uuid } from '../http/openapi.ts';
import { collectionOf, PageQuery } from '../http/pagination.ts';

const ACTION_TYPES = ['reboot', 'apply_now', 'apply_updates', 'script'] as const;
export type ActionType = (typeof ACTION_TYPES)[number];

const ACTION_STATUSES = ['pending', 'delivered', 'running', 'succeeded', 'failed', 'expired', 'canceled'] as const;
export type ActionStatus = (typeof ACTION_STATUSES)[number];

/** A script's text and an output as kept: at most 64 KiB of UTF-8. */
export const MAX_SCRIPT_BYTES = 65_536;
export const MAX_OUTPUT_BYTES = 65_536;

export const DEFAULT_EXPIRY_SECONDS = 7 * 86_400;
export const MIN_EXPIRY_SECONDS = 60;
export const MAX_EXPIRY_SECONDS = 30 * 86_400;

const RebootParameters = z
  .strictObject({
    delay_seconds: z.number().int().min(0).max(3600).optional().openapi({
      description: 'Seconds before the reboot, 0–3600 (default 60): logged-in users are warned.',
      default: 60,
      example: 60,
    }),
    message: z
      .string()
      .max(200)
      .refine((m) => !/\p{Cc}/u.test(m), 'must be one line without control characters')
      .optional()
      .openapi({ description: 'Shown to logged-in users, at most 200 characters.', example: 'Neustart für Updates' }),
  })
  .openapi('RebootParameters');

const ApplyNowParameters = z.strictObject({}).openapi('ApplyNowParameters', {
  description: 'None: a full Ansible apply at once.',
});

const ApplyUpdatesParameters = z
  .strictObject({
    security_only: z.boolean().optional().openapi({
      description: 'Only the security updates (default true); false: every pending upgrade.',
      default: true,
    }),
  })
  .openapi('ApplyUpdatesParameters');

const scriptBytes = (text: string) => Buffer.byteLength(text, 'utf8');

const ScriptParameters = z
  .strictObject({
    interpreter: z.enum(['sh', 'bash', 'python3']).openapi({ example: 'sh' }),
    script: z
      .string()
      .min(1, 'must not be empty')
      .refine((s) => scriptBytes(s) <= MAX_SCRIPT_BYTES, `must be at most ${MAX_SCRIPT_BYTES} bytes of UTF-8`)
      .openapi({
        description: `The script, run as root; 1 to ${MAX_SCRIPT_BYTES} bytes of UTF-8. Never shown to a viewer.`,
        example: 'systemctl restart cups',
      }),
    timeout_seconds: z.number().int().min(1).max(3600).optional().openapi({
      description: 'Killed after this many seconds (then `failed`), 1–3600 (default 600).',
      default: 600,
      example: 600,
    }),
  })
  .openapi('ScriptParameters');

/** Each type's parameters as a request gives them. */
const parametersSchemas = {
  reboot: RebootParameters,
  apply_now: ApplyNowParameters,
  apply_updates: ApplyUpdatesParameters,
  script: ScriptParameters,
} as const;

/** The parameters with every default filled in, as every read and the check-in show them. */
export function withDefaults(type: ActionType, given: Record<string, unknown>): Record<string, unknown> {
  switch (type) {
    case 'reboot':
      return { delay_seconds: 60, ...given };
    case 'apply_now':
      return { ...given };
    case 'apply_updates':
      return { security_only: true, ...given };
    case 'script':
      return { timeout_seconds: 600, ...given };
  }
}

const Expiry = z.iso.datetime({ offset: true }).openapi({
  description:
    'Not started by then, the action is `expired` and never runs. At least 60 s and at most 30 days ahead; ' +
    'default 7 days after creation.',
  example: '2026-11-28T13:38:00.000Z',
});

const ParametersField = z
  .record(z.string(), z.unknown())
  .optional()
  .openapi({
    description:
      "The type's parameters (unknown ones are 400): `reboot` `{ delay_seconds? (0–3600, default 60), message? " +
      '(at most 200 characters, one line, shown to logged-in users) }`; `apply_now` `{}`; `apply_updates` ' +
      '`{ security_only? (default true) }`; `script` `{ interpreter: "sh" | "bash" | "python3", script (1–65536 ' +
      'bytes of UTF-8), timeout_seconds? (1–3600, default 600) }`. Left out, every default applies (a `script` ' +
      'needs its own).',
    example: { interpreter: 'sh', script: 'systemctl restart cups' },
  });

/** The parameters checked against the schema of their type, issues under `parameters`. */
function checkParameters(
  body: { type: ActionType; parameters?: Record<string, unknown> | undefined },
  ctx: z.RefinementCtx,
) {
  if (body.parameters === undefined) {
    if (body.type === 'script') {
      ctx.addIssue({ code: 'custom', path: ['parameters'], message: 'a script needs its interpreter and script' });
    }
    return;
  }
  const checked = parametersSchemas[body.type].safeParse(body.parameters);
  if (checked.success) return;
  for (const issue of checked.error.issues) {
    ctx.addIssue({ code: 'custom', path: ['parameters', ...issue.path.map(String)], message: issue.message });
  }
}

export const ActionCreate = z
  .strictObject({
    type: z.enum(ACTION_TYPES).openapi({ example: 'script' }),
    parameters: ParametersField,
    expires_at: Expiry.optional(),
  })
  .superRefine(checkParameters)
  .openapi('ActionCreate', {
    description: '`type` with its `parameters`; `expires_at` optional.',
    example: { type: 'script', parameters: { interpreter: 'sh', script: 'systemctl restart cups' } },
  });

/** What a rollout asks of each device in its rings: the same type and parameters, without an expiry. */
export const DeviceActionSpec = z
  .strictObject({
    type: z.enum(ACTION_TYPES).openapi({ example: 'apply_updates' }),
    parameters: ParametersField,
  })
  .superRefine(checkParameters)
  .openapi('DeviceActionSpec', {
    description:
      'The action each device of an opened ring gets, as `POST /devices/{id}/actions` takes it (without ' +
      '`expires_at`: each expires 7 days after its ring opened).',
    example: { type: 'apply_updates', parameters: { security_only: true } },
  });

export type DeviceActionSpecBody = z.infer<typeof DeviceActionSpec>;

/** A rollout's device action as its reads show it: every default filled in, a script null for a viewer. */
export const DeviceActionEcho = z
  .object({
    type: z.enum(ACTION_TYPES),
    parameters: z.record(z.string(), z.unknown()).openapi({
      description: "The type's parameters with every default filled in; a viewer reads `script` as null.",
      example: { security_only: true },
    }),
  })
  .openapi('RolloutDeviceAction');

const ActionCreatedBy = z
  .union([
    z.object({ type: z.literal('operator') }),
    z.object({ type: z.literal('api_key'), api_key_id: Uuid, name: z.string() }),
    z.object({ type: z.literal('system') }),
  ])
  .openapi('ActionCreatedBy', {
    description: 'Who asked for it, as the audit log names an actor.',
    example: { type: 'operator' },
  });

const ActionResult = z
  .object({
    exit_code: z.number().int().openapi({ example: 0 }),
    output: z
      .string()
      .nullable()
      .openapi({
        description: `stdout and stderr together, the last ${MAX_OUTPUT_BYTES} bytes; null for a viewer.`,
        example: 'Reading package lists...\n',
      }),
    duration_ms: z.number().int().openapi({ example: 5230 }),
    details: z.record(z.string(), z.unknown()).openapi({
      description:
        'What the type reports: `apply_updates` `upgraded: [{ name, from, to }]`, `reboot_required`; a `reboot` ' +
        '`booted_at`; an action the agent could not finish `interrupted: true`. `{}` when none.',
      example: {},
    }),
  })
  .openapi('ActionResult');

export const Action = z
  .object({
    id: Uuid,
    organization_id: Uuid,
    device_id: Uuid,
    type: z.enum(ACTION_TYPES),
    parameters: z.record(z.string(), z.unknown()).openapi({
      description:
        "The type's parameters with every default filled in (as `ActionCreate` describes them); a viewer reads " +
        '`script` as null.',
      example: { interpreter: 'sh', script: 'systemctl restart cups', timeout_seconds: 600 },
    }),
    status: z.enum(ACTION_STATUSES).openapi({
      description:
        '`pending` (waiting for the device), `delivered` (in a check-in answer), `running` (the agent started it), ' +
        '`succeeded` (exit code 0), `failed`, `expired` (not started by `expires_at`: never runs), `canceled`.',
      example: 'pending',
    }),
    created_by: ActionCreatedBy,
    created_at: Timestamp,
    expires_at: Timestamp,
    delivered_at: Timestamp.nullable(),
    started_at: Timestamp.nullable(),
    finished_at: Timestamp.nullable().openapi({
      description: 'When it succeeded, failed, expired (its `expires_at`) or was canceled.',
    }),
    result: ActionResult.nullable().openapi({ description: "The agent's result; null until it reported one." }),
    rollout_id: Uuid.nullable().openapi({ description: 'The rollout that queued it, or null.' }),
  })
  .openapi('Action');

export type ActionObject = z.infer<typeof Action>;

export const ActionQuery = PageQuery.extend({
  status: z.enum(ACTION_STATUSES).optional().openapi({ description: 'Only actions in this status.' }),
});

export const ActionList = collectionOf(Action, 'ActionList');

/** What the check-in hands the agent of each pending or delivered action. */
export const DeliveredAction = z
  .object({
    id: Uuid,
    type: z.enum(ACTION_TYPES),
    parameters: z.record(z.string(), z.unknown()).openapi({
      description: "The type's parameters with every default filled in.",
      example: { delay_seconds: 60 },
    }),
    expires_at: Timestamp.openapi({ description: 'Not started by then, the action is refused (409) and never runs.' }),
  })
  .openapi('DeliveredAction');

export type DeliveredActionType = z.infer<typeof DeliveredAction>;

export const ActionResultRequest = z
  .strictObject({
    exit_code: z.number().int().min(-2147483648).max(2147483647).openapi({
      description: '0: `succeeded`; anything else `failed`.',
      example: 0,
    }),
    // Longer outputs are kept as their last 64 KiB; the body's 1 MiB bounds what is sent.
    output: z.string().openapi({
      description: `stdout and stderr together; kept as its last ${MAX_OUTPUT_BYTES} bytes of UTF-8.`,
      example: 'done\n',
    }),
    duration_ms: z.number().int().min(0).max(2_147_483_647).openapi({ example: 5230 }),
    details: jsonObject({ maxBytes: 65_536 })
      .optional()
      .openapi({
        description:
          '`apply_updates`: `upgraded: [{ name, from, to }]`, `reboot_required`; `reboot`: `booted_at`; ' +
          '`interrupted: true` for an action started and never finished (power loss). At most 64 KiB as JSON.',
        example: { upgraded: [{ name: 'openssl', from: '3.0.15-1~deb12u1', to: '3.0.16-1~deb12u1' }] },
      }),
  })
  .openapi('ActionResultRequest');

export type ActionResultBody = z.infer<typeof ActionResultRequest>;
