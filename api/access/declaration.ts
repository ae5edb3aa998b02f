/**
 * What every operation declares once, for the API route and the portal page that make it:
 * who may call it (`Access`), whose ids it takes (`TenantIds`), which audit action it
 * records (`AuditAction`). The access middleware, the operation's OpenAPI `security`, the
 * portal's checks and the generated auth matrix test all derive from that one declaration.
 * Also the caller and the audit entry those checks speak of; nothing here imports the app.
 */
import { isUuid } from '../http/uuid.ts';

/**
 * - `public`: anyone (health, the OpenAPI document).
 * - `installer`: the activation credential travels in the body (activate, resolve).
 * - `bootstrap`: the device id and one-time bootstrap token travel in the body.
 * - `agent`: `Authorization: Bearer <agent_secret>`.
 * - `operator`: the operator token (`ADMIN_TOKEN`) only.
 * - `org_admin`: the operator, or an organization key with role `admin`.
 * - `org_viewer`: the operator, or any organization key (`admin` or `viewer`).
 */
export type Access = 'public' | 'installer' | 'bootstrap' | 'agent' | 'operator' | 'org_admin' | 'org_viewer';

/** The kinds of resource whose organization an organization key must own. */
export type ResourceKind =
  | 'organization'
  | 'device'
  | 'org_unit'
  | 'group'
  | 'enrollment_session'
  | 'iso_build'
  | 'api_key'
  | 'webhook'
  | 'webhook_delivery'
  | 'rollout'
  | 'disk_key'
  | 'action';

/**
 * Which ids of a request name resources of an organization, by where they travel: path
 * parameters, query parameters and top-level body fields. With an organization key, an id
 * of another organization (or of nothing) is 404 `not_found` before the handler runs.
 * A path parameter that names no organization's resource (a Merkmal key, a template) is
 * declared `null`, so every path parameter of an organization route is accounted for.
 */
export interface TenantIds {
  param?: Record<string, ResourceKind | null>;
  query?: Record<string, ResourceKind>;
  json?: Record<string, ResourceKind>;
}

/** The callers a declaration lets through, as the OpenAPI extension `x-callers` lists them. */
export type CallerName = 'operator' | 'admin' | 'viewer' | 'agent' | 'installer' | 'anyone';

export function callersOf(access: Access): CallerName[] {
  switch (access) {
    case 'public':
      return ['anyone'];
    case 'installer':
    case 'bootstrap':
      return ['installer'];
    case 'agent':
      return ['agent'];
    case 'operator':
      return ['operator'];
    case 'org_admin':
      return ['operator', 'admin'];
    case 'org_viewer':
      return ['operator', 'admin', 'viewer'];
  }
}

/**
 * The 401 `unauthorized` message of a route: it names the credentials the route takes, so
 * the answer and the OpenAPI example of the route say the same. Without a route (an
 * unknown path) any of them.
 */
export function credentialRequired(access?: Access): string {
  return access === 'operator'
    ? 'a valid operator token is required (Authorization: Bearer <ADMIN_TOKEN>)'
    : 'a valid operator token or organization API key is required (Authorization: Bearer <ADMIN_TOKEN> or Bearer fpk_…)';
}

/** True for the routes that take the operator token or an organization key. */
export function takesOrgCredential(access: Access): access is 'operator' | 'org_admin' | 'org_viewer' {
  return access === 'operator' || access === 'org_admin' || access === 'org_viewer';
}

export const resourceLabel: Record<ResourceKind, string> = {
  organization: 'organization',
  device: 'device',
  org_unit: 'org unit',
  group: 'group',
  enrollment_session: 'enrollment session',
  iso_build: 'ISO build',
  api_key: 'API key',
  webhook: 'webhook',
  webhook_delivery: 'webhook delivery',
  rollout: 'rollout',
  disk_key: 'disk key',
  action: 'action',
};

/**
 * Every action the audit log records: the writes of the operator and organization keys,
 * the reads that hand out a credential, and what the service does by itself.
 */
export const auditActions = [
  'organization.create',
  'organization.update',
  'activation_code.read',
  'activation_code.rotate',
  'enrollment_session.create',
  'enrollment_session.revoke',
  'device.deprovision',
  'device.reprovision',
  'device.archive',
  'device.move',
  'org_unit.create',
  'org_unit.update',
  'org_unit.delete',
  'group.create',
  'group.update',
  'group.delete',
  'group.add_device',
  'group.remove_device',
  'catalog.select',
  'catalog.deselect',
  'catalog.unset',
  'iso_build.create',
  'iso_build.download',
  'api_key.create',
  'api_key.revoke',
  'webhook.create',
  'webhook.delete',
  'webhook.test',
  'rollout.create',
  'rollout.pause',
  'rollout.resume',
  'rollout.abort',
  // A read that hands out a secret (a disk's recovery key), with the admin's reason.
  'disk_key.reveal',
  // Device actions: a script's SHA-256 and size, never its text.
  'action.create',
  'action.cancel',
  // The delivery job's, with actor `system`: a webhook whose deliveries failed for days.
  'webhook.disable',
] as const;

export type AuditAction = (typeof auditActions)[number];

/**
 * One operation's declaration: the API route is defined with it (`defineRoute`) and the
 * portal page that makes the same change or read is checked with it (`postWrite`,
 * `portalRead`), so the two cannot disagree.
 * - `tenant`: the ids an organization key must own.
 * - `audit`: on a write, its action; on a read, the read hands out a credential and is
 *   recorded too.
 */
export interface Operation {
  readonly access: 'operator' | 'org_admin' | 'org_viewer';
  readonly tenant?: Readonly<TenantIds>;
  readonly audit?: AuditAction;
}

/** Declares an operation; the object is frozen, so every user shares the very same declaration. */
export function operation<const O extends Operation>(declaration: O): Readonly<O> {
  return Object.freeze(declaration);
}

/** Who is calling an operator or organization route, or a portal page. */
export type Caller =
  | { type: 'operator' }
  | { type: 'api_key'; apiKeyId: string; name: string; organizationId: string; role: 'admin' | 'viewer' };

/** Who an audit event names as the actor: never the key itself. */
export type Actor = { type: 'operator' } | { type: 'api_key'; api_key_id: string; name: string } | { type: 'system' };

export function actorOf(caller: Caller): Actor {
  return caller.type === 'operator'
    ? { type: 'operator' }
    : { type: 'api_key', api_key_id: caller.apiKeyId, name: caller.name };
}

/** What a write reports of its change; the access layer adds action, actor and request id. */
export interface AuditEntry {
  organizationId: string;
  targetType: string;
  targetId: string | null;
  /** What changed, never a secret (no code, key, token or WLAN data). */
  details?: Record<string, unknown>;
}

/** The ids of one request, each with the kind of resource it names. */
export type Ids = ReadonlyArray<readonly [ResourceKind, string]>;

/** A request's values by where they travel, as a declaration's `tenant` names them. */
export interface RequestValues {
  param?: Record<string, string | undefined>;
  query?: Record<string, string | undefined>;
  json?: unknown;
}

/** Every value a declaration names in a request, with its kind, as the request carries it. */
export function namedValues(tenant: TenantIds | undefined, request: RequestValues): Array<[ResourceKind, unknown]> {
  if (tenant === undefined) return [];
  const values: Array<[ResourceKind, unknown]> = [];
  for (const [name, kind] of Object.entries(tenant.param ?? {})) if (kind) values.push([kind, request.param?.[name]]);
  for (const [name, kind] of Object.entries(tenant.query ?? {})) values.push([kind, request.query?.[name]]);
  const body = request.json;
  if (tenant.json && body !== null && typeof body === 'object') {
    for (const [name, kind] of Object.entries(tenant.json))
      values.push([kind, (body as Record<string, unknown>)[name]]);
  }
  return values;
}

/**
 * The ids a declaration names in a request, in lower case. A value that is not a UUID is
 * left out: the API leaves it to the route's validation (404 in the path, 400 elsewhere).
 */
export function declaredIds(tenant: TenantIds | undefined, request: RequestValues): Array<[ResourceKind, string]> {
  return namedValues(tenant, request).flatMap(([kind, id]) =>
    typeof id === 'string' && isUuid(id) ? [[kind, id.toLowerCase()] as [ResourceKind, string]] : [],
  );
}
