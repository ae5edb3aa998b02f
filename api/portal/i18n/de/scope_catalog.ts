/**
 * German: an org unit's and a group's catalog section, and the confirmation of a change
 * there (how many devices it changes; all at once or in rings).
 */
import type { RolloutCreateBody } from '../../../rollouts/schemas.ts';

type Scope = 'org-units' | 'groups';
type Action = NonNullable<RolloutCreateBody['action']>;

export const scopeCatalog = {
  heading: 'Auftragskatalog',
  intro:
    'Eine Vorgabe hier gilt für alle Geräte des Bereichs, soweit keine nähere Vorgabe (Unter-Einheit, Gruppe, Gerät) ' +
    'etwas anderes sagt. Vor jeder Änderung sehen Sie, wie viele Geräte sie ändert, und wählen: alle auf einmal oder ' +
    'in Ringen.',
  merkmal: 'Merkmal',
  here: 'Vorgabe hier',
  none: 'keine',
  present: 'vorhanden',
  converged: 'umgesetzt',
  pending: 'ausstehend',
  failed: 'fehlgeschlagen',
  change: 'Ändern',
  held: 'Rollout läuft …',
  /** The scope in running text (after "an"). */
  scopeName: {
    'org-units': (name: string) => `der Organisationseinheit „${name}“`,
    groups: (name: string) => `der Gruppe „${name}“`,
  } satisfies Record<Scope, (name: string) => string>,
  /** The scope in a button's label, after the Merkmal's name. */
  shortScope: {
    'org-units': (name: string) => `an der OE ${name}`,
    groups: (name: string) => `an der Gruppe ${name}`,
  } satisfies Record<Scope, (name: string) => string>,
  title: (merkmal: string, action: string) => `${merkmal} ${action}`,
  /** What the change does; `scope` is a `scopeName`. */
  what: {
    select: (merkmal: string, scope: string) => `„${merkmal}“ wird an ${scope} ausgewählt (soll vorhanden sein).`,
    deselect: (merkmal: string, scope: string) =>
      `„${merkmal}“ wird an ${scope} abgewählt (soll nicht vorhanden sein).`,
    unset: (merkmal: string, scope: string) =>
      `Die Vorgabe für „${merkmal}“ an ${scope} wird entfernt; ihre Geräte folgen dann der nächsten Vorgabe darüber.`,
  } satisfies Record<Action, (merkmal: string, scope: string) => string>,
  count: (n: number, shown: string) =>
    n === 0
      ? 'Diese Änderung ändert an keinem Gerät etwas (die Vorgabe wird trotzdem gespeichert).'
      : `Diese Änderung ändert den Zustand von ${n === 1 ? `${shown} Gerät` : `${shown} Geräten`}.`,
  allHeading: 'Alle auf einmal',
  allText: 'Jedes betroffene Gerät bekommt den neuen Zustand bei seinem nächsten Check-in.',
  allButton: 'Alle auf einmal ändern',
  ringsHeading: 'In Ringen',
  ringsText:
    'Erst ein Teil der Geräte bekommt die Änderung, dann mehr. Melden in einem Ring zu viele Geräte einen Fehler, ' +
    'hält das Rollout von selbst an, bevor der nächste Ring geöffnet wird. Geräte, die später in den Bereich kommen, ' +
    'bekommen die Änderung, wenn das Rollout abgeschlossen ist.',
  ringsButton: 'In Ringen ausrollen',
  cancel: 'Abbrechen',
  heldText: 'Dieses Merkmal wird hier gerade von einem Rollout geändert; eine andere Änderung geht erst danach.',
  toRollout: 'Zum laufenden Rollout',
  saved: (merkmal: string, action: string) => `${merkmal}: ${action} gespeichert.`,
};
