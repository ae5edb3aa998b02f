/**
 * The declarations of the device action operations: the operator and org admins ask and
 * cancel; viewers read (without scripts and outputs). The agent's start and result are
 * the agent's routes (api/agent/).
 */
import { operation } from '../access/declaration.ts';

export const createAction = operation({
  access: 'org_admin',
  tenant: { param: { id: 'device' } },
  audit: 'action.create',
});
export const listActions = operation({ access: 'org_viewer', tenant: { param: { id: 'device' } } });
export const getAction = operation({ access: 'org_viewer', tenant: { param: { id: 'action' } } });
export const cancelAction = operation({
  access: 'org_admin',
  tenant: { param: { id: 'action' } },
  audit: 'action.cancel',
});
