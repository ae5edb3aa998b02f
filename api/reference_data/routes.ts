/** Read-only seed catalog: backends, workspaces, Merkmale with their blueprints, each list answered whole. */
import { z } from '@hono/zod-openapi';
import { json } from '../http/openapi.ts';
import { wholeCollectionOf } from '../http/pagination.ts';
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
  responses: { 200: json(wholeCollectionOf(Backend, 'BackendList'), 'All backends') },
});

const listWorkspaces = defineRoute({
  method: 'get',
  path: '/workspaces',
  operationId: 'listWorkspaces',
  tags,
  operation: ops.listWorkspaces,
  summary: 'List workspaces with their default Merkmale',
  responses: { 200: json(wholeCollectionOf(Workspace, 'WorkspaceList'), 'All workspaces') },
});

const listMerkmale = defineRoute({
  method: 'get',
  path: '/merkmale',
  operationId: 'listMerkmale',
  tags,
  operation: ops.listMerkmale,
  summary: 'List Merkmale with their Ansible role per backend',
  responses: { 200: json(wholeCollectionOf(Merkmal, 'MerkmalList'), 'All Merkmale') },
});

export function referenceDataRoutes() {
  return newRouter()
    .openapi(listBackends, async (c) => {
      const items = await c.get('db')<z.infer<typeof Backend>[]>`
        select key, name, distribution, preferred from backends order by preferred desc, key`;
      return c.json({ items, next_cursor: null }, 200);
    })
    .openapi(listWorkspaces, async (c) => {
      const items = await c.get('db')<z.infer<typeof Workspace>[]>`
        select w.key, w.name,
               coalesce(array_agg(wm.merkmal order by wm.merkmal) filter (where wm.merkmal is not null), '{}') as workspace_merkmale
        from workspaces w left join workspace_merkmale wm on wm.workspace = w.key
        group by w.key order by w.key`;
      return c.json({ items, next_cursor: null }, 200);
    })
    .openapi(listMerkmale, async (c) => {
      const items = await c.get('db')<z.infer<typeof Merkmal>[]>`
        select m.key, m.name, m.kategorie, m.im_auftragskatalog,
               coalesce(jsonb_agg(jsonb_build_object('backend', b.backend, 'ansible_role', b.ansible_role)
                        order by b.backend) filter (where b.backend is not null), '[]') as blueprints
        from merkmale m left join blueprints b on b.merkmal = m.key
        group by m.key order by m.kategorie, m.key`;
      return c.json({ items, next_cursor: null }, 200);
    });
}
