/**
 * Route helpers: every route declares who may call it and which error codes it can
 * return, and gets the matching OpenAPI security and error responses, so that
 * `/api/v1/openapi.json` stays complete and honest.
 */
import { createRoute, OpenAPIHono, type RouteConfig } from '@hono/zod-openapi';
import type { AppEnv } from './app_env.ts';
import { operationExamples } from './error_examples.ts';
import { errorResponses, type ErrorSpec } from '../http/errors.ts';
import { wellFormedJsonBody } from '../http/json_value.ts';
import { queryNames, requestShape } from '../http/request_shape.ts';
import { validationHook } from '../http/openapi.ts';
import { type Access, callersOf, type Operation, takesOrgCredential, type TenantIds } from './declaration.ts';
import { accessMiddleware } from './middleware.ts';

/**
 * The declaration every route makes. An operator or organization route names its
 * operation's declaration (who, whose ids, what it audits), the one its feature exports
 * for the portal too; a route whose handler checks its own credential (installer,
 * bootstrap, agent) or that is open to anyone names only its access.
 */
export type RouteDeclaration = (
  | { operation: Operation; access?: undefined }
  | { access: Exclude<Access, Operation['access']>; operation?: undefined }
) & { errors?: readonly ErrorSpec[] };

/** The API route each operation declaration was defined with, by the declaration itself. */
const routesByOperation = new Map<Operation, { method: string; path: string }>();

/** The API route defined with this very declaration object, if any. */
export function apiRouteOf(operation: Operation): { method: string; path: string } | undefined {
  return routesByOperation.get(operation);
}

export function defineRoute<const R extends RouteConfig>(config: R & RouteDeclaration) {
  const { operation, access: ownAccess, errors = [], ...route } = config;
  const declaration = operation ?? { access: ownAccess! };
  const { access, tenant, audit } = declaration as Operation;
  checkDeclaration(route.method, route.path, { access, tenant, audit });
  if (operation) claim(operation, route.method, route.path);
  const request = route.request;
  const codes: ErrorSpec[] = [...errors];
  // Every route refuses unknown query parameters, and a body where it takes none.
  codes.push('invalid_request');
  if (request?.body) codes.push('payload_too_large');
  if (takesOrgCredential(access)) {
    codes.push('unauthorized');
    if (access !== 'org_viewer') codes.push('forbidden');
    if (tenant && !codes.includes('not_found')) codes.push('not_found');
  }
  codes.push('internal_error');
  const middleware = [
    accessMiddleware({ method: route.method, ...declaration }),
    requestShape({ query: new Set(queryNames(request?.query)), body: request?.body !== undefined }),
    ...asArray(route.middleware),
    ...(request?.body ? [wellFormedJsonBody] : []),
  ];
  return createRoute({
    ...route,
    middleware,
    security: securityOf(access),
    'x-callers': callersOf(access),
    ...(audit ? { 'x-audit-action': audit } : {}),
    responses: {
      ...route.responses,
      ...errorResponses(codes, (code, status) =>
        operationExamples({ method: route.method, path: route.path, access, tenant, request }, code, status),
      ),
    },
  } as unknown as R);
}

/** One declaration, one API route: a declaration used for two routes is refused at start-up. */
function claim(operation: Operation, method: string, path: string) {
  const claimed = routesByOperation.get(operation);
  if (claimed && (claimed.method !== method || claimed.path !== path)) {
    throw new Error(
      `${method.toUpperCase()} ${path}: its declaration is already that of ${claimed.method.toUpperCase()} ${claimed.path}`,
    );
  }
  routesByOperation.set(operation, { method, path });
}

/**
 * A route's middleware without the body's well-formedness layer, for a handler that parses
 * its body itself and applies the same rule (`readSmallJsonBody`).
 */
export function withoutBodyLayer<M>(middleware: M): M {
  return (Array.isArray(middleware) ? middleware.filter((m) => m !== wellFormedJsonBody) : middleware) as M;
}

function asArray<T>(value: T | readonly T[] | undefined): T[] {
  return value === undefined ? [] : Array.isArray(value) ? [...value] : [value as T];
}

function securityOf(access: Access) {
  switch (access) {
    case 'operator':
      return [{ AdminToken: [] }];
    case 'org_admin':
    case 'org_viewer':
      return [{ AdminToken: [] }, { OrganizationKey: [] }];
    case 'agent':
      return [{ AgentSecret: [] }];
    default:
      return [];
  }
}

/**
 * Fails at start-up, not at the first request: an organization route must account for
 * every path parameter (an id an organization key must own, or `null`), every write of
 * the operator or an organization key must name its audit action, and a read that names
 * one (it reads a credential) is not open to viewers.
 */
function checkDeclaration(method: string, path: string, d: { access: Access; tenant?: TenantIds; audit?: string }) {
  const where = `${method.toUpperCase()} ${path}`;
  if (!takesOrgCredential(d.access)) {
    if (d.tenant || d.audit) throw new Error(`${where}: tenant and audit are for operator and organization routes`);
    return;
  }
  for (const name of path.matchAll(/\{([^}]+)\}/g)) {
    if (!(d.tenant?.param && name[1]! in d.tenant.param)) {
      throw new Error(`${where}: path parameter ${name[1]} is not declared in tenant.param`);
    }
  }
  if (method !== 'get' && !d.audit) throw new Error(`${where}: a write must declare its audit action`);
  // A read is audited only when it hands out a credential, which a viewer may never read.
  if (method === 'get' && d.audit && d.access !== 'org_admin' && d.access !== 'operator') {
    throw new Error(`${where}: an audited read hands out a credential, which a viewer may not read`);
  }
}

/** A new feature router with the shared validation hook. */
export function newRouter() {
  return new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
}
