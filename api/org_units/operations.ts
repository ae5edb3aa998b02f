/**
 * The declarations of the org unit operations (who may call, whose ids, what is audited):
 * the API routes are defined with them, and the portal's pages are checked with the same
 * objects.
 */
import { operation } from '../access/declaration.ts';

export const createOrgUnit = operation({
  access: 'org_admin',
  tenant: { param: { id: 'organization' }, json: { parent_id: 'org_unit' } },
  audit: 'org_unit.create',
});
export const listOrgUnits = operation({ access: 'org_viewer', tenant: { param: { id: 'organization' } } });
export const getOrgUnit = operation({ access: 'org_viewer', tenant: { param: { id: 'org_unit' } } });
export const updateOrgUnit = operation({
  access: 'org_admin',
  tenant: { param: { id: 'org_unit' }, json: { parent_id: 'org_unit' } },
  audit: 'org_unit.update',
});
export const deleteOrgUnit = operation({
  access: 'org_admin',
  tenant: { param: { id: 'org_unit' } },
  audit: 'org_unit.delete',
});
