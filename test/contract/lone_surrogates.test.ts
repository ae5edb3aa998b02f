/**
 * A lone UTF-16 surrogate in any string of any request body is 400 `invalid_request`, and
 * nothing is written (api/README.md, Conventions; found by fuzzing: a PATCH answered 500, a POST stored
 * U+FFFD). The cases are generated from the OpenAPI document: every string field of every
 * operation's body, reached through objects, arrays and free-form objects, gets
 * "a\ud800b" in a body built from the schema's examples; not listed by hand.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, useTestApp } from '../support/app.ts';
import { databaseFingerprint, fillPath, tenantFixture, type TenantFixture } from '../support/access.ts';

const ctx = useTestApp();
const BAD = 'a\ud800b';

type Schema = Record<string, any>;
type Path = Array<string | number>;

let doc: any;
let fixture: TenantFixture;

beforeAll(async () => {
  doc = (await ctx.request('GET', '/api/v1/openapi.json', { token: null })).body;
  fixture = await tenantFixture(ctx);
});

function deref(schema: Schema): Schema {
  let s = schema;
  while (s?.$ref) s = doc.components.schemas[String(s.$ref).split('/').pop()!];
  return s ?? {};
}

/** The branches of a union (nullable fields are `anyOf: [T, null]`), or the schema itself. */
function branches(schema: Schema): Schema[] {
  const s = deref(schema);
  const union = s.anyOf ?? s.oneOf;
  if (union) return (union as Schema[]).flatMap(branches);
  // OpenAPI 3.1 spells a nullable type as a list: `type: ['string', 'null']`.
  if (Array.isArray(s.type)) return s.type.filter((t: string) => t !== 'null').map((type: string) => ({ ...s, type }));
  return s.type === 'null' ? [] : [s];
}

/** A value the schema describes, from its examples where it has them. */
function sample(schema: Schema, depth = 0): unknown {
  const s = branches(schema)[0]!;
  if (s.example !== undefined) return s.example;
  if (s.enum) return s.enum[0];
  if (s.type === 'object' || s.properties) {
    const out: Record<string, unknown> = {};
    if (depth < 6) for (const name of s.required ?? []) out[name] = sample(s.properties[name], depth + 1);
    return out;
  }
  if (s.type === 'array') return depth < 6 ? [sample(s.items ?? {}, depth + 1)] : [];
  if (s.type === 'integer' || s.type === 'number') return s.minimum ?? 1;
  if (s.type === 'boolean') return true;
  if (s.format === 'uuid') return fixture.deviceId;
  return 'x';
}

/** Every path at which the schema takes a string, and a sample body that has one there. */
function stringFields(schema: Schema, path: Path = [], depth = 0): Path[] {
  if (depth > 8) return [];
  return branches(schema).flatMap((s): Path[] => {
    if (s.type === 'string') return [path];
    if (s.type === 'array') return stringFields(s.items ?? {}, [...path, 0], depth + 1);
    if (s.type === 'object' || s.properties || s.additionalProperties) {
      const named = Object.entries((s.properties ?? {}) as Record<string, Schema>).flatMap(([name, p]) =>
        stringFields(p, [...path, name], depth + 1),
      );
      // A free-form object (hardware, optionen, detail): a string under a key of our own.
      const free = s.additionalProperties || (!s.properties && s.type === 'object') ? [[...path, 'feld']] : [];
      return [...named, ...free];
    }
    // Any JSON value (no type): a string is one of them.
    return s.type === undefined && !s.enum && !s.const ? [path] : [];
  });
}

/** The sample body with BAD at the path, creating the objects and arrays on the way. */
function withBadString(schema: Schema, path: Path): unknown {
  // A copy: a schema's own example is one object of the document, and each case writes into it.
  const body = structuredClone(sample(schema) ?? {}) as Record<string | number, unknown>;
  if (path.length === 0) return BAD;
  let node: any = body;
  path.forEach((key, i) => {
    if (i === path.length - 1) {
      node[key] = BAD;
      return;
    }
    const next = path[i + 1];
    if (typeof node[key] !== 'object' || node[key] === null) node[key] = typeof next === 'number' ? [] : {};
    node = node[key];
  });
  return body;
}

function tokenFor(callers: string[]): string | null {
  if (callers.includes('agent')) return fixture.agentSecret;
  if (callers.includes('operator')) return ADMIN_TOKEN;
  return null;
}

describe('a lone surrogate in any string of any body', () => {
  it('is 400 invalid_request naming the field, and writes nothing, for every string field of the document', async () => {
    const failures: string[] = [];
    let cases = 0;
    let operations = 0;
    for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
      for (const [method, op] of Object.entries(item)) {
        const schema = op.requestBody?.content?.['application/json']?.schema;
        if (!schema) continue;
        operations++;
        const { url } = fillPath({ method, path, callers: op['x-callers'] }, fixture);
        const before = await databaseFingerprint(ctx.sql);
        const fields = stringFields(schema);
        if (fields.length === 0) failures.push(`${method} ${path}: no string field found in its body`);
        for (const field of fields) {
          cases++;
          const res = await ctx.request(method.toUpperCase(), url, {
            token: tokenFor(op['x-callers'] ?? []),
            body: withBadString(schema, field),
          });
          const where = `${method.toUpperCase()} ${path} ${field.join('.') || '(body)'}`;
          if (res.status !== 400 || res.body?.error !== 'invalid_request') {
            failures.push(`${where}: ${res.status} ${res.body?.error}`);
          } else if (JSON.stringify(res.body.details?.[0]?.path) !== JSON.stringify(field.map(String))) {
            failures.push(`${where}: refused for ${JSON.stringify(res.body.details)}`);
          } else if (!String(res.body.message).includes('surrogate')) {
            failures.push(`${where}: ${res.body.message}`);
          }
        }
        if ((await databaseFingerprint(ctx.sql)) !== before) failures.push(`${method} ${path}: wrote something`);
      }
    }
    expect(failures).toEqual([]);
    expect(operations).toBeGreaterThan(20);
    expect(cases).toBeGreaterThan(45);
  }, 600_000);

  it('the fuzzed PATCH of a group, an org unit and an organization: 400, where it was a 500', async () => {
    for (const url of [
      `/api/v1/groups/${fixture.groupId}`,
      `/api/v1/org-units/${fixture.orgUnitId}`,
      `/api/v1/organizations/${fixture.organizationId}`,
    ]) {
      const res = await ctx.request('PATCH', url, {
        rawBody: '{"name":"a\\ud800b"}',
        headers: { 'content-type': 'application/json' },
      });
      expect([res.status, res.body.error, res.body.details]).toEqual([
        400,
        'invalid_request',
        [{ path: ['name'], message: expect.stringContaining('surrogate') }],
      ]);
    }
    const created = await ctx.request('POST', `/api/v1/organizations/${fixture.organizationId}/groups`, {
      rawBody: '{"name":"a\\udc00b"}',
      headers: { 'content-type': 'application/json' },
    });
    expect([created.status, created.body.error]).toEqual([400, 'invalid_request']);
  });
});
