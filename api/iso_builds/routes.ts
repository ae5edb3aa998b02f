import { z } from '@hono/zod-openapi';
import { recordAudit } from '../access/middleware.ts';
import { notFound } from '../http/errors.ts';
import { IdParams, json } from '../http/openapi.ts';
import { defineRoute, newRouter } from '../access/route.ts';
import { collectionOf, decodeCursor, PageQuery, toPage } from '../http/pagination.ts';
import { requireOrganization } from '../organizations/repo.ts';
import * as repo from './repo.ts';
import { ISO_CONTENT_TYPE, serveIsoDownload, triggerIsoBuild } from './service.ts';
import { IsoBuild, IsoBuildCreate } from './schemas.ts';
import * as ops from './operations.ts';

const tags = ['ISO builds'];

const createIsoBuild = defineRoute({
  method: 'post',
  path: '/organizations/{id}/iso-builds',
  operationId: 'createIsoBuild',
  tags,
  summary: 'Trigger a personalized installer ISO build',
  description:
    'Queues the build and answers at once with the `pending` build; poll it until `completed` or `failed`. ' +
    "The image carries the organization's activation code (as current when the build runs), the service's " +
    'base URL and, when given, a NetworkManager WLAN profile. When a newer build completes, older completed ' +
    'builds of the organization are deleted. The body may be omitted.\n\n' +
    'With `enrollment_session_id` the image carries the session id as its credential instead of the code ' +
    "(a lost image is worth no more than the session) and installs the session's template; with " +
    "`template_id` it installs that template. The template's backend picks the base image and the " +
    "installer's unattended setup (Debian preseed or Ubuntu autoinstall). Unknown template or session, or " +
    'a session of another organization: 404 `not_found`. A session that is revoked, expired or used up: ' +
    "403 `invalid_activation_code` (the error table's code for such a session); a `template_id` other than " +
    "the session's: 403 `template_not_allowed`.",
  operation: ops.createIsoBuild,
  errors: ['not_found', 'invalid_activation_code', 'template_not_allowed'],
  request: {
    params: IdParams,
    body: { required: false, content: { 'application/json': { schema: IsoBuildCreate } } },
  },
  responses: { 202: json(IsoBuild, 'The queued build (`pending`)') },
});

const listIsoBuilds = defineRoute({
  method: 'get',
  path: '/organizations/{id}/iso-builds',
  operationId: 'listIsoBuilds',
  tags,
  summary: "List the organization's ISO builds, newest first",
  operation: ops.listIsoBuilds,
  errors: ['not_found'],
  request: { params: IdParams, query: PageQuery },
  responses: { 200: json(collectionOf(IsoBuild, 'IsoBuildList'), 'A page of builds, newest first') },
});

const getIsoBuild = defineRoute({
  method: 'get',
  path: '/iso-builds/{id}',
  operationId: 'getIsoBuild',
  tags,
  summary: 'Poll one ISO build',
  operation: ops.getIsoBuild,
  errors: ['not_found'],
  request: { params: IdParams },
  responses: { 200: json(IsoBuild, 'The build') },
});

const binary = { [ISO_CONTENT_TYPE]: { schema: z.string().openapi({ format: 'binary' }) } };
const fileHeaders = {
  'Content-Length': { schema: { type: 'integer' as const }, description: 'Bytes in this response.' },
  ETag: { schema: { type: 'string' as const }, description: 'The quoted `sha256` of the whole image.' },
  'Content-Disposition': {
    schema: { type: 'string' as const },
    description: '`attachment; filename="fleet-installer-<id>.iso"`',
  },
  'Accept-Ranges': { schema: { type: 'string' as const }, description: '`bytes`' },
};

const downloadIsoBuild = defineRoute({
  method: 'get',
  path: '/iso-builds/{id}/download',
  operationId: 'downloadIsoBuild',
  tags,
  summary: 'Download the finished image (resumable)',
  description:
    'Streams the exact bytes of the image. `Range: bytes=a-b`, `bytes=a-` and `bytes=-n` give 206 with ' +
    '`Content-Range`; a range starting past the end gives 416 `range_not_satisfiable` with `Content-Range: bytes */<size>`; ' +
    'several ranges, another unit or a malformed range are ignored (200, whole file). `If-Range` with the ETag ' +
    'makes a resumed download safe: any other value sends the whole file. 409 `iso_not_ready` unless the build is ' +
    '`completed`; 404 once it is deleted (replaced by a newer build, or expired). The image carries the ' +
    'activation code or a session id: each successful answer (200 or 206) records an `iso_build.download` ' +
    'audit event with the caller as actor.',
  operation: ops.downloadIsoBuild,
  errors: ['not_found', 'iso_not_ready', 'range_not_satisfiable'],
  request: {
    params: IdParams,
    headers: z.object({
      range: z.string().optional().openapi({ description: 'One byte range, e.g. `bytes=1048576-`.' }),
      'if-range': z.string().optional().openapi({ description: 'The ETag the client already has part of.' }),
    }),
  },
  responses: {
    200: { description: 'The whole image', headers: fileHeaders, content: binary },
    206: {
      description: 'The requested byte range',
      headers: {
        ...fileHeaders,
        'Content-Range': { schema: { type: 'string' as const }, description: '`bytes <start>-<end>/<size>`' },
      },
      content: binary,
    },
  },
});

export function isoBuildRoutes() {
  return newRouter()
    .openapi(createIsoBuild, async (c) => {
      const { id } = c.req.valid('param');
      const { row, audit } = await triggerIsoBuild(c.get('db'), c.get('deps'), id, c.req.valid('json'));
      recordAudit(c, audit);
      return c.json(repo.serializeIsoBuild(row), 202);
    })
    .openapi(listIsoBuilds, async (c) => {
      const { id } = c.req.valid('param');
      const { limit, cursor } = c.req.valid('query');
      const sql = c.get('db');
      await requireOrganization(sql, id);
      const rows = await repo.listIsoBuilds(sql, id, decodeCursor(cursor), limit);
      return c.json(toPage(rows, limit, repo.serializeIsoBuild), 200);
    })
    .openapi(getIsoBuild, async (c) => {
      const { id } = c.req.valid('param');
      const row = await repo.getIsoBuild(c.get('db'), id);
      if (!row) throw notFound('ISO build', id);
      return c.json(repo.serializeIsoBuild(row), 200);
    })
    .openapi(downloadIsoBuild, async (c) => {
      const { id } = c.req.valid('param');
      const { range, 'if-range': ifRange } = c.req.valid('header');
      return serveIsoDownload(c, c.get('db'), id, range, ifRange);
    });
}
