/**
 * The bulk actions of the device list (move to an org unit, add to or remove from a group,
 * select / deselect / unset a Merkmal): for each, the declaration of its single change, the
 * request its API call names, and the change itself, by the service function its API route
 * calls. The portal's forms and the worker's bulk jobs both change devices through these.
 */
import { actorOf, type AuditEntry, type Caller, type Operation, type RequestValues } from '../access/declaration.ts';
import { recordEffectiveChange } from '../catalog/effective_changes.ts';
import { selectionOperations, type SelectionVerb } from '../catalog/operations.ts';
import { changeSelection } from '../catalog/service.ts';
import type { Db } from '../db/client.ts';
import * as deviceOps from '../devices/operations.ts';
import { moveDevice } from '../devices/organize_repo.ts';
import * as groupOps from '../groups/operations.ts';
import { changeMember } from '../groups/service.ts';

/** The actions, by the path segment of their form. */
export const bulkActions = ['move', 'group-add', 'group-remove', 'select', 'deselect', 'unset'] as const;
export type BulkAction = (typeof bulkActions)[number];
export type Target = 'oe' | 'group' | 'merkmal';
export const targetOf: Record<BulkAction, Target> = {
  move: 'oe',
  'group-add': 'group',
  'group-remove': 'group',
  select: 'merkmal',
  deselect: 'merkmal',
  unset: 'merkmal',
};

/** The declaration each action makes for each device: its API twin's. */
export function operationOf(action: BulkAction): Operation {
  switch (action) {
    case 'move':
      return deviceOps.moveDevice;
    case 'group-add':
      return groupOps.addGroupMember;
    case 'group-remove':
      return groupOps.removeGroupMember;
    default:
      return selectionOperations.devices[action];
  }
}

/** A device's request as the action's API call names it (`target` may be missing: the devices alone). */
export function requestOf(action: BulkAction, target: string | undefined, deviceId: string | undefined): RequestValues {
  switch (targetOf[action]) {
    case 'oe':
      return { param: { id: deviceId }, json: { oe_id: target } };
    case 'group':
      return { param: { id: target, device_id: deviceId } };
    case 'merkmal':
      return { param: { id: deviceId, merkmal: target } };
  }
}

/** Each action's change of one device, by the service function its API route calls, and the route's audit entry. */
export function changeOf(
  action: BulkAction,
  target: string,
  pollIntervalSeconds: number,
): (tx: Db, caller: Caller, deviceId: string) => Promise<{ audit: AuditEntry }> {
  switch (action) {
    case 'move':
      return async (tx, caller, deviceId) => {
        const row = await moveDevice(tx, deviceId, target, actorOf(caller), recordEffectiveChange, pollIntervalSeconds);
        return {
          audit: {
            organizationId: row.organization_id,
            targetType: 'device',
            targetId: deviceId,
            details: { oe_id: target },
          },
        };
      };
    case 'group-add':
    case 'group-remove':
      return (tx, caller, deviceId) =>
        changeMember(tx, action === 'group-add' ? 'add' : 'remove', target, deviceId, caller, recordEffectiveChange);
    default: {
      const verb: SelectionVerb = action;
      const change =
        verb === 'unset'
          ? ({ kind: 'unset' } as const)
          : ({ kind: 'set', state: verb === 'select' ? 'present' : 'absent', optionen: {} } as const);
      return (tx, caller, deviceId) => changeSelection(tx, 'devices', deviceId, target, change, caller);
    }
  }
}
