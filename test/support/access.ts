/**
 * Builders for access tests, and the auth matrix: every operation of the OpenAPI document
 * called with every kind of credential, the expected answer derived from the operation's
 * declared callers (`x-callers`). A new route is covered the day it exists.
 */
import { inventory, putInventory } from './inventory.ts';
import { expect } from 'vitest';
import type { Sql } from '../../api/db/client.ts';
import type { TestContext, TestResponse } from './app.ts';
import { activateDevice, TEMPLATES } from './activation.ts';
import { enrollAgent } from './agent.ts';
import { BOOKWORM, insertInventory, insertPackageSet } from './vulnerabilities.ts';

export async function createApiKey(
  ctx: TestContext,
  organizationId: string,
  role: 'admin' | 'viewer',
  options: { token?: string; name?: string; expires_at?: string } = {},
): Promise<{ id: string; key: string; prefix: string }> {
  const res = await ctx.request('POST', `/api/v1/organizations/${organizationId}/api-keys`, {
    token: options.token,
    body: {
      name: options.name ?? `${role} key`,
      role,
      ...(options.expires_at ? { expires_at: options.expires_at } : {}),
    },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

/** One organization with one resource of every kind, and the keys to call it with. */
export interface TenantFixture {
  organizationId: string;
  deviceId: string;
  agentSecret: string;
  orgUnitId: string;
  groupId: string;
  sessionId: string;
  isoBuildId: string;
  /** A key the matrix may revoke, so the caller's own keys stay usable. */
  spareKeyId: string;
  webhookId: string;
  /** A delivery of that webhook (an activation after its creation). */
  webhookDeliveryId: string;
  /** A running rollout (of `qgis` at the org unit, which has no devices: it changes none). */
  rolloutId: string;
  /** A finished bulk action on its devices (its portal page). */
  bulkJobId: string;
  /** A recovery key the device escrowed. */
  diskKeyId: string;
  /** A pending action of the device (a reboot). */
  actionId: string;
  adminKey: string;
  viewerKey: string;
}

export async function tenantFixture(ctx: TestContext): Promise<TenantFixture> {
  const agent = await enrollAgent(ctx);
  const organizationId = agent.organization_id;
  const ok = (res: TestResponse, status: number) => {
    expect(res.status, JSON.stringify(res.body)).toBe(status);
    return res.body;
  };
  const orgUnit = ok(
    await ctx.request('POST', `/api/v1/organizations/${organizationId}/org-units`, { body: { name: 'Schule' } }),
    201,
  );
  const group = ok(
    await ctx.request('POST', `/api/v1/organizations/${organizationId}/groups`, { body: { name: 'Lehrer' } }),
    201,
  );
  ok(await ctx.request('PUT', `/api/v1/groups/${group.id}/devices/${agent.device_id}`), 204);
  // The device's inventory: its reads answer rather than 404 no_inventory.
  ok(await putInventory(ctx, agent.secret, inventory()), 204);
  const session = ok(
    await ctx.request('POST', `/api/v1/organizations/${organizationId}/enrollment-sessions`, {
      body: {
        template_id: TEMPLATES.debianStandard,
        expires_at: new Date(Date.now() + 86_400_000).toISOString(),
        max_devices: 5,
      },
    }),
    201,
  );
  // An inventory (as its agent would send it): the device's inventory reads answer.
  const set = await insertPackageSet(ctx.sql, [{ name: 'curl', version: '7.88.1-10+deb12u3' }]);
  await insertInventory(ctx.sql, { id: agent.device_id, organization_id: organizationId }, set, BOOKWORM);
  const build = ok(await ctx.request('POST', `/api/v1/organizations/${organizationId}/iso-builds`, { body: {} }), 202);
  const webhook = ok(
    await ctx.request('POST', `/api/v1/organizations/${organizationId}/webhooks`, {
      body: { url: 'https://hooks.example.com/fleet', events: ['device.activated'] },
    }),
    201,
  );
  await activateDevice(ctx, organizationId);
  const [delivery] = await ctx.sql<{ id: string }[]>`
    select id from webhook_deliveries where webhook_id = ${webhook.id}`;
  const rollout = ok(
    await ctx.request('POST', `/api/v1/organizations/${organizationId}/rollouts`, {
      body: { scope: 'org_unit', scope_id: orgUnit.id, merkmal: 'qgis', action: 'select' },
    }),
    201,
  );
  const [bulkJob] = await ctx.sql<{ id: string }[]>`
    insert into device_bulk_jobs (organization_id, action, target, target_name, filter, caller, request_id,
                                  device_ids, total, status, finished_at)
    values (${organizationId}, 'group-add', ${group.id}, 'group', '{}', '{"type":"operator"}', 'fixture',
            '{}', 0, 'completed', now())
    returning id`;
  const diskKey = ok(
    await ctx.request('POST', '/api/v1/agent/disk-keys', {
      token: agent.secret,
      body: {
        device_path: '/dev/sda3',
        luks_uuid: crypto.randomUUID(),
        keyslot: 1,
        recovery_key: 'cbdefghi-jklnrtuv-cbdefghi-jklnrtuv-cbdefghi-jklnrtuv-cbdefghi-jklnrtuv',
      },
    }),
    201,
  );
  const action = ok(
    await ctx.request('POST', `/api/v1/devices/${agent.device_id}/actions`, { body: { type: 'reboot' } }),
    201,
  );
  const spare = await createApiKey(ctx, organizationId, 'viewer', { name: 'spare' });
  const admin = await createApiKey(ctx, organizationId, 'admin');
  const viewer = await createApiKey(ctx, organizationId, 'viewer');
  return {
    organizationId,
    deviceId: agent.device_id,
    agentSecret: agent.secret,
    orgUnitId: orgUnit.id,
    groupId: group.id,
    sessionId: session.id,
    isoBuildId: build.id,
    spareKeyId: spare.id,
    webhookId: webhook.id,
    webhookDeliveryId: delivery!.id,
    rolloutId: rollout.id,
    bulkJobId: bulkJob!.id,
    diskKeyId: diskKey.id,
    actionId: action.id,
    adminKey: admin.key,
    viewerKey: viewer.key,
  };
}

/** What a fingerprint leaves out: bookkeeping a refused request may do by design. */
export interface FingerprintIgnoring {
  tables?: readonly string[];
  /** Columns by table, e.g. `api_keys: ['last_used_at']`. */
  columns?: Readonly<Record<string, readonly string[]>>;
}

/**
 * A fingerprint of every row of every table (and the job queue): equal before and after
 * a call proves the call changed nothing.
 */
export async function databaseFingerprint(sql: Sql, ignoring: FingerprintIgnoring = {}): Promise<string> {
  const tables = await sql<{ name: string }[]>`
    select table_name as name from information_schema.tables
    where table_schema = 'public' and table_type = 'BASE TABLE' order by table_name`;
  const parts = await Promise.all(
    tables
      .filter(({ name }) => !ignoring.tables?.includes(name))
      .map(async ({ name }) => {
        const columns = ignoring.columns?.[name] ?? [];
        // Names from the test's own list, not from input; quoted as literals all the same.
        const row = columns.length
          ? `(to_jsonb(t) - array[${columns.map((c) => `'${c.replaceAll("'", "''")}'`).join(',')}])::text`
          : 't::text';
        const [result] = await sql.unsafe<{ h: string }[]>(
          `select count(*) || ':' || coalesce(md5(string_agg(${row}, ',' order by ${row})), '') as h from "${name}" t`,
        );
        return `${name}=${result!.h}`;
      }),
  );
  const [jobs] = await sql<{ n: number }[]>`select count(*)::int as n from graphile_worker.jobs`;
  return `${parts.join(';')};jobs=${jobs!.n}`;
}

export type CredentialName = 'none' | 'wrong' | 'agent' | 'viewer' | 'admin' | 'other_admin' | 'operator';

export const credentialNames: CredentialName[] = [
  'none',
  'wrong',
  'agent',
  'viewer',
  'admin',
  'other_admin',
  'operator',
];

export interface Operation {
  method: string;
  /** The path template, e.g. `/api/v1/devices/{id}`. */
  path: string;
  callers: string[];
}

/** A JSON schema of the document, as far as these tests read one. */
export interface JsonSchema {
  $ref?: string;
  type?: string | string[];
  format?: string;
  enum?: unknown[];
  example?: unknown;
  minimum?: number;
  minItems?: number;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  allOf?: JsonSchema[];
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
}

/** Where an operation takes a UUID: a path or query parameter, or a body field (dotted when nested). */
export interface UuidPlace {
  in: 'path' | 'query' | 'body';
  name: string;
}

export interface DocumentedOperation extends Operation {
  /** Every UUID the operation takes, as its document describes it. */
  uuids: UuidPlace[];
  /** Its JSON body's schema, references resolved. */
  body?: JsonSchema;
}

interface DocumentedParameter {
  name: string;
  in: string;
  schema?: JsonSchema;
}

interface DocumentedOperationObject {
  'x-callers'?: string[];
  parameters?: DocumentedParameter[];
  requestBody?: { content?: Record<string, { schema?: JsonSchema }> };
}

export async function documentedOperations(ctx: TestContext): Promise<DocumentedOperation[]> {
  const res = await ctx.request('GET', '/api/v1/openapi.json', { token: null });
  expect(res.status).toBe(200);
  const components: Record<string, JsonSchema> = res.body.components?.schemas ?? {};
  const resolve = (schema: JsonSchema | undefined, depth = 0): JsonSchema | undefined => {
    if (schema === undefined) return undefined;
    if (depth > 20) throw new Error('a schema of the document nests too deep to read');
    const target = schema.$ref ? components[schema.$ref.split('/').pop()!] : schema;
    if (target === undefined) throw new Error(`the document has no schema ${schema.$ref}`);
    const out: JsonSchema = { ...target };
    delete out.$ref;
    if (target.properties) {
      out.properties = Object.fromEntries(
        Object.entries(target.properties).map(([k, v]) => [k, resolve(v, depth + 1)!]),
      );
    }
    if (target.items) out.items = resolve(target.items, depth + 1);
    for (const key of ['allOf', 'anyOf', 'oneOf'] as const) {
      if (target[key]) out[key] = target[key]!.map((s) => resolve(s, depth + 1)!);
    }
    return out;
  };
  const operations: DocumentedOperation[] = [];
  for (const [path, item] of Object.entries(
    res.body.paths as Record<string, Record<string, DocumentedOperationObject>>,
  )) {
    for (const [method, op] of Object.entries(item)) {
      const uuids: UuidPlace[] = [];
      for (const p of op.parameters ?? []) {
        if ((p.in === 'path' || p.in === 'query') && resolve(p.schema)?.format === 'uuid') {
          uuids.push({ in: p.in, name: p.name });
        }
      }
      const body = resolve(op.requestBody?.content?.['application/json']?.schema);
      if (body) uuids.push(...uuidFields(body, '').map((name) => ({ in: 'body' as const, name })));
      operations.push({ method, path, callers: op['x-callers'] ?? [], uuids, ...(body ? { body } : {}) });
    }
  }
  return operations;
}

/** The UUID fields of a resolved schema, by dotted name (`[]` for an array's items). */
function uuidFields(schema: JsonSchema, prefix: string): string[] {
  const found: string[] = [];
  if (schema.format === 'uuid' && prefix !== '') found.push(prefix);
  for (const [name, sub] of Object.entries(schema.properties ?? {})) {
    found.push(...uuidFields(sub, prefix ? `${prefix}.${name}` : name));
  }
  if (schema.items) found.push(...uuidFields(schema.items, `${prefix}[]`));
  for (const sub of [...(schema.allOf ?? []), ...(schema.anyOf ?? []), ...(schema.oneOf ?? [])]) {
    found.push(...uuidFields(sub, prefix));
  }
  return [...new Set(found)];
}

/** The organization resource a path parameter names, by the path segment before it. */
const kindOfSegment: Record<string, keyof TenantFixture | 'template' | 'merkmal'> = {
  organizations: 'organizationId',
  devices: 'deviceId',
  'org-units': 'orgUnitId',
  groups: 'groupId',
  'enrollment-sessions': 'sessionId',
  'iso-builds': 'isoBuildId',
  'api-keys': 'spareKeyId',
  webhooks: 'webhookId',
  deliveries: 'webhookDeliveryId',
  rollouts: 'rolloutId',
  'disk-keys': 'diskKeyId',
  actions: 'actionId',
  templates: 'template',
};

/** The fixture's id (or, for a template, `template`) a path parameter takes; throws for one it does not know. */
export function pathParamKind(path: string, param: string): keyof TenantFixture | 'template' | 'merkmal' {
  if (param === 'merkmal') return 'merkmal';
  if (param === 'device_id') return 'deviceId';
  const segments = path.split('/');
  const kind = kindOfSegment[segments[segments.indexOf(`{${param}}`) - 1]!];
  if (kind === undefined) throw new Error(`the access tests do not know the parameter ${param} of ${path}`);
  return kind;
}

/**
 * The operation's path with the fixture's ids (or the ids given by parameter name);
 * whether any of them belongs to an organization.
 */
export function fillPath(
  op: Operation,
  f: TenantFixture,
  given: Record<string, string> = {},
): { url: string; orgScoped: boolean } {
  let orgScoped = false;
  const url = op.path.replaceAll(/\{([^}]+)\}/g, (_, param: string) => {
    const kind = pathParamKind(op.path, param);
    if (kind === 'merkmal') return 'libreoffice';
    if (kind === 'template') return given[param] ?? TEMPLATES.debianStandard;
    orgScoped = true;
    return given[param] ?? String(f[kind]);
  });
  return { url, orgScoped };
}

/**
 * The portal's paths with the fixture's ids (or the ids given by parameter name), by the
 * segment before each parameter; a parameter that names no id gets a value the route takes.
 */
const portalParamOf: Record<string, keyof TenantFixture | { value: string }> = {
  devices: 'deviceId',
  'org-units': 'orgUnitId',
  groups: 'groupId',
  members: 'deviceId',
  'enrollment-sessions': 'sessionId',
  'iso-builds': 'isoBuildId',
  'api-keys': 'spareKeyId',
  webhooks: 'webhookId',
  deliveries: 'webhookDeliveryId',
  rollouts: 'rolloutId',
  jobs: 'bulkJobId',
  'disk-keys': 'diskKeyId',
  actions: 'actionId',
  catalog: { value: 'libreoffice' },
  confirm: { value: 'archive' },
};

/** The fixture ids a portal path's parameters take, by name; a parameter naming no id is left out. */
export function portalPathIds(path: string): Record<string, keyof TenantFixture> {
  const segments = path.split('/');
  const ids: Record<string, keyof TenantFixture> = {};
  segments.forEach((segment, i) => {
    if (!segment.startsWith(':')) return;
    const kind = portalParamOf[segments[i - 1]!];
    if (kind === undefined) throw new Error(`${path}: no fixture id for ${segment}`);
    if (typeof kind === 'string') ids[segment.slice(1)] = kind;
  });
  return ids;
}

export function fillPortalPath(path: string, f: TenantFixture, given: Record<string, string> = {}): string {
  const ids = portalPathIds(path);
  const segments = path.split('/');
  return segments
    .map((segment, i) => {
      if (!segment.startsWith(':')) return segment;
      const name = segment.slice(1);
      const kind = ids[name];
      if (kind === undefined) return (portalParamOf[segments[i - 1]!] as { value: string }).value;
      return given[name] ?? String(f[kind]);
    })
    .join('/');
}

export function tokenOf(
  name: CredentialName,
  f: TenantFixture,
  other: TenantFixture,
  adminToken: string,
): string | null {
  switch (name) {
    case 'none':
      return null;
    case 'wrong':
      return 'fpk_this-is-not-a-key-of-anybody-0123456789';
    case 'agent':
      return f.agentSecret;
    case 'viewer':
      return f.viewerKey;
    case 'admin':
      return f.adminKey;
    case 'other_admin':
      return other.adminKey;
    case 'operator':
      return adminToken;
  }
}

/** What the declaration implies: a status and error code, or `allowed` (past authorization). */
export type Expectation = { status: number; error: string } | 'allowed' | 'credential_ignored';

export function expectationFor(op: Operation, credential: CredentialName, orgScoped: boolean): Expectation {
  const callers = new Set(op.callers);
  if (callers.has('anyone') || callers.has('installer')) return 'credential_ignored';
  if (callers.has('agent')) {
    return credential === 'agent' ? 'allowed' : { status: 401, error: 'invalid_agent_secret' };
  }
  if (!callers.has('operator')) throw new Error(`${op.method} ${op.path} declares no callers`);
  switch (credential) {
    case 'none':
    case 'wrong':
    case 'agent':
      return { status: 401, error: 'unauthorized' };
    case 'operator':
      return 'allowed';
    case 'viewer':
      return callers.has('viewer') ? 'allowed' : { status: 403, error: 'forbidden' };
    case 'admin':
      return callers.has('admin') ? 'allowed' : { status: 403, error: 'forbidden' };
    case 'other_admin':
      if (!callers.has('admin')) return { status: 403, error: 'forbidden' };
      return orgScoped ? { status: 404, error: 'not_found' } : 'allowed';
  }
}
