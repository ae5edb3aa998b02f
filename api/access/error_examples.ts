/**
 * The error examples of one operation in the OpenAPI document, made from its declaration
 * (method, path, request schemas, callers, tenant ids), so each example speaks of that
 * operation only: the 401 names the credentials it takes, the 400 is what its own schemas
 * answer to a bad input, the 404 names its own resources.
 */
import type { RouteConfig } from '@hono/zod-openapi';
import { type Access, credentialRequired, resourceLabel, type TenantIds } from './declaration.ts';
import { type ErrorCode, type ErrorExample, errorBody } from '../http/errors.ts';
import { invalidRequest } from '../http/openapi.ts';

export interface OperationFacts {
  method: string;
  /** The OpenAPI path (`/devices/{id}/catalog/{merkmal}`), without `/api/v1`. */
  path: string;
  access: Access;
  tenant?: TenantIds | undefined;
  request?: RouteConfig['request'];
}

/** Example ids: the first names the path's own resource, the second any other. */
export const EXAMPLE_IDS = ['3f1c2b7e-8d4a-4c55-9b1e-2a7d6c0f9e41', '8b0e6a52-1d3f-4e8a-a0c4-5f2b9d7e6c13'] as const;

/** A resource an operation names by id, and where the id travels. */
interface Named {
  label: string;
  /** The path parameter, or the query or body field, that carries the id. */
  name: string;
  /** Whether the id travels in the query or the body (the server's messages then name the field). */
  field: boolean;
  id: string;
}

/** The resources an operation names, its path's own first: the ones a 404 can be about. */
function namedResources(op: OperationFacts): Named[] {
  const named: Array<Omit<Named, 'id'>> = [];
  const segments = op.path.split('/');
  for (const [i, segment] of segments.entries()) {
    const param = /^\{(.+)\}$/.exec(segment)?.[1];
    if (param === undefined) continue;
    const kind = op.tenant?.param?.[param];
    if (kind) named.push({ label: resourceLabel[kind], name: param, field: false });
    // An id no organization owns (a template): named after its collection.
    else if (param === 'id') {
      named.push({ label: (segments[i - 1] ?? '').replace(/s$/, '').replaceAll('-', ' '), name: param, field: false });
    }
  }
  for (const [name, kind] of [...Object.entries(op.tenant?.query ?? {}), ...Object.entries(op.tenant?.json ?? {})]) {
    named.push({ label: resourceLabel[kind], name, field: true });
  }
  return named.map((n, i) => ({ ...n, id: i === 0 ? EXAMPLE_IDS[0] : EXAMPLE_IDS[1] }));
}

/** `org unit 3f1c… (oe_id)`: a resource as the server's messages name it. */
function nameOf(n: Named): string {
  return `${n.label} ${n.id}${n.field ? ` (${n.name})` : ''}`;
}

/** The examples of one code on this operation; none when the operation cannot answer it. */
export function operationExamples(op: OperationFacts, code: ErrorCode, status: number): ErrorExample[] {
  const named = namedResources(op);
  const [own, other] = named;
  const one = (message: string): ErrorExample[] => [{ key: code, summary: code, value: errorBody(code, message) }];
  switch (code) {
    case 'invalid_request': {
      const refusal = firstRefusal(op);
      return [
        {
          key: code,
          summary: code,
          description: `The answer to the ${refusal.target === 'json' ? 'body' : refusal.target} \`${refusal.input}\`.`,
          value: errorBody(code, refusal.message, refusal.details),
        },
      ];
    }
    case 'unauthorized':
      return one(credentialRequired(op.access));
    case 'forbidden':
      return one(
        op.access === 'operator'
          ? 'only the operator may make this call, not an organization API key'
          : 'an API key with role viewer may not make this call',
      );
    case 'not_found':
      if (named.length === 0) return one(`no resource at /api/v1${op.path.replaceAll(/\{[^}]+\}/g, EXAMPLE_IDS[0])}`);
      return named.map((n, i) => ({
        key: i === 0 ? code : `${code}_${n.name}`,
        summary: `${code}: ${n.label} (${n.name})`,
        value: errorBody(code, `${nameOf(n)} not found`),
      }));
    case 'organization_mismatch':
      if (!own || !other) return one('the resources named belong to different organizations');
      return one(
        other.field
          ? `${nameOf(other)} belongs to another organization`
          : `${nameOf(other)} and ${nameOf(own)} belong to different organizations`,
      );
    case 'device_archived':
      if (status === 409) {
        const device = named.find((n) => n.label === 'device')?.id ?? EXAMPLE_IDS[0];
        return one(`device ${device} is archived: ${archivedRefusal(op)}`);
      }
      return one(
        op.access === 'bootstrap'
          ? 'this device is archived and cannot bootstrap'
          : 'this device is archived; its agent may no longer call in',
      );
    case 'invalid_agent_secret':
      return one(
        op.path === '/agent/disk-keys'
          ? 'a valid agent secret or bootstrap token is required (Authorization: Bearer <agent_secret> or Bearer <bootstrap_token>)'
          : genericMessages[code],
      );
    case 'device_deprovisioned':
      if (status === 409) {
        const device = named.find((n) => n.label === 'device')?.id ?? EXAMPLE_IDS[0];
        return one(`device ${device} is deprovisioned: it takes no actions until an admin reprovisions it`);
      }
      return one(
        op.access === 'bootstrap'
          ? 'this device is deprovisioned; an admin must reprovision it first'
          : 'this device is deprovisioned; an admin must reprovision it before its agent can call in again',
      );
    case 'unknown_merkmal':
      return one(
        op.path.includes('{merkmal}')
          ? 'Merkmal "textverarbeitung" does not exist'
          : 'unknown Merkmal: textverarbeitung; nothing was stored',
      );
    case 'protected_org_unit':
      return one(
        `org unit ${EXAMPLE_IDS[0]} ("Neue Geräte") is protected: it cannot be ${op.method === 'delete' ? 'deleted' : 'renamed or moved'}`,
      );
    case 'org_unit_not_empty':
      return one(`org unit ${EXAMPLE_IDS[0]} still has 1 child unit(s) and 12 device(s)`);
    case 'org_unit_cycle':
      return one(
        `org unit ${EXAMPLE_IDS[1]} is a descendant of the unit: the move would make the unit its own ancestor`,
      );
    case 'name_taken':
      return one(
        op.path.includes('org-units')
          ? 'a unit named "GIS-Arbeitsplätze" already exists at that place in the tree (names ignore case)'
          : 'the organization already has a group named "GIS-Arbeitsplätze" (names ignore case)',
      );
    case 'iso_not_ready':
      return one(`ISO build ${EXAMPLE_IDS[0]} is running; only a completed build can be downloaded`);
    case 'service_unavailable':
      return one(
        op.access === 'agent'
          ? 'the service is busy; retry in 30 seconds'
          : 'the database is not available; retry later',
      );
    default:
      return one(genericMessages[code]);
  }
}

function archivedRefusal(op: OperationFacts): string {
  if (op.path.endsWith('/reprovision')) return 'it cannot be reprovisioned';
  if (op.path.endsWith('/deprovision')) return 'it cannot be deprovisioned';
  if (op.path.endsWith('/org-unit')) return 'it cannot be moved';
  if (op.path.includes('/groups/')) return 'it cannot join or leave a group';
  if (op.path.includes('/catalog/')) return 'its catalog selections cannot be changed';
  if (op.path.endsWith('/actions')) return 'it takes no actions';
  return 'it cannot be changed';
}

/** Messages that do not depend on the operation (the server's own words). */
const genericMessages: Record<ErrorCode, string> = {
  invalid_request: 'the request is not valid',
  unauthorized: credentialRequired(),
  invalid_agent_secret: 'a valid agent secret is required (Authorization: Bearer <agent_secret>)',
  invalid_bootstrap_token:
    'the bootstrap token is wrong, used or expired; an admin reprovisions the device to issue a new one',
  invalid_activation_code: 'the activation code is not valid, or the enrollment session is revoked, expired or used up',
  template_not_allowed: 'the enrollment session only offers template 0b8e7c1a-2f4d-4e6b-9a3c-5d7f1e2b4c6a',
  device_deprovisioned: 'the device is deprovisioned',
  device_archived: 'the device is archived',
  not_found: `no resource with id ${EXAMPLE_IDS[0]}`,
  agent_already_bootstrapped:
    'this device already holds an agent secret; an admin must reprovision it before it can bootstrap again',
  protected_org_unit: 'the org unit "Neue Geräte" is protected',
  org_unit_not_empty: 'the org unit still has devices or child org units',
  org_unit_cycle: 'the move would make the org unit its own ancestor',
  name_taken: 'the name is already taken there (names ignore case)',
  iso_not_ready: 'the ISO build is not completed',
  payload_too_large: 'the request body is larger than 1048576 bytes',
  headers_too_large: 'the request line and headers are larger than 16 KiB',
  range_not_satisfiable: 'the range starts past the end of the image (734003200 bytes)',
  unknown_merkmal: 'Merkmal "textverarbeitung" does not exist',
  not_in_catalog: 'Merkmal "basis" is not in the order catalog',
  invalid_event_type: 'an agent reports only applied, apply_failed, removed, remove_failed; nothing was stored',
  organization_mismatch: 'the resources named belong to different organizations',
  too_many_requests: 'too many failed activation attempts; retry in 412 seconds',
  forbidden: 'an API key with role viewer may not make this call',
  method_not_allowed: 'DELETE is not allowed here; allowed: GET, HEAD',
  device_already_enrolled:
    'this device is under management (it holds an agent secret); an admin must reprovision it before it is installed again',
  rollout_in_progress:
    'Rollout 5b0c7e1a-2f3d-4e6a-9c8b-1d2e3f4a5b6c is changing "libreoffice" here; pause and abort it, or wait until it completes',
  rollout_not_active:
    'Rollout 5b0c7e1a-2f3d-4e6a-9c8b-1d2e3f4a5b6c is completed; only a running or paused rollout can change',
  no_inventory:
    'device 0b8e7c1a-2f4d-4e6b-9a3c-5d7f1e2b4c6a has sent no inventory yet; its agent sends it at its next check-in',
  inventory_hash_mismatch:
    'hash is not the SHA-256 of the inventory in its canonical form (RFC 8785, packages by name and architecture, pending by name); nothing was stored',
  disk_encryption_unavailable:
    'disk encryption is not available: the service has no key for escrowed recovery keys (DISK_KEY_ENCRYPTION_KEY)',
  action_not_cancelable: `action ${EXAMPLE_IDS[0]} is running; only a pending or delivered action can be canceled`,
  action_not_pending: `action ${EXAMPLE_IDS[0]} is canceled; do not run it`,
  action_not_running: `action ${EXAMPLE_IDS[0]} is delivered; only a running action takes a result`,
  action_finished: `action ${EXAMPLE_IDS[0]} is succeeded; it takes no more results`,
  device_count_changed:
    'the scope has 41 devices now, not the 40 expected_devices confirmed; look again and confirm the new count',
  internal_error: 'an unexpected error occurred (request id 9f6c1e0a-4b2d-4c8e-a1f3-7d5b3e9c2a10)',
  service_unavailable: 'the database is not available; retry later',
};

/** Query and header values that fail most schemas: out of range, or no number, UUID or option. */
const badQueryValues = ['0', 'not-valid'];

interface Refusal {
  target: 'json' | 'query' | 'header';
  /** The bad input, as a client would send it: JSON for a body, `name=value` otherwise. */
  input: string;
  message: string;
  details: unknown;
}

/**
 * What the operation's own schemas answer to the first bad input found: an empty body
 * (the required fields missing), else a body field of the wrong type, else a bad query or
 * header value; else, since every route refuses a query parameter it does not name, that.
 */
function firstRefusal(op: OperationFacts): Refusal {
  const request = op.request;
  const media = request?.body?.content?.['application/json'];
  const bodySchema = media && 'schema' in media ? media.schema : undefined;
  if (isSchema(bodySchema)) {
    // `true` is the wrong type for nearly every field; an `id` is never the client's to set.
    const inputs = [{}, ...Object.keys(shapeOf(bodySchema)).map((name) => ({ [name]: true })), { id: EXAMPLE_IDS[0] }];
    for (const input of inputs) {
      const refusal = refusalOf('json', bodySchema, input, JSON.stringify(input));
      if (refusal) return refusal;
    }
  }
  for (const [target, schema] of [
    ['query', request?.query],
    ['header', request?.headers],
  ] as const) {
    if (!isSchema(schema)) continue;
    for (const name of Object.keys(shapeOf(schema))) {
      for (const value of badQueryValues) {
        const refusal = refusalOf(target, schema, { [name]: value }, `${name}=${value}`);
        if (refusal) return refusal;
      }
    }
  }
  const name = isSchema(request?.query) && 'serial' in shapeOf(request.query) ? 'seriall' : 'serial';
  const err = invalidRequest('query', [{ path: [name], message: 'not a parameter of this call' }]);
  return { target: 'query', input: `${name}=PF-0007`, message: err.message, details: err.details };
}

interface Schema {
  safeParse(input: unknown): { success: boolean; error?: { issues: Array<{ path: PropertyKey[]; message: string }> } };
}

function isSchema(value: unknown): value is Schema {
  return typeof (value as Schema | undefined)?.safeParse === 'function';
}

function shapeOf(schema: Schema): Record<string, unknown> {
  return (schema as { shape?: Record<string, unknown> }).shape ?? {};
}

function refusalOf(target: Refusal['target'], schema: Schema, value: unknown, input: string): Refusal | undefined {
  const result = schema.safeParse(value);
  if (result.success) return undefined;
  const err = invalidRequest(target, result.error?.issues ?? []);
  return { target, input, message: err.message, details: err.details };
}
