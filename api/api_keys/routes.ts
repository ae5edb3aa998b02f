/**
 * Organization API keys (api/README.md, Access): the operator or an organization's admins create,
 * list and revoke the keys with which a customer's portal and scripts call the API.
 */
import type { z } from '@hono/zod-openapi';
import { recordAudit } from '../access/middleware.ts';
import { IdParams, iso, json, jsonBody } from '../http/openapi.ts';
import { defineRoute, newRouter } from '../access/route.ts';
import { collectionOf, decodeCursor, PageQuery, toPage } from '../http/pagination.ts';
import { requireOrganization } from '../organizations/repo.ts';
import * as repo from './repo.ts';
import { createKey, revokeKey } from './service.ts';
import { ApiKey, ApiKeyCreate, CreatedApiKey } from './schemas.ts';
import * as ops from './operations.ts';

const tags = ['API keys'];

function serializeApiKey(row: repo.ApiKeyRow): z.infer<typeof ApiKey> {
  return {
    ...row,
    created_at: iso(row.created_at),
    expires_at: iso(row.expires_at),
    last_used_at: iso(row.last_used_at),
    revoked_at: iso(row.revoked_at),
  };
}

const createApiKey = defineRoute({
  method: 'post',
  path: '/organizations/{id}/api-keys',
  operationId: 'createApiKey',
  tags,
  summary: 'Create an organization API key (the key is shown once)',
  description:
    'The answer carries `key` this once; the service keeps only its SHA-256 hash. Use it as ' +
    '`Authorization: Bearer <key>`. A revoked or expired key is 401 `unauthorized`, like a wrong one.',
  operation: ops.createApiKey,
  errors: ['not_found'],
  request: { params: IdParams, body: jsonBody(ApiKeyCreate) },
  responses: { 201: json(CreatedApiKey, 'The new key, with the key itself') },
});

const listApiKeys = defineRoute({
  method: 'get',
  path: '/organizations/{id}/api-keys',
  operationId: 'listApiKeys',
  tags,
  summary: "List the organization's API keys (never the keys themselves)",
  operation: ops.listApiKeys,
  errors: ['not_found'],
  request: { params: IdParams, query: PageQuery },
  responses: { 200: json(collectionOf(ApiKey, 'ApiKeyList'), 'A page of API keys, oldest first') },
});

const revokeApiKey = defineRoute({
  method: 'post',
  path: '/api-keys/{id}/revoke',
  operationId: 'revokeApiKey',
  tags,
  summary: 'Revoke an API key for good (idempotent)',
  description:
    'Takes effect at once: the call waits for none of the requests under way with the key, and every request that ' +
    'starts after it returned is refused with 401 `unauthorized`. Requests already under way may still finish.',
  operation: ops.revokeApiKey,
  errors: ['not_found'],
  request: { params: IdParams },
  responses: { 200: json(ApiKey, 'The key with revoked_at set') },
});

export function apiKeyRoutes() {
  return newRouter()
    .openapi(createApiKey, async (c) => {
      const { id } = c.req.valid('param');
      const body = c.req.valid('json');
      const { row, key, audit } = await createKey(c.get('db'), id, body);
      recordAudit(c, audit);
      return c.json({ ...serializeApiKey(row), key }, 201);
    })
    .openapi(listApiKeys, async (c) => {
      const { id } = c.req.valid('param');
      const { limit, cursor } = c.req.valid('query');
      const db = c.get('db');
      await requireOrganization(db, id);
      const rows = await repo.listApiKeys(db, id, decodeCursor(cursor), limit);
      return c.json(toPage(rows, limit, serializeApiKey), 200);
    })
    .openapi(revokeApiKey, async (c) => {
      const { id } = c.req.valid('param');
      const { row, audit } = await revokeKey(c.get('db'), id);
      recordAudit(c, audit);
      return c.json(serializeApiKey(row), 200);
    });
}
