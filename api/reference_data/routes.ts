/** Read-only seed catalog: backends, workspaces, Merkmale with their blueprints, each a collection paged as every other. */
import { z } from '@hono/zod-openapi';
import { json } from '../http/openapi.ts';
import { collectionOf, PageQuery, pageOfList } from '../http/pagination.ts';
import { defineRoute, newRouter } from '../access/route.ts';
import * as ops from './operations.ts';

const tags = ['Catalog data'];

const Backend = z
  .object({
    key: z.string().openapi({ example: 'debian' }),
    name: z.string(),
    distribution: z.string().openapi({ example: 'Debian 12' }),
    preferred: z.boolean(),
  })
  .openapi('Backend');

const Workspace = z
  .object({
    key: z.string().openapi({ example: 'standard' }),
    name: z.string(),
    workspace_merkmale: z
      .array(z.string())
      .openapi({ description: 'Merkmale every device of the workspace gets by default.' }),
  })
  .openapi('Workspace');

const Merkmal = z
  .object({
    key: z.string().openapi({ example: 'libreoffice' }),
    name: z.string(),
    kategorie: z.string().openapi({ example: 'app-store' }),
    im_auftragskatalog: z.boolean(),
    blueprints: z.array(z.object({ backend: z.string(), ansible_role: z.string() })),
  })
  .openapi('Merkmal');

const listBackends = defineRoute({
  method: 'get',
  path: '/backends',
  operationId: 'listBackends',
  tags,
  operation: ops.listBackends,
  summary: 'List backends (distributions)',
  description: 'The preferred backend first, then by key.',
  request: { query: PageQuery },
  responses: { 200: json(collectionOf(Backend, 'BackendList'), 'A page of backends') },
});

const listWorkspaces = defineRoute({
  method: 'get',
  path: '/workspaces',
  operationId: 'listWorkspaces',
  tags,
  operation: ops.listWorkspaces,
  summary: 'List workspaces with their default Merkmale',
  description: 'By key.',
  request: { query: PageQuery },
  responses: { 200: json(collectionOf(Workspace, 'WorkspaceList'), 'A page of workspaces') },
});

const listMerkmale = defineRoute({
  method: 'get',
  path: '/merkmale',
  operationId: 'listMerkmale',
  tags,
  operation: ops.listMerkmale,
  summary: 'List Merkmale with their Ansible role per backend',
  description: 'By Kategorie, then by key.',
  request: { query: PageQuery },
  responses: { 200: json(collectionOf(Merkmal, 'MerkmalList'), 'A page of Merkmale') },
});

export function referenceDataRoutes() {
  return newRouter()
    .openapi(listBackends, async (c) => {
      const items = await c.get('db')<z.infer<typeof Backend>[]>`
        select key, name, distribution, preferred from backends`;
      const { limit, cursor } = c.req.valid('query');
      return c.json(
        pageOfList(items, (b) => [b.preferred ? '0' : '1', b.key], limit, cursor),
        200,
      );
    })
    .openapi(listWorkspaces, async (c) => {
      const items = await c.get('db')<z.infer<typeof Workspace>[]>`
        select w.key, w.name,
               coalesce(array_agg(wm.merkmal order by wm.merkmal) filter (where wm.merkmal is not null), '{}') as workspace_merkmale
        from workspaces w left join workspace_merkmale wm on wm.workspace = w.key
        group by w.key`;
      const { limit, cursor } = c.req.valid('query');
      return c.json(
        pageOfList(items, (w) => [w.key], limit, cursor),
        200,
      );
    })
    .openapi(listMerkmale, async (c) => {
      const items = await c.get('db')<z.infer<typeof Merkmal>[]>`
        select m.key, m.name, m.kategorie, m.im_auftragskatalog,
               coalesce(jsonb_agg(jsonb_build_object('backend', b.backend, 'ansible_role', b.ansible_role)
                        order by b.backend) filter (where b.backend is not null), '[]') as blueprints
        from merkmale m left join blueprints b on b.merkmal = m.key
        group by m.key`;
      const { limit, cursor } = c.req.valid('query');
      return c.json(
        pageOfList(items, (m) => [m.kategorie, m.key], limit, cursor),
        200,
      );
    });
}
