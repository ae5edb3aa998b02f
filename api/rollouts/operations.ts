/**
 * The declarations of the rollout operations (who may call, whose ids, what is audited):
 * the API routes are defined with them, and the portal's pages are checked with the same
 * objects. The body's `scope_id` (an org unit or a group, by `scope`) is checked by the
 * service: unknown or another organization's is 404 for an organization key.
 */
import { operation } from '../access/declaration.ts';

export const createRollout = operation({
  access: 'org_admin',
  tenant: { param: { id: 'organization' } },
  audit: 'rollout.create',
});
export const listRollouts = operation({ access: 'org_viewer', tenant: { param: { id: 'organization' } } });
export const getRollout = operation({ access: 'org_viewer', tenant: { param: { id: 'rollout' } } });
export const listRolloutDevices = operation({ access: 'org_viewer', tenant: { param: { id: 'rollout' } } });
export const pauseRollout = operation({
  access: 'org_admin',
  tenant: { param: { id: 'rollout' } },
  audit: 'rollout.pause',
});
export const resumeRollout = operation({
  access: 'org_admin',
  tenant: { param: { id: 'rollout' } },
  audit: 'rollout.resume',
});
export const abortRollout = operation({
  access: 'org_admin',
  tenant: { param: { id: 'rollout' } },
  audit: 'rollout.abort',
});
