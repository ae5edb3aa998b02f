/** The OpenAPI document as generated clients and the interactive docs use it. */
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { errorCodes, statusesOf, type ErrorCode } from '../../api/http/errors.ts';
import { useTestApp } from '../support/app.ts';

const ctx = useTestApp();

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

async function openapi(): Promise<any> {
  const res = await ctx.request('GET', '/api/v1/openapi.json', { token: null });
  expect(res.status).toBe(200);
  return res.body;
}

/** Every object of the document with its JSON pointer. */
function* objects(node: Json, pointer = ''): Generator<[string, Record<string, Json>]> {
  if (Array.isArray(node)) {
    for (const [i, item] of node.entries()) yield* objects(item, `${pointer}/${i}`);
  } else if (node !== null && typeof node === 'object') {
    yield [pointer, node];
    for (const [key, value] of Object.entries(node)) yield* objects(value, `${pointer}/${key}`);
  }
}

describe('GET /api/v1/openapi.json', () => {
  it('states every pattern as a valid regular expression that its example matches', async () => {
    const doc = await openapi();
    const patterns: string[] = [];
    for (const [pointer, schema] of objects(doc)) {
      if (typeof schema.pattern !== 'string') continue;
      patterns.push(schema.pattern);
      expect(() => new RegExp(schema.pattern as string, 'u'), pointer).not.toThrow();
      expect(schema.pattern, pointer).not.toMatch(/\/[a-z]*$/);
      if (typeof schema.example === 'string')
        expect(new RegExp(schema.pattern, 'u').test(schema.example), pointer).toBe(true);
      if (schema.format === 'uuid') {
        expect(new RegExp(schema.pattern, 'u').test('3f1c2b7e-8d4a-4c55-9b1e-2a7d6c0f9e41'), pointer).toBe(true);
      }
    }
    expect(patterns.length).toBeGreaterThan(10);
    const serial = doc.components.schemas.ActivateRequest.properties.serial;
    expect(new RegExp(serial.pattern, 'u').test('PF3XK2QZ')).toBe(true);
    expect(new RegExp(serial.pattern, 'u').test('PF3\u0007')).toBe(false);
  });

  it('pre-fills no optional query filter', async () => {
    const doc = await openapi();
    const list = doc.paths['/api/v1/organizations/{id}/devices'].get;
    for (const name of ['oe_id', 'group_id']) {
      const param = list.parameters.find((p: { name: string }) => p.name === name);
      expect(param.required ?? false).toBe(false);
      expect(param.example, name).toBeUndefined();
      expect(param.schema.example, name).toBeUndefined();
    }
  });

  it('gives every error response an example per code of its status', async () => {
    const doc = await openapi();
    let checked = 0;
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        for (const [status, response] of Object.entries<any>(op.responses)) {
          const media = response.content?.['application/json'];
          if (Number(status) < 400 || media?.schema?.$ref !== '#/components/schemas/Error') continue;
          const examples = media.examples as Record<string, { value: { error: string } }>;
          expect(Object.keys(examples).length, `${method} ${path} ${status}`).toBeGreaterThan(0);
          for (const [key, { value }] of Object.entries(examples)) {
            const code = value.error as ErrorCode;
            expect(errorCodes).toContain(code);
            // One example per code, keyed by it; a second 404 names the field: not_found_oe_id.
            expect(key === code || key.startsWith(`${code}_`), key).toBe(true);
            expect(statusesOf(code), `${method} ${path} ${status} ${code}`).toContain(Number(status));
            expect(response.description).toContain(`\`${code}\``);
            checked++;
          }
        }
      }
    }
    expect(checked).toBeGreaterThan(100);
  });

  it('gives every collection a nullable next_cursor beside its items', async () => {
    const doc = await openapi();
    const resolve = (schema: any): any =>
      schema?.$ref ? resolve(doc.components.schemas[schema.$ref.replace('#/components/schemas/', '')]) : schema;
    const collections: string[] = [];
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        const schema = resolve(op.responses?.['200']?.content?.['application/json']?.schema);
        if (!schema?.properties?.items) continue;
        const where = `${method} ${path}`;
        // The two security feeds are a fixed list, answered whole as { items }.
        if (where === 'get /api/v1/vulnerability-feeds') continue;
        collections.push(where);
        expect(resolve(schema.properties.items).type, where).toBe('array');
        expect(schema.required, where).toEqual(expect.arrayContaining(['items', 'next_cursor']));
        const cursor = resolve(schema.properties.next_cursor);
        expect(cursor?.type, where).toEqual(['string', 'null']);
      }
    }
    expect(collections).toEqual(
      expect.arrayContaining(['get /api/v1/backends', 'get /api/v1/workspaces', 'get /api/v1/merkmale']),
    );
    expect(collections.length).toBeGreaterThan(10);
  });

  it('is sent gzip-compressed to a client that takes it, revalidated by its ETag', async () => {
    const plain = await ctx.app.request('/api/v1/openapi.json');
    expect(plain.headers.get('content-encoding')).toBeNull();
    const text = await plain.text();
    const res = await ctx.app.request('/api/v1/openapi.json', { headers: { 'accept-encoding': 'gzip, deflate, br' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-encoding')).toBe('gzip');
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.headers.get('vary')).toBe('Accept-Encoding');
    const compressed = new Uint8Array(await res.arrayBuffer());
    expect(gunzipSync(compressed).toString('utf8')).toBe(text);
    expect(JSON.parse(text).openapi).toBe('3.1.0');
    // About 226 KB plain; compressed it must be a fraction.
    expect(compressed.length).toBeLessThan(text.length / 5);
    const again = await ctx.app.request('/api/v1/openapi.json', {
      headers: { 'if-none-match': res.headers.get('etag')! },
    });
    expect(again.status).toBe(304);
  });

  it('lists the fixed values of the contract as enums', async () => {
    const doc = await openapi();
    const entry = doc.components.schemas.AgentReportEntry ?? doc.components.schemas.ReportEntry;
    expect(entry.properties.event.enum).toEqual(['applied', 'apply_failed', 'removed', 'remove_failed']);
    expect(
      doc.components.schemas.IsoBuild.properties.status.enum ?? doc.components.schemas.IsoBuildStatus?.enum,
    ).toEqual(['pending', 'running', 'completed', 'failed']);
  });
});
