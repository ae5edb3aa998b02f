/**
 * Operations (CONTRACT §11): health, the OpenAPI document (complete: every endpoint of the
 * contract, each with its security and error responses), and the interactive docs.
 */
import { describe, expect, it } from 'vitest';
import { createApp } from '../api/app.ts';
import { createSql } from '../api/db/client.ts';
import { silentLogger } from '../api/log.ts';
import { freePort } from '../api/runtime/embedded_postgres.ts';
import { request, testConfig, useTestApp } from './support/app.ts';

const ctx = useTestApp();

/** Every endpoint of CONTRACT.md, as `METHOD /path` with OpenAPI path parameters. */
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
];

const publicOperations = new Set([
  'GET /api/v1/health',
  'POST /api/v1/activate',
  'POST /api/v1/templates/{id}/resolve',
  'POST /api/v1/agent/bootstrap',
]);
const agentOperations = new Set(['POST /api/v1/agent/checkin', 'POST /api/v1/agent/report']);

type Operation = {
  operationId?: string;
  security?: Array<Record<string, unknown>>;
  responses: Record<string, { description: string; content?: Record<string, { schema?: unknown }> }>;
  parameters?: Array<{ in: string; name: string }>;
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
    const app = createApp({ sql, config: testConfig(), log: silentLogger });
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

  it('covers every endpoint of the contract', async () => {
    const documented = new Set(operations(await openapi()).map(({ key }) => key));
    const missing = contractEndpoints.filter((e) => !documented.has(e));
    expect(missing).toEqual([]);
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
        expect(op.security, key).toEqual([{ AdminToken: [] }]);
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
});

describe('unknown routes and errors', () => {
  it('answers 404 not_found in the error format for an unknown path', async () => {
    const res = await ctx.request('GET', '/api/v1/nothing-here');
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ error: 'not_found' });
  });

  it('requires the admin token even for unknown paths under /api/v1', async () => {
    const res = await ctx.request('GET', '/api/v1/nothing-here', { token: null });
    expect(res.status).toBe(401);
  });
});
