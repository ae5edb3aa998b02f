/**
 * The installer's handshake: POST /activate and POST /templates/{id}/resolve.
 * No header authentication: the credential travels in the body, and failed credential
 * checks are rate-limited per client address (rate_limit.ts).
 */
import { ErrorBody, errorExamples } from '../http/errors.ts';
import { IdParams, json, jsonBody } from '../http/openapi.ts';
import { defineRoute, newRouter } from '../access/route.ts';
import { activationRateLimit, guessLimitOf } from './rate_limit.ts';
import { Activation, ActivateBody, ResolveBody, RuntimeBlueprint } from './schemas.ts';
import * as service from './service.ts';

const tags = ['Activation'];

/** 429 with its Retry-After header (the error helper knows no headers). */
const tooManyRequests = {
  429: {
    description:
      'Error: `too_many_requests`. Too many unknown credentials from this client address in the window ' +
      '(ACTIVATION_MAX_FAILURES per ACTIVATION_FAILURE_WINDOW_SECONDS). Answered before any credential is ' +
      'checked, for right and wrong credentials alike; also to a guess that would pass the limit, and to an ' +
      'attempt whose address reached the limit while it was under way (nothing written).',
    headers: {
      'Retry-After': {
        description: 'Seconds until the address may try again.',
        schema: { type: 'integer' as const, minimum: 1 },
      },
    },
    content: { 'application/json': { schema: ErrorBody, examples: errorExamples('too_many_requests') } },
  },
};

const activateRoute = defineRoute({
  method: 'post',
  path: '/activate',
  operationId: 'activate',
  tags,
  summary: 'Activate a device with the classic code or an enrollment session id',
  description:
    'A UUID `code` is looked up only as an enrollment session; anything else as the classic activation code ' +
    '(case-insensitive). The device is loaded by (organization, serial) among non-archived devices, or ' +
    'created, and assigned to the org unit "Neue Geräte" in both cases; `hostname` and `hardware`, when ' +
    'sent, replace the stored ones. An enrollment session counts every successful activation against its ' +
    'quota (also of a device it activated before), and never beyond it however many activations race. ' +
    'Unknown code, or a revoked, expired or used-up session: 403 `invalid_activation_code`, nothing written; ' +
    'only an unknown code counts towards the failure limit of the client address (a known session does ' +
    'not, and successes never wait for or count against it).',
  access: 'installer',
  middleware: [activationRateLimit] as const,
  errors: ['invalid_activation_code', 'device_already_enrolled'],
  request: { body: jsonBody(ActivateBody) },
  responses: { 200: json(Activation, 'The device and the templates the installer may offer'), ...tooManyRequests },
});

const resolveRoute = defineRoute({
  method: 'post',
  path: '/templates/{id}/resolve',
  operationId: 'resolveTemplate',
  tags,
  summary: 'Resolve the chosen template into the Runtime Blueprint',
  description:
    'Checks the credential again (a revoked or expired session is refused; the quota is not counted again). ' +
    "The device must be a non-archived device of the credential's organization, else 404 `not_found` " +
    '(an archived device is gone for the installer: activating its serial again creates a new device). An ' +
    'enrollment session allows only its own template (403 `template_not_allowed`); an unknown template is ' +
    "404 `not_found`. Records the assignment (the device's `template_id` and `backend`) and issues a fresh " +
    'one-time `bootstrap_token`, valid 7 days, that voids every earlier one of the device. A template with ' +
    '`partitioning.encryption` also gets a one-time `disk_encryption.install_passphrase`, never stored; while the ' +
    'service has no `DISK_KEY_ENCRYPTION_KEY` such a resolve is 422 `disk_encryption_unavailable`.',
  access: 'installer',
  middleware: [activationRateLimit] as const,
  errors: [
    'invalid_activation_code',
    'template_not_allowed',
    'not_found',
    'device_already_enrolled',
    'disk_encryption_unavailable',
  ],
  request: { params: IdParams, body: jsonBody(ResolveBody) },
  responses: { 200: json(RuntimeBlueprint, 'The Runtime Blueprint of the device'), ...tooManyRequests },
});

export function activationRoutes() {
  return newRouter()
    .openapi(activateRoute, async (c) => {
      const result = await service.activate(c.get('deps').sql, c.req.valid('json'), guessLimitOf(c));
      return c.json(result, 200);
    })
    .openapi(resolveRoute, async (c) => {
      const { id } = c.req.valid('param');
      const { sql, config } = c.get('deps');
      const blueprint = await service.resolve(
        sql,
        id,
        c.req.valid('json'),
        config.publicBaseUrl,
        guessLimitOf(c),
        config.diskKeyEncryptionKey !== undefined,
      );
      // The install passphrase is in it: no cache keeps it.
      c.header('Cache-Control', 'no-store');
      return c.json(blueprint, 200);
    });
}
