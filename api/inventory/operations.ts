/** The declarations of the inventory reads: the API routes and the portal's device page check the same objects. */
import { operation } from '../access/declaration.ts';

export const getDeviceInventory = operation({ access: 'org_viewer', tenant: { param: { id: 'device' } } });
export const listDevicePackages = operation({ access: 'org_viewer', tenant: { param: { id: 'device' } } });
