/** German: what every page shares (header, labels of states, times, error pages). */
import type { ReportedEvent } from '../../../catalog/outcomes.ts';
import type { Convergence, DeviceStatus } from '../../../devices/repo.ts';

export const common = {
  language: {
    /** Each language's own name, as the switch offers it. */
    names: { de: 'Deutsch', en: 'English' },
    label: 'Sprache',
  },
  layout: {
    portal: 'Fleet-Portal',
    mainNavigation: 'Hauptnavigation',
    nav: {
      overview: 'Übersicht',
      devices: 'Geräte',
      orgUnits: 'Organisationseinheiten',
      groups: 'Gruppen',
      rollouts: 'Rollouts',
      enrollmentSessions: 'Enrollment-Sessions',
      isoBuilds: 'ISO-Builds',
      apiKeys: 'API-Schlüssel',
      audit: 'Audit-Log',
      webhooks: 'Webhooks',
    },
    operator: 'Betreiber',
    roles: { admin: 'Admin', viewer: 'Leser' },
    organization: 'Organisation',
    switchOrganization: 'Organisation wechseln',
    signOut: 'Abmelden',
  },
  /** A Merkmal's state at one step; none when that step has no override. */
  state: { present: 'vorhanden', absent: 'nicht vorhanden', none: '–' },
  status: {
    active: 'aktiv',
    stale: 'veraltet',
    enrolled: 'registriert',
    deprovisioned: 'deprovisioniert',
    archived: 'archiviert',
  } satisfies Record<DeviceStatus, string>,
  convergence: {
    converged: 'umgesetzt',
    pending: 'ausstehend',
    failed: 'fehlgeschlagen',
  } satisfies Record<Convergence, string>,
  report: {
    applied: 'angewendet',
    apply_failed: 'Anwenden fehlgeschlagen',
    removed: 'entfernt',
    remove_failed: 'Entfernen fehlgeschlagen',
  } satisfies Record<ReportedEvent, string>,
  time: {
    never: '–',
    justNow: 'gerade eben',
    inFuture: 'in der Zukunft',
    /** n ≥ 1 whole units ago. */
    ago: {
      minute: (n: number) => `vor ${n} ${n === 1 ? 'Minute' : 'Minuten'}`,
      hour: (n: number) => `vor ${n} ${n === 1 ? 'Stunde' : 'Stunden'}`,
      day: (n: number) => `vor ${n} ${n === 1 ? 'Tag' : 'Tagen'}`,
      month: (n: number) => `vor ${n} ${n === 1 ? 'Monat' : 'Monaten'}`,
      year: (n: number) => `vor ${n} ${n === 1 ? 'Jahr' : 'Jahren'}`,
    },
  },
  errors: {
    titles: { 403: 'Keine Berechtigung', 404: 'Nicht gefunden', 429: 'Zu viele Anfragen' } as Record<number, string>,
    refused: 'Anfrage abgelehnt',
    forbidden: 'Ihre Rolle erlaubt diese Aktion nicht. Nichts wurde geändert.',
    notFound: 'Das gesuchte Objekt gibt es nicht (oder nicht in Ihrer Organisation).',
    toDevices: 'Zu den Geräten',
    back: 'Zurück',
    noPage: 'Diese Seite gibt es nicht.',
    signedOutTitle: 'Nicht angemeldet',
    signedOut: 'Ihre Sitzung ist abgelaufen oder beendet.',
    signIn: 'Anmelden',
    csrf: 'Das Formular ist ungültig oder abgelaufen (CSRF-Token fehlt oder ist falsch). Nichts wurde geändert.',
    unexpectedTitle: 'Fehler',
    unexpected: (requestId: string) => `Ein unerwarteter Fehler ist aufgetreten (Anfrage ${requestId}).`,
    formTooLarge: 'Das Formular ist zu groß.',
    /** A zod failure: the fields and what is wrong with them. */
    invalidInput: (fields: string) => `Ungültige Eingabe – ${fields}`,
    inputField: 'Eingabe',
  },
};
