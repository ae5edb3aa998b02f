/**
 * Another organization's id answers exactly as an id that does not exist, everywhere an
 * id travels: in the path, in a query filter and in a body, for an organization key and
 * through the portal (a key's session and an operator's, held to the organization it
 * chose). The answers are compared byte for byte with the id elided, so not even a
 * message tells that the id exists. The API's places come from the OpenAPI document and
 * the portal's from its routes table, so a route added later is covered, or fails here
 * until this test learns the kind of id it takes. Only the operator, who may see every
 * organization, is told that a request mixes two (422 `organization_mismatch`).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, useTestApp } from '../support/app.ts';
import { TEMPLATES } from '../support/activation.ts';
import {
  databaseFingerprint,
  type DocumentedOperation,
  documentedOperations,
  fillPath,
  fillPortalPath,
  type JsonSchema,
  pathParamKind,
  portalPathIds,
  tenantFixture,
  type TenantFixture,
  type UuidPlace,
} from '../support/access.ts';
import { PortalClient } from '../support/portal_client.ts';

const ctx = useTestApp();

let mine: TenantFixture;
let theirs: TenantFixture;
beforeAll(async () => {
  mine = await tenantFixture(ctx);
  theirs = await tenantFixture(ctx);
});

/** The fixture ids of an organization's resources, one of each kind. */
const ownedKinds = [
  'organizationId',
  'deviceId',
  'orgUnitId',
  'groupId',
  'sessionId',
  'isoBuildId',
  'spareKeyId',
  'webhookId',
  'webhookDeliveryId',
  'rolloutId',
  'diskKeyId',
  'actionId',
] as const satisfies ReadonlyArray<keyof TenantFixture>;
type OwnedKind = (typeof ownedKinds)[number];

/**
 * What an id names: a resource of an organization, a template (shared by all, so no
 * other organization's), or `any` resource (a filter by whatever the id names).
 */
type IdKind = OwnedKind | 'template' | 'any';

/** The kind of a query parameter or body field that is a UUID, by its name. */
const kindOfIdName: Record<string, IdKind> = {
  oe_id: 'orgUnitId',
  parent_id: 'orgUnitId',
  group_id: 'groupId',
  device_id: 'deviceId',
  // A rollout's org unit or group; the documented sample body names an org unit.
  scope_id: 'orgUnitId',
  enrollment_session_id: 'sessionId',
  template_id: 'template',
  // The audit log's filter: events about whatever the id names.
  target_id: 'any',
};

function kindOf(op: DocumentedOperation, place: UuidPlace): IdKind {
  if (place.in === 'path') {
    const kind = pathParamKind(op.path, place.name);
    if (kind !== 'template' && !(ownedKinds as readonly string[]).includes(kind)) {
      throw new Error(`${op.method.toUpperCase()} ${op.path}: this test cannot make the path parameter ${place.name}`);
    }
    return kind as IdKind;
  }
  const kind = kindOfIdName[place.name];
  if (kind === undefined) {
    throw new Error(
      `${op.method.toUpperCase()} ${op.path}: the ${place.in} field ${place.name} is a UUID of a kind this test ` +
        'does not know how to make; add it to kindOfIdName',
    );
  }
  return kind;
}

/** The ids of another organization to try in a place of this kind. */
function foreignIds(kind: IdKind): string[] {
  if (kind === 'template') return [];
  if (kind === 'any') return ownedKinds.map((k) => theirs[k]);
  return [theirs[kind]];
}

const ownId = (kind: IdKind): string =>
  kind === 'template' ? TEMPLATES.debianStandard : kind === 'any' ? mine.deviceId : mine[kind];

/** A body the schema accepts, every id in it one of mine: a foreign id must be what is refused, not the rest. */
function sampleOf(schema: JsonSchema, name: string, where: string): unknown {
  if (schema.format === 'uuid') return ownId(kindOfIdName[name.split('.').pop()!] ?? 'any');
  if (schema.format === 'date-time') return new Date(Date.now() + 86_400_000).toISOString();
  if (schema.example !== undefined) return schema.example;
  if (schema.enum) return schema.enum[0];
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
  switch (type) {
    case 'object':
      return Object.fromEntries(
        (schema.required ?? []).map((key) => [key, sampleOf(schema.properties![key]!, key, where)]),
      );
    case 'array':
      return schema.minItems ? [sampleOf(schema.items!, `${name}[]`, where)] : [];
    case 'integer':
    case 'number':
      return schema.minimum ?? 1;
    case 'boolean':
      return false;
    case 'string':
      return schema.format === 'uri' ? 'https://hooks.example.com/fleet' : 'Probe';
  }
  throw new Error(`${where}: this test cannot make a value of the body field ${name || '(body)'}`);
}

/** An id is the same in either case, so it is answered the same in either. */
const spellings = [(id: string) => id, (id: string) => id.toUpperCase()];

interface RawAnswer {
  status: number;
  text: string;
}

/** Headers that differ between any two answers; cookies are compared by what they carry. */
const volatileHeaders = new Set(['date', 'x-request-id', 'set-cookie']);

/** An answer as sent: its status, headers and body (and for a form, where it leads and its flash). */
interface Sent {
  status: number;
  headers: Headers;
  parts: string[];
}

/** The answer with the id that was tried replaced by `ID`, in any case, wherever it appears. */
function elided(answer: Sent, id: string): RawAnswer {
  const pattern = new RegExp(id, 'gi');
  return {
    status: answer.status,
    text: [
      ...[...answer.headers].filter(([name]) => !volatileHeaders.has(name)).map(([name, value]) => `${name}: ${value}`),
      ...answer.parts,
    ]
      .map((p) => p.replace(pattern, 'ID'))
      .join('\n'),
  };
}

async function apiCall(method: string, url: string, token: string, body: unknown): Promise<Sent> {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await ctx.app.request(url, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, parts: [await res.text()] };
}

/** One request of an operation with my ids, one place given the id to try. */
function requestOf(op: DocumentedOperation, place: UuidPlace, id: string) {
  const { url } = fillPath(op, mine, place.in === 'path' ? { [place.name]: id } : {});
  const query = place.in === 'query' ? `?${place.name}=${id}` : '';
  const where = `${op.method.toUpperCase()} ${op.path}`;
  let body: unknown;
  if (op.body) {
    body = sampleOf(op.body, '', where);
    if (place.in === 'body') (body as Record<string, unknown>)[place.name] = id;
  }
  return { method: op.method.toUpperCase(), url: `${url}${query}`, body };
}

/**
 * What the operator gets where a request names one of my resources and one of theirs,
 * today. A new route that mixes ids makes this fail until its answer is written here.
 */
const operatorAnswers: Record<string, string> = {
  'GET /api/v1/organizations/{id}/devices query oe_id': '422 organization_mismatch',
  'GET /api/v1/organizations/{id}/fleet-status query group_id': '422 organization_mismatch',
  'GET /api/v1/organizations/{id}/fleet-status query oe_id': '422 organization_mismatch',
  'GET /api/v1/organizations/{id}/vulnerabilities query group_id': '422 organization_mismatch',
  'GET /api/v1/organizations/{id}/vulnerabilities query oe_id': '422 organization_mismatch',
  'GET /api/v1/organizations/{id}/devices query group_id': '422 organization_mismatch',
  'PUT /api/v1/devices/{id}/org-unit body oe_id': '422 organization_mismatch',
  'POST /api/v1/organizations/{id}/org-units body parent_id': '422 organization_mismatch',
  'PATCH /api/v1/org-units/{id} body parent_id': '422 organization_mismatch',
  'POST /api/v1/organizations/{id}/rollouts body scope_id': '422 organization_mismatch',
  'PUT /api/v1/groups/{id}/devices/{device_id} path id': '422 organization_mismatch',
  'PUT /api/v1/groups/{id}/devices/{device_id} path device_id': '422 organization_mismatch',
  'DELETE /api/v1/groups/{id}/devices/{device_id} path id': '422 organization_mismatch',
  'DELETE /api/v1/groups/{id}/devices/{device_id} path device_id': '422 organization_mismatch',
  // An image is bound to a session of the organization it is built for; there is none of that id.
  'POST /api/v1/organizations/{id}/iso-builds body enrollment_session_id': '404 not_found',
  // A delivery is a webhook's own: that webhook has none of that id.
  'GET /api/v1/webhooks/{id}/deliveries/{delivery_id}/attempts path id': '404 not_found',
  'GET /api/v1/webhooks/{id}/deliveries/{delivery_id}/attempts path delivery_id': '404 not_found',
};

describe('an id of another organization, through the API', () => {
  it('answers exactly as an unknown id in every path, query and body place of the document', async () => {
    const operations = await documentedOperations(ctx);
    const failures: string[] = [];
    const operatorSeen: Record<string, string> = {};
    let compared = 0;
    // A key's first use records when it was used; that write is not one of the refused requests'.
    for (const token of [mine.adminKey, mine.viewerKey]) {
      await ctx.request('GET', `/api/v1/organizations/${mine.organizationId}`, { token });
    }
    const before = await databaseFingerprint(ctx.sql);
    for (const op of operations) {
      const where = `${op.method.toUpperCase()} ${op.path}`;
      // Installer and agent routes take no organization key; the access tests of their own hold them.
      if (!op.callers.includes('admin') && !op.callers.includes('viewer')) continue;
      // Each role that may make the call: a viewer's answers pass through a filter of their own.
      const keys = [
        ...(op.callers.includes('admin') ? [['admin', mine.adminKey] as const] : []),
        ...(op.callers.includes('viewer') ? [['viewer', mine.viewerKey] as const] : []),
      ];
      const kinds = op.uuids.map((place) => kindOf(op, place));
      for (const [i, place] of op.uuids.entries()) {
        const kind = kinds[i]!;
        for (const [role, token] of keys) {
          for (const spelt of spellings) {
            const at = `${where} ${place.in} ${place.name} (${role} key)`;
            const missingId = spelt(crypto.randomUUID());
            const r = requestOf(op, place, missingId);
            const missing = elided(await apiCall(r.method, r.url, token, r.body), missingId);
            // An unknown id in the path or a body names nothing: 404, whatever the rest.
            if (place.in !== 'query' && kind !== 'template' && !missing.text.includes('"error":"not_found"')) {
              failures.push(`${at}: an unknown id answers ${missing.status} ${missing.text}`);
            }
            for (const theirId of foreignIds(kind).map(spelt)) {
              const f = requestOf(op, place, theirId);
              const foreign = elided(await apiCall(f.method, f.url, token, f.body), theirId);
              compared++;
              if (JSON.stringify(foreign) !== JSON.stringify(missing)) {
                failures.push(
                  `${at}: theirs ${foreign.status} ${foreign.text}, unknown ${missing.status} ${missing.text}`,
                );
              }
            }
          }
        }
        // The operator sees every organization: where the request also names one of mine, it mixes two.
        const mixes = kinds.some((k, j) => j !== i && op.uuids[j]!.in === 'path' && k !== 'template');
        if (mixes && kind !== 'any') {
          for (const theirId of foreignIds(kind)) {
            const f = requestOf(op, place, theirId);
            const operator = await apiCall(f.method, f.url, ADMIN_TOKEN, f.body);
            const error = /"error":"([a-z_]+)"/.exec(operator.parts[0]!)?.[1] ?? '';
            operatorSeen[`${where} ${place.in} ${place.name}`] = `${operator.status} ${error}`.trim();
          }
        }
      }
    }
    expect(failures).toEqual([]);
    expect(compared).toBeGreaterThan(50);
    expect(operatorSeen).toEqual(operatorAnswers);
    expect(await databaseFingerprint(ctx.sql)).toBe(before);
  }, 300_000);
});

/** An id a portal page or form takes besides its path's: a query filter or a form field. */
interface PortalField {
  in: 'query' | 'form';
  name: string;
  kind: IdKind;
  /** The field's value for an id, when the form wraps it. */
  value?: (id: string) => string;
  /** Only an organization key's session: the operator's session may choose any organization. */
  keySessionOnly?: true;
}

type PortalPlace = Omit<PortalField, 'in'> & { in: PortalField['in'] | 'path' };

/**
 * Every page and form of the portal behind its sign-in, with the ids it takes besides
 * those of its path (which the path's parameters name). A route missing here fails the
 * test, so a new one says which ids it takes.
 */
const portalRoutesWithIds: Record<string, PortalField[]> = {
  'GET /portal/organization': [],
  'POST /portal/organization': [{ in: 'form', name: 'organization_id', kind: 'organizationId', keySessionOnly: true }],
  'GET /portal/devices': [
    { in: 'query', name: 'oe_id', kind: 'orgUnitId' },
    { in: 'query', name: 'group_id', kind: 'groupId' },
  ],
  'GET /portal/devices/bulk': [
    { in: 'query', name: 'device', kind: 'deviceId' },
    { in: 'query', name: 'oe_id', kind: 'orgUnitId' },
    { in: 'query', name: 'group_id', kind: 'groupId' },
    { in: 'query', name: 'target_oe', kind: 'orgUnitId' },
    { in: 'query', name: 'target_group', kind: 'groupId' },
  ],
  'POST /portal/devices/bulk/move': [
    { in: 'form', name: 'device', kind: 'deviceId' },
    { in: 'form', name: 'target_oe', kind: 'orgUnitId' },
    { in: 'form', name: 'oe_id', kind: 'orgUnitId' },
  ],
  'POST /portal/devices/bulk/group-add': [
    { in: 'form', name: 'device', kind: 'deviceId' },
    { in: 'form', name: 'target_group', kind: 'groupId' },
    { in: 'form', name: 'group_id', kind: 'groupId' },
  ],
  'POST /portal/devices/bulk/group-remove': [
    { in: 'form', name: 'device', kind: 'deviceId' },
    { in: 'form', name: 'target_group', kind: 'groupId' },
  ],
  'POST /portal/devices/bulk/catalog/:merkmal/select': [{ in: 'form', name: 'device', kind: 'deviceId' }],
  'POST /portal/devices/bulk/catalog/:merkmal/deselect': [{ in: 'form', name: 'device', kind: 'deviceId' }],
  'POST /portal/devices/bulk/catalog/:merkmal/unset': [{ in: 'form', name: 'device', kind: 'deviceId' }],
  'GET /portal/devices/bulk/jobs/:id': [],
  'POST /portal/devices/bulk/actions': [
    { in: 'form', name: 'device', kind: 'deviceId' },
    { in: 'form', name: 'oe_id', kind: 'orgUnitId' },
    { in: 'form', name: 'group_id', kind: 'groupId' },
  ],
  'POST /portal/org-units/:id/actions': [],
  'POST /portal/groups/:id/actions': [],
  'POST /portal/devices/:id/actions/confirm': [],
  'POST /portal/devices/:id/actions': [],
  'POST /portal/actions/:id/cancel': [],
  'GET /portal/actions/:id': [],
  'GET /portal/devices/:id': [],
  'GET /portal/devices/:id/events': [],
  'POST /portal/disk-keys/:id/reveal': [],
  'GET /portal/devices/:id/confirm/:transition': [],
  'POST /portal/devices/:id/deprovision': [],
  'POST /portal/devices/:id/reprovision': [],
  'POST /portal/devices/:id/archive': [],
  'POST /portal/devices/:id/catalog/:merkmal/select': [],
  'POST /portal/devices/:id/catalog/:merkmal/deselect': [],
  'POST /portal/devices/:id/catalog/:merkmal/unset': [],
  'POST /portal/org-units/:id/catalog/:merkmal/select': [],
  'POST /portal/org-units/:id/catalog/:merkmal/deselect': [],
  'POST /portal/org-units/:id/catalog/:merkmal/unset': [],
  'GET /portal/org-units/:id/catalog/:merkmal/select': [],
  'GET /portal/org-units/:id/catalog/:merkmal/deselect': [],
  'GET /portal/org-units/:id/catalog/:merkmal/unset': [],
  'GET /portal/groups/:id/catalog/:merkmal/select': [],
  'GET /portal/groups/:id/catalog/:merkmal/deselect': [],
  'GET /portal/groups/:id/catalog/:merkmal/unset': [],
  'POST /portal/groups/:id/catalog/:merkmal/select': [],
  'POST /portal/groups/:id/catalog/:merkmal/deselect': [],
  'POST /portal/groups/:id/catalog/:merkmal/unset': [],
  'GET /portal/rollouts': [],
  'GET /portal/security': [],
  'POST /portal/rollouts': [{ in: 'form', name: 'scope_id', kind: 'orgUnitId' }],
  'GET /portal/rollouts/:id': [],
  'GET /portal/rollouts/:id/confirm/:verb': [],
  'GET /portal/rollouts/:id/devices': [],
  'POST /portal/rollouts/:id/pause': [],
  'POST /portal/rollouts/:id/resume': [],
  'POST /portal/rollouts/:id/abort': [],
  'GET /portal/enrollment-sessions': [],
  'POST /portal/enrollment-sessions': [{ in: 'form', name: 'template_id', kind: 'template' }],
  'POST /portal/enrollment-sessions/:id/revoke': [],
  'GET /portal/iso-builds': [],
  'POST /portal/iso-builds': [
    { in: 'form', name: 'source', kind: 'sessionId', value: (id) => `session:${id}` },
    { in: 'form', name: 'source', kind: 'template', value: (id) => `template:${id}` },
  ],
  'GET /portal/iso-builds/:id/download': [],
  'GET /portal/org-units': [],
  'GET /portal/org-units/:id': [],
  'POST /portal/org-units': [{ in: 'form', name: 'parent_id', kind: 'orgUnitId' }],
  'POST /portal/org-units/:id/rename': [],
  'POST /portal/org-units/:id/move': [{ in: 'form', name: 'parent_id', kind: 'orgUnitId' }],
  'POST /portal/org-units/:id/delete': [],
  'GET /portal/groups': [],
  'GET /portal/groups/:id': [],
  'POST /portal/groups': [],
  'POST /portal/groups/:id/rename': [],
  'POST /portal/groups/:id/delete': [],
  'POST /portal/groups/:id/members': [{ in: 'form', name: 'device', kind: 'deviceId' }],
  'POST /portal/groups/:id/members/:device/remove': [],
  'GET /portal/audit': [],
  'GET /portal/api-keys': [],
  'POST /portal/api-keys': [],
  'GET /portal/api-keys/:id/revoke': [],
  'POST /portal/api-keys/:id/revoke': [],
  'GET /portal/webhooks': [],
  'POST /portal/webhooks': [],
  'GET /portal/webhooks/:id/delete': [],
  'GET /portal/webhooks/:id/deliveries/:delivery_id': [],
  'POST /portal/webhooks/:id/delete': [],
  'POST /portal/webhooks/:id/test': [],
};

/** The portal's routes outside its sign-in, which take no id. */
const portalRoutesWithoutSession = [
  'GET /portal',
  'GET /portal/style.css',
  'GET /portal/rollouts.js',
  'GET /portal/language/:lang',
  'GET /portal/login',
  'POST /portal/login',
  'POST /portal/logout',
];

/** Fields that make every form valid, with my ids, so that only the id tried can be refused. */
const validForm = (): Record<string, string> => ({
  name: 'Probe',
  role: 'viewer',
  url: 'https://hooks.example.com/portal',
  'event:device.activated': 'on',
  template_id: TEMPLATES.debianStandard,
  max_devices: '5',
  days: '7',
  source: `template:${TEMPLATES.debianStandard}`,
  device: mine.deviceId,
  parent_id: '',
  organization_id: mine.organizationId,
  // A rollout in rings at an org unit (its scope_id the id tried).
  scope: 'org_unit',
  merkmal: 'firefox',
  action: 'select',
  rings: '100',
  max_failure_ratio: '0.1',
  min_reported_ratio: '0.9',
  soak_seconds: '0',
});

const FLASH_COOKIE = 'fleet_flash';

/** A page or form with my ids, one place given the id to try: the answer as the browser gets it. */
async function portalCall(
  client: PortalClient,
  csrf: string,
  route: string,
  place: { in: 'path' | 'query' | 'form'; name: string; value: string },
): Promise<Sent> {
  const [method, template] = route.split(' ') as [string, string];
  const path = fillPortalPath(template, mine, place.in === 'path' ? { [place.name]: place.value } : {});
  const query = place.in === 'query' ? `?${place.name}=${place.value}` : '';
  const form: Record<string, string> | undefined = method === 'POST' ? { ...validForm(), _csrf: csrf } : undefined;
  if (form && place.in === 'form') form[place.name] = place.value;
  const res = await client.request(method, `${path}${query}`, form);
  // The flash is the answer too; taken out of the jar so it shows on no later page.
  const flash = client.lastSetCookies.filter((c) => c.startsWith(`${FLASH_COOKIE}=`));
  client.cookies.delete(FLASH_COOKIE);
  return {
    status: res.status,
    headers: res.headers,
    parts: [res.location ?? '', ...flash, res.text],
  };
}

describe('an id of another organization, through the portal', () => {
  it('lists every route of the portal with the ids it takes', () => {
    const routes = new Set(
      ctx.app.routes
        .filter((r) => (r.method === 'GET' || r.method === 'POST') && r.path.startsWith('/portal'))
        .map((r) => `${r.method} ${r.path}`),
    );
    const listed = [...Object.keys(portalRoutesWithIds), ...portalRoutesWithoutSession];
    expect([...routes].filter((r) => !listed.includes(r))).toEqual([]);
    expect(listed.filter((r) => !routes.has(r))).toEqual([]);
  });

  for (const session of ['an organization key', 'the operator'] as const) {
    it(`answers exactly as an unknown id on every page and form, in the session of ${session}`, async () => {
      const client = new PortalClient(ctx.app, session === 'the operator' ? '198.51.100.41' : '198.51.100.40');
      expect((await client.signIn(session === 'the operator' ? ADMIN_TOKEN : mine.adminKey)).status).toBe(303);
      if (session === 'the operator') {
        const choose = await client.get('/portal/organization');
        const chosen = await client.request('POST', '/portal/organization', {
          _csrf: PortalClient.csrf(choose.text),
          organization_id: mine.organizationId,
        });
        expect(chosen.location).toBe('/portal/devices');
      }
      const csrf = PortalClient.csrf((await client.get('/portal/devices')).text);
      const failures: string[] = [];
      let compared = 0;
      const before = await databaseFingerprint(ctx.sql);
      for (const [route, fields] of Object.entries(portalRoutesWithIds)) {
        const places: PortalPlace[] = [
          ...Object.entries(portalPathIds(route.split(' ')[1]!)).map(([name, kind]) => ({
            in: 'path' as const,
            name,
            kind: kind as IdKind,
          })),
          ...fields,
        ];
        for (const place of places) {
          if (place.keySessionOnly && session === 'the operator') continue;
          for (const spelt of spellings) {
            const idValue = (id: string) => (place.value ?? String)(spelt(id));
            const missingId = crypto.randomUUID();
            const missing = elided(
              await portalCall(client, csrf, route, { ...place, value: idValue(missingId) }),
              missingId,
            );
            for (const theirId of foreignIds(place.kind)) {
              const foreign = elided(
                await portalCall(client, csrf, route, { ...place, value: idValue(theirId) }),
                theirId,
              );
              compared++;
              if (JSON.stringify(foreign) !== JSON.stringify(missing)) {
                failures.push(
                  `${route} ${place.in} ${place.name}: theirs ${foreign.status} ${foreign.text.slice(0, 2000)}\n` +
                    `unknown ${missing.status} ${missing.text.slice(0, 2000)}`,
                );
              }
            }
          }
        }
      }
      expect(failures).toEqual([]);
      expect(compared).toBeGreaterThan(30);
      expect(await databaseFingerprint(ctx.sql)).toBe(before);
    }, 300_000);
  }
});
