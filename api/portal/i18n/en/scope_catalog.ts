/**
 * English: an org unit's and a group's catalog section, and the confirmation of a change
 * there (how many devices it changes; all at once or in rings).
 */
// Typed by the German section itself, not by `Catalog` (catalog.ts imports this file: no circle).
import type { scopeCatalog as german } from '../de/scope_catalog.ts';

export const scopeCatalog: typeof german = {
  heading: 'Catalog',
  intro:
    'A setting here applies to every device in this scope unless a closer setting (a child unit, a group, the ' +
    'device) says otherwise. Before each change you see how many devices it changes, and you choose: all at once ' +
    'or in rings.',
  merkmal: 'Catalog item',
  here: 'Set here',
  none: 'none',
  present: 'present',
  converged: 'converged',
  pending: 'pending',
  failed: 'failed',
  change: 'Change',
  held: 'Rollout under way …',
  scopeName: {
    'org-units': (name: string) => `the org unit “${name}”`,
    groups: (name: string) => `the group “${name}”`,
  },
  shortScope: {
    'org-units': (name: string) => `at org unit ${name}`,
    groups: (name: string) => `at group ${name}`,
  },
  title: (merkmal: string, action: string) => `${action.charAt(0).toUpperCase()}${action.slice(1)} ${merkmal}`,
  what: {
    select: (merkmal: string, scope: string) => `“${merkmal}” is selected at ${scope} (it should be present).`,
    deselect: (merkmal: string, scope: string) => `“${merkmal}” is deselected at ${scope} (it should be absent).`,
    unset: (merkmal: string, scope: string) =>
      `The setting for “${merkmal}” at ${scope} is removed; its devices then follow the next setting above.`,
  },
  count: (n: number, shown: string) =>
    n === 0
      ? 'This change alters no device (the setting is saved all the same).'
      : `This change alters the state of ${shown} ${n === 1 ? 'device' : 'devices'}.`,
  allHeading: 'All at once',
  allText: 'Every device affected gets the new state at its next check-in.',
  allButton: 'Change all at once',
  ringsHeading: 'In rings',
  ringsText:
    'First some of the devices get the change, then more. If too many devices in a ring report a failure, the ' +
    'rollout pauses by itself before the next ring opens. Devices that join the scope later get the change once ' +
    'the rollout has completed.',
  ringsButton: 'Roll out in rings',
  cancel: 'Cancel',
  heldText: 'A rollout is changing this catalog item here right now; another change is possible only after it.',
  toRollout: 'To the running rollout',
  saved: (merkmal: string, action: string) => `Saved: ${action} ${merkmal}.`,
};
