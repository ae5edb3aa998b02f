/**
 * The declarations of the audit log operations (who may call, whose ids, what is audited):
 * the API routes are defined with them, and the portal's pages are checked with the same
 * objects.
 */
import { operation } from '../access/declaration.ts';

export const listAuditEvents = operation({ access: 'org_admin', tenant: { param: { id: 'organization' } } });
