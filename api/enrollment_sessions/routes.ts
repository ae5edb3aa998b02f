/**
 * Enrollment sessions for admins: time-limited, organization-bound
 * pre-approvals for a rollout, bound to one template, with a device quota. The session
 * id is the installer's credential at activation.
 */
import type { z } from '@hono/zod-openapi';
import { recordAudit } from '../access/middleware.ts';
import { notFound } from '../http/errors.ts';
import { IdParams, iso, json, jsonBody } from '../http/openapi.ts';
import { defineRoute, newRouter } from '../access/route.ts';
import { collectionOf, decodeCursor, PageQuery, toPage } from '../http/pagination.ts';
import { requireOrganization } from '../organizations/repo.ts';
import * as repo from './repo.ts';
import * as service from './service.ts';
import { EnrollmentSession, EnrollmentSessionCreate } from './schemas.ts';
import * as ops from './operations.ts';

const tags = ['Enrollment sessions'];

function serializeSession(row: repo.EnrollmentSessionRow): z.infer<typeof EnrollmentSession> {
  return {
    ...row,
    expires_at: iso(row.expires_at),
    revoked_at: iso(row.revoked_at),
    created_at: iso(row.created_at),
  };
}

const createSession = defineRoute({
  method: 'post',
  path: '/organizations/{id}/enrollment-sessions',
  operationId: 'createEnrollmentSession',
  tags,
  summary: 'Create an enrollment session for a rollout',
  description:
    '`expires_at` must lie in the future and `max_devices` be at least 1 (else 400 `invalid_request`). An ' +
    'unknown organization or an unknown `template_id` is 404 `not_found`: the template must exist in this ' +
    'installation, like the organization in the path.',
  operation: ops.createEnrollmentSession,
  errors: ['not_found'],
  request: { params: IdParams, body: jsonBody(EnrollmentSessionCreate) },
  responses: { 201: json(EnrollmentSession, 'The new session; its id is the credential for installers') },
});

const listSessions = defineRoute({
  method: 'get',
  path: '/organizations/{id}/enrollment-sessions',
  operationId: 'listEnrollmentSessions',
  tags,
  summary: "List the organization's enrollment sessions (revoked and expired ones included), oldest first",
  description: 'Not for `viewer` keys (403 `forbidden`): a session id is an installer credential.',
  operation: ops.listEnrollmentSessions,
  errors: ['not_found'],
  request: { params: IdParams, query: PageQuery },
  responses: { 200: json(collectionOf(EnrollmentSession, 'EnrollmentSessionList'), 'A page of enrollment sessions') },
});

const getSession = defineRoute({
  method: 'get',
  path: '/enrollment-sessions/{id}',
  operationId: 'getEnrollmentSession',
  tags,
  summary: 'Read one enrollment session',
  description: 'Not for `viewer` keys (403 `forbidden`): a session id is an installer credential.',
  operation: ops.getEnrollmentSession,
  errors: ['not_found'],
  request: { params: IdParams },
  responses: { 200: json(EnrollmentSession, 'The enrollment session') },
});

const revokeSession = defineRoute({
  method: 'post',
  path: '/enrollment-sessions/{id}/revoke',
  operationId: 'revokeEnrollmentSession',
  tags,
  summary: 'Revoke an enrollment session (idempotent: a second call keeps the first revoked_at)',
  description: 'From then on, activate and resolve with the session answer 403 `invalid_activation_code`.',
  operation: ops.revokeEnrollmentSession,
  errors: ['not_found'],
  request: { params: IdParams },
  responses: { 200: json(EnrollmentSession, 'The session with revoked_at set') },
});

export function enrollmentSessionRoutes() {
  return newRouter()
    .openapi(createSession, async (c) => {
      const { id } = c.req.valid('param');
      const { row, audit } = await service.createSession(c.get('db'), id, c.req.valid('json'));
      recordAudit(c, audit);
      return c.json(serializeSession(row), 201);
    })
    .openapi(listSessions, async (c) => {
      const { id } = c.req.valid('param');
      const { limit, cursor } = c.req.valid('query');
      const sql = c.get('db');
      await requireOrganization(sql, id);
      const rows = await repo.listEnrollmentSessions(sql, id, decodeCursor(cursor), limit);
      return c.json(toPage(rows, limit, serializeSession), 200);
    })
    .openapi(getSession, async (c) => {
      const { id } = c.req.valid('param');
      const row = await repo.getEnrollmentSession(c.get('db'), id);
      if (!row) throw notFound('enrollment session', id);
      return c.json(serializeSession(row), 200);
    })
    .openapi(revokeSession, async (c) => {
      const { id } = c.req.valid('param');
      const { row, audit } = await service.revokeSession(c.get('db'), id);
      recordAudit(c, audit);
      return c.json(serializeSession(row), 200);
    });
}
