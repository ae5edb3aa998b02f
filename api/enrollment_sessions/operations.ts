/**
 * The declarations of the enrollment session operations (who may call, whose ids, what is audited):
 * the API routes are defined with them, and the portal's pages are checked with the same
 * objects.
 */
import { operation } from '../access/declaration.ts';

export const createEnrollmentSession = operation({
  access: 'org_admin',
  tenant: { param: { id: 'organization' } },
  audit: 'enrollment_session.create',
});
export const listEnrollmentSessions = operation({ access: 'org_admin', tenant: { param: { id: 'organization' } } });
export const getEnrollmentSession = operation({ access: 'org_admin', tenant: { param: { id: 'enrollment_session' } } });
export const revokeEnrollmentSession = operation({
  access: 'org_admin',
  tenant: { param: { id: 'enrollment_session' } },
  audit: 'enrollment_session.revoke',
});
