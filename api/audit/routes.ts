/** The audit log of an organization: who changed what, newest first. */
import { z } from '@hono/zod-openapi';
import { IdParams, iso, json, Timestamp, Uuid } from '../http/openapi.ts';
import { defineRoute, newRouter } from '../access/route.ts';
import { collectionOf, decodeSeqCursor, encodeSeqCursor, PageQuery, toPage } from '../http/pagination.ts';
import { requireOrganization } from '../organizations/repo.ts';
import { type AuditEventRow, auditTargetTypes, listAuditEvents } from './repo.ts';
import * as ops from './operations.ts';

const Actor = z
  .union([
    z.object({ type: z.literal('operator') }),
    z.object({ type: z.literal('api_key'), api_key_id: Uuid, name: z.string() }),
    z
      .object({ type: z.literal('system') })
      .openapi({ description: 'The service itself, e.g. disabling a webhook whose deliveries failed for 3 days.' }),
  ])
  .openapi('AuditActor');

const AuditEvent = z
  .object({
    id: Uuid,
    organization_id: Uuid,
    actor: Actor,
    action: z.string().openapi({ description: '`<resource>.<verb>`', example: 'device.archive' }),
    target_type: z
      .string()
      .openapi({ description: `One of ${auditTargetTypes.map((t) => `\`${t}\``).join(', ')}.`, example: 'device' }),
    target_id: Uuid.nullable(),
    request_id: z.string(),
    created_at: Timestamp,
    details: z.record(z.string(), z.unknown()).openapi({ description: 'What changed; never a secret.' }),
  })
  .openapi('AuditEvent');

const AuditQuery = PageQuery.extend({
  action: z.string().max(100).optional().openapi({ description: 'Only this action, e.g. `device.archive`.' }),
  target_type: z.enum(auditTargetTypes).optional().openapi({
    description: 'Only events about resources of this kind, e.g. `device`; combines with the other filters.',
  }),
  target_id: Uuid.optional().openapi({ description: 'Only events about this resource.' }),
});

const listAudit = defineRoute({
  method: 'get',
  path: '/organizations/{id}/audit-events',
  operationId: 'listAuditEvents',
  tags: ['Audit log'],
  summary: "The organization's audit log, newest first",
  description:
    'One event per successful write by the operator or an organization API key, recorded in the same ' +
    'transaction as the change. Activation, resolve and the agent calls are not audited.',
  operation: ops.listAuditEvents,
  errors: ['not_found'],
  request: { params: IdParams, query: AuditQuery },
  responses: { 200: json(collectionOf(AuditEvent, 'AuditEventList'), 'A page of audit events, newest first') },
});

function serializeAuditEvent(row: AuditEventRow): z.infer<typeof AuditEvent> {
  const { seq: _seq, ...rest } = row;
  return { ...rest, created_at: iso(row.created_at) };
}

export function auditRoutes() {
  return newRouter().openapi(listAudit, async (c) => {
    const { id } = c.req.valid('param');
    const { limit, cursor, action, target_type, target_id } = c.req.valid('query');
    const db = c.get('db');
    await requireOrganization(db, id);
    const rows = await listAuditEvents(db, {
      organizationId: id,
      action,
      targetType: target_type,
      targetId: target_id,
      beforeSeq: decodeSeqCursor(cursor),
      limit,
    });
    return c.json(
      toPage(rows, limit, serializeAuditEvent, (r) => encodeSeqCursor(r.seq)),
      200,
    );
  });
}
