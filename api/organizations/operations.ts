/** The declarations of the organization operations (who may call, whose ids, what is audited), for their API routes. */
import { operation } from '../access/declaration.ts';

export const createOrganization = operation({ access: 'operator', audit: 'organization.create' });
export const listOrganizations = operation({ access: 'org_viewer' });
export const getOrganization = operation({ access: 'org_viewer', tenant: { param: { id: 'organization' } } });
export const updateOrganization = operation({
  access: 'org_admin',
  tenant: { param: { id: 'organization' } },
  audit: 'organization.update',
});
export const getActivationCode = operation({
  access: 'org_admin',
  tenant: { param: { id: 'organization' } },
  audit: 'activation_code.read',
});
export const rotateActivationCode = operation({
  access: 'org_admin',
  tenant: { param: { id: 'organization' } },
  audit: 'activation_code.rotate',
});
