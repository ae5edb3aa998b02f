/**
 * The declarations of the device operations (who may call, whose ids, what is audited):
 * the API routes are defined with them, and the portal's pages are checked with the same
 * objects.
 */
import { operation } from '../access/declaration.ts';

export const listDevices = operation({
  access: 'org_viewer',
  tenant: { param: { id: 'organization' }, query: { oe_id: 'org_unit', group_id: 'group' } },
});
export const getFleetStatus = operation({
  access: 'org_viewer',
  tenant: { param: { id: 'organization' }, query: { oe_id: 'org_unit', group_id: 'group' } },
});
export const getDevice = operation({ access: 'org_viewer', tenant: { param: { id: 'device' } } });
export const moveDevice = operation({
  access: 'org_admin',
  tenant: { param: { id: 'device' }, json: { oe_id: 'org_unit' } },
  audit: 'device.move',
});
export const deprovisionDevice = operation({
  access: 'org_admin',
  tenant: { param: { id: 'device' } },
  audit: 'device.deprovision',
});
export const reprovisionDevice = operation({
  access: 'org_admin',
  tenant: { param: { id: 'device' } },
  audit: 'device.reprovision',
});
export const archiveDevice = operation({
  access: 'org_admin',
  tenant: { param: { id: 'device' } },
  audit: 'device.archive',
});
export const getDeviceHardware = operation({ access: 'org_viewer', tenant: { param: { id: 'device' } } });
export const listDeviceEvents = operation({ access: 'org_viewer', tenant: { param: { id: 'device' } } });
export const listDeviceVulnerabilities = operation({ access: 'org_viewer', tenant: { param: { id: 'device' } } });
export const listOrganizationVulnerabilities = operation({
  access: 'org_viewer',
  tenant: { param: { id: 'organization' }, query: { oe_id: 'org_unit', group_id: 'group' } },
});
