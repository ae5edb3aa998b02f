/**
 * The declarations of the group operations (who may call, whose ids, what is audited):
 * the API routes are defined with them, and the portal's pages are checked with the same
 * objects.
 */
import { operation } from '../access/declaration.ts';

export const createGroup = operation({
  access: 'org_admin',
  tenant: { param: { id: 'organization' } },
  audit: 'group.create',
});
export const listGroups = operation({ access: 'org_viewer', tenant: { param: { id: 'organization' } } });
export const getGroup = operation({ access: 'org_viewer', tenant: { param: { id: 'group' } } });
export const updateGroup = operation({
  access: 'org_admin',
  tenant: { param: { id: 'group' } },
  audit: 'group.update',
});
export const deleteGroup = operation({
  access: 'org_admin',
  tenant: { param: { id: 'group' } },
  audit: 'group.delete',
});
export const listGroupDevices = operation({ access: 'org_viewer', tenant: { param: { id: 'group' } } });
export const addGroupMember = operation({
  access: 'org_admin',
  tenant: { param: { id: 'group', device_id: 'device' } },
  audit: 'group.add_device',
});
export const removeGroupMember = operation({
  access: 'org_admin',
  tenant: { param: { id: 'group', device_id: 'device' } },
  audit: 'group.remove_device',
});
