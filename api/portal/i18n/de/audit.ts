/** German: the audit log, its filters and paging. */
import type { AuditTargetType } from '../../../audit/repo.ts';

export const audit = {
  title: 'Audit-Log',
  intro: 'Jede Änderung durch den Betreiber, einen API-Schlüssel oder den Dienst selbst, neueste zuerst.',
  action: 'Aktion',
  allActions: 'alle',
  targetType: 'Art des Ziels',
  allTargetTypes: 'alle',
  target: 'Ziel',
  targetHint: 'ID des Ziels (oder unten „nur dieses Ziel“ wählen)',
  filter: 'Filtern',
  reset: 'Filter zurücksetzen',
  onlyTarget: 'nur dieses Ziel',
  filteredTarget: (name: string) => `Nur Einträge zu ${name}.`,
  time: 'Zeit',
  who: 'Wer',
  none: 'Keine Einträge für diese Auswahl.',
  pages: 'Seiten',
  first: '« Neueste',
  previous: '← Neuere',
  next: 'Ältere →',
  operator: 'Betreiber',
  system: 'System',
  /** A catalog event's change: the Merkmal and the state set, or that its override was removed. */
  catalogChange: (merkmal: string, state: string | null) =>
    state === null ? `Merkmal ${merkmal}: Vorgabe entfernt` : `Merkmal ${merkmal}: ${state}`,
  gone: 'gelöscht',
  invalidTarget: 'Die Ziel-ID ist keine gültige ID; der Filter wurde nicht angewandt.',
  /** What a target is, in the portal's words. */
  targetTypes: {
    organization: 'Organisation',
    device: 'Gerät',
    org_unit: 'Organisationseinheit',
    group: 'Gruppe',
    enrollment_session: 'Enrollment-Session',
    iso_build: 'ISO-Build',
    api_key: 'API-Schlüssel',
    webhook: 'Webhook',
    rollout: 'Rollout',
    disk_key: 'Wiederherstellungsschlüssel',
  } satisfies Record<AuditTargetType, string>,
};
