/**
 * Who may call a route (api/README.md, Access): each route declares it once in `defineRoute`,
 * and the access middleware, the operation's OpenAPI `security` and the generated auth
 * matrix test all derive from that one declaration.
 */

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
  | 'webhook_delivery';

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
};
