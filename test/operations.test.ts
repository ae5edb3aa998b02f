/**
 * Operations (api/README.md, Operations): health, the OpenAPI document (complete: every
 * endpoint, each with its security and error responses; every operation it lists is served),
 * and the interactive docs.
 */
import { describe, expect, it } from 'vitest';
import { createSql } from '../api/db/client.ts';
import { freePort } from '../api/runtime/embedded_postgres.ts';
import { request, testApp, testConfig, useTestApp } from './support/app.ts';

const ctx = useTestApp();

/** Every endpoint the service promises, as `METHOD /path` with OpenAPI path parameters. */
const contractEndpoints = [
  'POST /api/v1/organizations',
  'GET /api/v1/organizations',
  'GET /api/v1/organizations/{id}',
  'PATCH /api/v1/organizations/{id}',
  'GET /api/v1/organizations/{id}/activation-code',
  'POST /api/v1/organizations/{id}/activation-code/rotate',
  'GET /api/v1/backends',
  'GET /api/v1/workspaces',
  'GET /api/v1/merkmale',
  'GET /api/v1/templates',
  'GET /api/v1/templates/{id}',
  'POST /api/v1/activate',
  'POST /api/v1/templates/{id}/resolve',
  'POST /api/v1/organizations/{id}/enrollment-sessions',
  'GET /api/v1/organizations/{id}/enrollment-sessions',
  'GET /api/v1/enrollment-sessions/{id}',
  'POST /api/v1/enrollment-sessions/{id}/revoke',
  'POST /api/v1/agent/bootstrap',
  'POST /api/v1/agent/checkin',
  'POST /api/v1/agent/report',
  'GET /api/v1/organizations/{id}/devices',
  'GET /api/v1/organizations/{id}/fleet-status',
  'GET /api/v1/devices/{id}',
  'GET /api/v1/devices/{id}/hardware',
  'GET /api/v1/devices/{id}/events',
  'POST /api/v1/devices/{id}/deprovision',
  'POST /api/v1/devices/{id}/reprovision',
  'POST /api/v1/devices/{id}/archive',
  'PUT /api/v1/devices/{id}/org-unit',
  'POST /api/v1/organizations/{id}/org-units',
  'GET /api/v1/organizations/{id}/org-units',
  'GET /api/v1/org-units/{id}',
  'PATCH /api/v1/org-units/{id}',
  'DELETE /api/v1/org-units/{id}',
  'POST /api/v1/organizations/{id}/groups',
  'GET /api/v1/organizations/{id}/groups',
  'GET /api/v1/groups/{id}',
  'PATCH /api/v1/groups/{id}',
  'DELETE /api/v1/groups/{id}',
  'GET /api/v1/groups/{id}/devices',
  'PUT /api/v1/groups/{id}/devices/{device_id}',
  'DELETE /api/v1/groups/{id}/devices/{device_id}',
  'GET /api/v1/devices/{id}/catalog',
  ...['devices', 'org-units', 'groups'].flatMap((scope) => [
    `POST /api/v1/${scope}/{id}/catalog/{merkmal}/select`,
    `POST /api/v1/${scope}/{id}/catalog/{merkmal}/deselect`,
    `DELETE /api/v1/${scope}/{id}/catalog/{merkmal}`,
  ]),
  'GET /api/v1/org-units/{id}/catalog',
  'GET /api/v1/groups/{id}/catalog',
  'POST /api/v1/organizations/{id}/iso-builds',
  'GET /api/v1/organizations/{id}/iso-builds',
  'GET /api/v1/iso-builds/{id}',
  'GET /api/v1/iso-builds/{id}/download',
  'GET /api/v1/health',
  // §12 keys, §13 audit log, §15 liveness, §16 webhooks.
  'POST /api/v1/organizations/{id}/api-keys',
  'GET /api/v1/organizations/{id}/api-keys',
  'POST /api/v1/api-keys/{id}/revoke',
  'GET /api/v1/organizations/{id}/audit-events',
  'GET /api/v1/health/live',
  'POST /api/v1/organizations/{id}/webhooks',
  'GET /api/v1/organizations/{id}/webhooks',
  'DELETE /api/v1/webhooks/{id}',
  'GET /api/v1/webhooks/{id}/deliveries',
  // §28 device actions.
  'POST /api/v1/devices/{id}/actions',
  'GET /api/v1/devices/{id}/actions',
  'GET /api/v1/actions/{id}',
  'POST /api/v1/actions/{id}/cancel',
  'POST /api/v1/agent/actions/{id}/start',
  'POST /api/v1/agent/actions/{id}/result',
];

const publicOperations = new Set([
  'GET /api/v1/health',
  'GET /api/v1/health/live',
  'POST /api/v1/activate',
  'POST /api/v1/templates/{id}/resolve',
  'POST /api/v1/agent/bootstrap',
]);
const agentOperations = new Set([
  'POST /api/v1/agent/checkin',
  'POST /api/v1/agent/report',
  'PUT /api/v1/agent/inventory',
  'POST /api/v1/agent/disk-keys',
  'POST /api/v1/agent/actions/{id}/start',
  'POST /api/v1/agent/actions/{id}/result',
]);

type Operation = {
  operationId?: string;
  security?: Array<Record<string, unknown>>;
  'x-callers'?: string[];
  responses: Record<string, { description: string; content?: Record<string, { schema?: unknown }> }>;
  parameters?: Array<{ in: string; name: string; schema?: { format?: string } }>;
  requestBody?: unknown;
};

async function openapi() {
  const res = await ctx.request('GET', '/api/v1/openapi.json', { token: null });
  expect(res.status).toBe(200);
  return res.body as {
    openapi: string;
    paths: Record<string, Record<string, Operation>>;
    components: Record<string, Record<string, unknown>>;
  };
}

function operations(doc: Awaited<ReturnType<typeof openapi>>) {
  return Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, op]) => ({ key: `${method.toUpperCase()} ${path}`, op })),
  );
}

describe('GET /api/v1/health', () => {
  it('answers ok without a token', async () => {
    const res = await ctx.request('GET', '/api/v1/health', { token: null });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok', database: 'ok' });
  });

  it('answers 503 when the database is unreachable', async () => {
    const port = await freePort();
    const sql = createSql(`postgres://nobody:nothing@127.0.0.1:${port}/none`, { max: 1 });
    const app = testApp(sql, testConfig());
    const res = await request(app, 'GET', '/api/v1/health', { token: null });
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ status: 'degraded', database: 'unreachable' });
    expect(JSON.stringify(res.body)).not.toContain('nothing');
    await sql.end();
  });
});

describe('GET /api/v1/openapi.json', () => {
  it('is an OpenAPI 3.1 document with unique operation ids and resolvable references', async () => {
    const doc = await openapi();
    expect(doc.openapi).toBe('3.1.0');
    const ids = operations(doc).map(({ op }) => op.operationId);
    expect(ids.every((id) => typeof id === 'string' && id.length > 0)).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    const refs = [...JSON.stringify(doc).matchAll(/"\$ref":"#\/components\/(\w+)\/([^"]+)"/g)];
    for (const [, kind, name] of refs) expect(doc.components[kind!]?.[name!], `${kind}/${name}`).toBeDefined();
  });

  it('documents every endpoint the contract names', async () => {
    const documented = new Set(operations(await openapi()).map(({ key }) => key));
    const missing = contractEndpoints.filter((e) => !documented.has(e));
    expect(missing).toEqual([]);
  });

  it('serves every operation of the document: a call without credentials is routed and gets a documented status', async () => {
    const ops = operations(await openapi());
    expect(ops.length).toBeGreaterThanOrEqual(contractEndpoints.length);
    const wrong: string[] = [];
    for (const { key, op } of ops) {
      const [method, template] = key.split(' ') as [string, string];
      // Path parameters: a fresh UUID where the document says uuid, else a plain word.
      const path = template.replace(/\{(\w+)\}/g, (_, name: string) => {
        const param = op.parameters?.find((p) => p.in === 'path' && p.name === name);
        return param?.schema?.format === 'uuid' ? crypto.randomUUID() : 'firefox';
      });
      const res = await ctx.request(method, path, { token: null, ...(op.requestBody ? { body: {} } : {}) });
      const routed = !(res.status === 404 && String(res.body?.message ?? '').startsWith('no route for'));
      if (!routed || !(String(res.status) in op.responses)) wrong.push(`${key}: ${res.status}`);
    }
    expect(wrong).toEqual([]);
  });

  it('documents the security and error responses of every operation', async () => {
    for (const { key, op } of operations(await openapi())) {
      expect(op.responses['500'], `${key} documents 500`).toBeDefined();
      if (publicOperations.has(key)) {
        expect(op.security, key).toEqual([]);
      } else if (agentOperations.has(key)) {
        expect(op.security, key).toEqual([{ AgentSecret: [] }]);
        expect(op.responses['401']?.description, key).toContain('invalid_agent_secret');
      } else {
        const operatorOnly = op['x-callers']?.length === 1;
        expect(op.security, key).toEqual(
          operatorOnly ? [{ AdminToken: [] }] : [{ AdminToken: [] }, { OrganizationKey: [] }],
        );
        expect(op.responses['401']?.description, key).toContain('unauthorized');
      }
      if (op.parameters?.some((p) => p.in === 'path')) {
        expect(op.responses['404']?.description, `${key} documents 404`).toContain('not_found');
      }
      for (const [status, response] of Object.entries(op.responses)) {
        // The one non-error body above 400: health's 503, whose shape the contract fixes.
        if (Number(status) >= 400 && !(key === 'GET /api/v1/health' && status === '503')) {
          expect(response.content?.['application/json']?.schema, `${key} ${status}`).toEqual({
            $ref: '#/components/schemas/Error',
          });
        }
      }
    }
  });
});

describe('GET /api/v1/docs', () => {
  it('serves the interactive docs and their assets without a token', async () => {
    const page = await ctx.request('GET', '/api/v1/docs', { token: null });
    expect(page.status).toBe(200);
    expect(page.body).toContain('swagger-ui');
    for (const asset of ['swagger-ui.css', 'swagger-ui-bundle.js', 'swagger-ui-standalone-preset.js', 'init.js']) {
      const res = await ctx.request('GET', `/api/v1/docs/${asset}`, { token: null });
      expect(res.status, asset).toBe(200);
    }
    expect((await ctx.request('GET', '/api/v1/docs/../../package.json', { token: null })).status).toBe(404);
    expect((await ctx.request('GET', '/api/v1/docs/index.html', { token: null })).status).toBe(404);
  });

  it('serves the assets compressed, cacheable for a year under a content-hashed URL, with an ETag', async () => {
    const page = (await ctx.request('GET', '/api/v1/docs', { token: null })).body as string;
    const src = page.match(/src="(\/api\/v1\/docs\/swagger-ui-bundle\.js\?v=[\w-]+)"/)?.[1];
    expect(src).toBeDefined();
    expect(page).toMatch(
      /<link rel="icon" type="image\/png" sizes="32x32" href="\/api\/v1\/docs\/favicon-32x32\.png\?v=/,
    );
    const res = await ctx.app.request(src!, { headers: { 'accept-encoding': 'gzip, br' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-encoding')).toBe('gzip');
    expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(res.headers.get('vary')).toBe('Accept-Encoding');
    const etag = res.headers.get('etag');
    expect(etag).toMatch(/^"[\w-]+"$/);
    const compressed = new Uint8Array(await res.arrayBuffer());
    const plain = await ctx.app.request(src!);
    expect(plain.headers.get('content-encoding')).toBeNull();
    const text = await plain.text();
    expect(compressed.length).toBeLessThan(text.length / 2);
    const { gunzipSync } = await import('node:zlib');
    expect(gunzipSync(compressed).toString('utf8')).toBe(text);
    const again = await ctx.app.request(src!, { headers: { 'if-none-match': etag! } });
    expect(again.status).toBe(304);
    const icon = await ctx.app.request('/api/v1/docs/favicon-32x32.png');
    expect(icon.status).toBe(200);
    expect(icon.headers.get('content-type')).toBe('image/png');
  });
});

describe('unknown routes and errors', () => {
  it('answers 404 not_found in the error format for an unknown path', async () => {
    const res = await ctx.request('GET', '/api/v1/nothing-here');
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ error: 'not_found' });
  });

  it('requires the operator token or an organization key even for unknown paths under /api/v1', async () => {
    expect((await ctx.request('GET', '/api/v1/nothing-here', { token: null })).status).toBe(401);
    expect((await ctx.request('GET', '/api/v1/nothing-here', { token: 'fpk_not-a-key' })).status).toBe(401);
  });
});
