/** Organizations: create, list, read, patch, and the classic activation code. */
import type { z } from '@hono/zod-openapi';
import { recordAudit } from '../access/middleware.ts';
import { notFound } from '../http/errors.ts';
import { IdParams, iso, json, jsonBody } from '../http/openapi.ts';
import { defineRoute, newRouter } from '../access/route.ts';
import { collectionOf, decodeCursor, PageQuery, toPage } from '../http/pagination.ts';
import * as repo from './repo.ts';
import { ActivationCode, Organization, OrganizationCreate, OrganizationPatch } from './schemas.ts';
import * as ops from './operations.ts';

const tags = ['Organizations'];

function serializeOrganization(row: repo.OrganizationRow): z.infer<typeof Organization> {
  return { ...row, created_at: iso(row.created_at) };
}

function serializeCode(row: repo.ActivationCodeRow): z.infer<typeof ActivationCode> {
  return { code: row.code, created_at: iso(row.created_at) };
}

const createOrganization = defineRoute({
  method: 'post',
  path: '/organizations',
  operationId: 'createOrganization',
  tags,
  summary: 'Create an organization',
  description: 'Also creates its protected org unit "Neue Geräte" and a classic activation code.',
  operation: ops.createOrganization,
  request: { body: jsonBody(OrganizationCreate) },
  responses: { 201: json(Organization, 'The new organization') },
});

const listOrganizations = defineRoute({
  method: 'get',
  path: '/organizations',
  operationId: 'listOrganizations',
  tags,
  summary: 'List organizations (admin area, contact fields included)',
  operation: ops.listOrganizations,
  request: { query: PageQuery },
  responses: { 200: json(collectionOf(Organization, 'OrganizationList'), 'A page of organizations') },
});

const getOrganization = defineRoute({
  method: 'get',
  path: '/organizations/{id}',
  operationId: 'getOrganization',
  tags,
  summary: 'Read one organization (self-service, the same fields as the list)',
  operation: ops.getOrganization,
  errors: ['not_found'],
  request: { params: IdParams },
  responses: { 200: json(Organization, 'The organization') },
});

const patchOrganization = defineRoute({
  method: 'patch',
  path: '/organizations/{id}',
  operationId: 'updateOrganization',
  tags,
  summary: 'Update name and contact fields',
  operation: ops.updateOrganization,
  errors: ['not_found'],
  request: { params: IdParams, body: jsonBody(OrganizationPatch) },
  responses: { 200: json(Organization, 'The updated organization') },
});

const getActivationCode = defineRoute({
  method: 'get',
  path: '/organizations/{id}/activation-code',
  operationId: 'getActivationCode',
  tags,
  summary: "Read the organization's classic activation code",
  description: 'Each read records an `activation_code.read` audit event with the caller as actor.',
  operation: ops.getActivationCode,
  errors: ['not_found'],
  request: { params: IdParams },
  responses: { 200: json(ActivationCode, 'The current activation code') },
});

const rotateActivationCode = defineRoute({
  method: 'post',
  path: '/organizations/{id}/activation-code/rotate',
  operationId: 'rotateActivationCode',
  tags,
  summary: 'Replace the activation code; the old one stops working at once',
  operation: ops.rotateActivationCode,
  errors: ['not_found'],
  request: { params: IdParams },
  responses: { 200: json(ActivationCode, 'The new activation code') },
});

export function organizationRoutes() {
  return newRouter()
    .openapi(createOrganization, async (c) => {
      const row = await repo.createOrganization(c.get('db'), c.req.valid('json'));
      recordAudit(c, {
        organizationId: row.id,
        targetType: 'organization',
        targetId: row.id,
        details: { name: row.name },
      });
      return c.json(serializeOrganization(row), 201);
    })
    .openapi(listOrganizations, async (c) => {
      const { limit, cursor } = c.req.valid('query');
      const caller = c.get('caller');
      const only = caller.type === 'api_key' ? caller.organizationId : null;
      const rows = await repo.listOrganizations(c.get('db'), decodeCursor(cursor), limit, only);
      return c.json(toPage(rows, limit, serializeOrganization), 200);
    })
    .openapi(getOrganization, async (c) => {
      const { id } = c.req.valid('param');
      const row = await repo.getOrganization(c.get('db'), id);
      if (!row) throw notFound('organization', id);
      return c.json(serializeOrganization(row), 200);
    })
    .openapi(patchOrganization, async (c) => {
      const { id } = c.req.valid('param');
      const patch = c.req.valid('json');
      const row = await repo.updateOrganization(c.get('db'), id, patch);
      if (!row) throw notFound('organization', id);
      recordAudit(c, { organizationId: id, targetType: 'organization', targetId: id, details: patch });
      return c.json(serializeOrganization(row), 200);
    })
    .openapi(getActivationCode, async (c) => {
      const { id } = c.req.valid('param');
      const row = await repo.getActivationCode(c.get('db'), id);
      if (!row) throw notFound('organization', id);
      return c.json(serializeCode(row), 200);
    })
    .openapi(rotateActivationCode, async (c) => {
      const { id } = c.req.valid('param');
      const row = await repo.rotateActivationCode(c.get('db'), id);
      if (!row) throw notFound('organization', id);
      recordAudit(c, { organizationId: id, targetType: 'organization', targetId: id });
      return c.json(serializeCode(row), 200);
    });
}
