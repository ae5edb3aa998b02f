/**
 * Route helpers: every route declares who may call it and which error codes it can
 * return, and gets the matching OpenAPI security and error responses, so that
 * `/api/v1/openapi.json` stays complete and honest.
 */
import { createRoute, OpenAPIHono, type RouteConfig } from '@hono/zod-openapi';
import type { AppEnv } from '../app_env.ts';
import { operationExamples } from '../docs/error_examples.ts';
import { errorResponses, type ErrorSpec } from '../http/errors.ts';
import { wellFormedJsonBody } from '../http/json_value.ts';
import { validationHook } from '../http/openapi.ts';
import { type Access, callersOf, takesOrgCredential, type TenantIds } from './declaration.ts';
import { accessMiddleware } from './middleware.ts';

/** The declaration every route makes: who may call it, whose ids it takes, what it audits. */
export interface RouteDeclaration {
  access: Access;
  /** For operator and organization routes: the ids an organization key must own. */
  tenant?: TenantIds;
  /**
   * For operator and organization writes: the audit action. On a read: the read hands out
   * a credential and is recorded too (api/README.md, Audit log).
   */
  audit?: string;
  errors?: readonly ErrorSpec[];
}

export function defineRoute<const R extends RouteConfig>(config: R & RouteDeclaration) {
  const { access, tenant, audit, errors = [], ...route } = config;
  checkDeclaration(route.method, route.path, { access, tenant, audit });
  const request = route.request;
  const codes: ErrorSpec[] = [...errors];
  if (request?.params || request?.query || request?.body) codes.push('invalid_request');
  if (request?.body) codes.push('payload_too_large');
  if (takesOrgCredential(access)) {
    codes.push('unauthorized');
    if (access !== 'org_viewer') codes.push('forbidden');
    if (tenant && !codes.includes('not_found')) codes.push('not_found');
  }
  codes.push('internal_error');
  const middleware = [
    accessMiddleware({ method: route.method, access, tenant, audit }),
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
  // A read is audited only when it hands out a credential: the viewer may never make it.
  if (method === 'get' && d.audit && d.access !== 'org_admin' && d.access !== 'operator') {
    throw new Error(`${where}: an audited read hands out a credential, which a viewer may not read`);
  }
}

/** A new feature router with the shared validation hook. */
export function newRouter() {
  return new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
}
