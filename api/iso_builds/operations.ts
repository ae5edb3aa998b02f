/**
 * The declarations of the ISO build operations (who may call, whose ids, what is audited):
 * the API routes are defined with them, and the portal's pages are checked with the same
 * objects.
 */
import { operation } from '../access/declaration.ts';

export const createIsoBuild = operation({
  access: 'org_admin',
  tenant: { param: { id: 'organization' }, json: { enrollment_session_id: 'enrollment_session' } },
  audit: 'iso_build.create',
});
export const listIsoBuilds = operation({ access: 'org_viewer', tenant: { param: { id: 'organization' } } });
export const getIsoBuild = operation({ access: 'org_viewer', tenant: { param: { id: 'iso_build' } } });
export const downloadIsoBuild = operation({
  access: 'org_admin',
  tenant: { param: { id: 'iso_build' } },
  audit: 'iso_build.download',
});
