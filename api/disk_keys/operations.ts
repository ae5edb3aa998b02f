/** The declarations of the disk key operations: operator and org admins, never a viewer. */
import { operation } from '../access/declaration.ts';

export const listDiskKeys = operation({ access: 'org_admin', tenant: { param: { id: 'device' } } });
export const revealDiskKey = operation({
  access: 'org_admin',
  tenant: { param: { id: 'disk_key' } },
  audit: 'disk_key.reveal',
});
