/** Template reads. Resolve lives with activation: it is the installer's call. */
import { notFound } from '../http/errors.ts';
import { IdParams, json } from '../http/openapi.ts';
import { defineRoute, newRouter } from '../access/route.ts';
import { collectionOf, decodeCursor, PageQuery, toPage } from '../http/pagination.ts';
import * as repo from './repo.ts';
import { Template } from './schemas.ts';
import * as ops from './operations.ts';

const tags = ['Catalog data'];

const listTemplates = defineRoute({
  method: 'get',
  path: '/templates',
  operationId: 'listTemplates',
  tags,
  summary: 'List provisioning templates (Bereitstellungsvorlagen)',
  operation: ops.listTemplates,
  request: { query: PageQuery },
  responses: { 200: json(collectionOf(Template, 'TemplateList'), 'A page of templates') },
});

const getTemplate = defineRoute({
  method: 'get',
  path: '/templates/{id}',
  operationId: 'getTemplate',
  tags,
  summary: 'Read one template',
  operation: ops.getTemplate,
  errors: ['not_found'],
  request: { params: IdParams },
  responses: { 200: json(Template, 'The template') },
});

export function templateRoutes() {
  return newRouter()
    .openapi(listTemplates, async (c) => {
      const { limit, cursor } = c.req.valid('query');
      const rows = await repo.listTemplates(c.get('db'), decodeCursor(cursor), limit);
      return c.json(toPage(rows, limit, repo.serializeTemplate), 200);
    })
    .openapi(getTemplate, async (c) => {
      const { id } = c.req.valid('param');
      const row = await repo.getTemplate(c.get('db'), id);
      if (!row) throw notFound('template', id);
      return c.json(repo.serializeTemplate(row), 200);
    });
}
