/** German: what every page shares (header, labels of states, times, error pages). */
import type { ReportedEvent } from '../../../catalog/outcomes.ts';
import type { Convergence, DeviceStatus } from '../../../devices/repo.ts';
import type { DiskEncryptionState } from '../../../devices/disk_encryption.ts';

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
  /** A device's disk as fleet status counts it. */
  diskEncryption: {
    encrypted: 'verschlüsselt',
    escrowed: 'mit hinterlegtem Wiederherstellungsschlüssel',
    missing: 'Schlüssel fehlt auf dem Gerät',
    unencrypted: 'unverschlüsselt',
  } satisfies Record<DiskEncryptionState, string>,
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
  /** The domain's refusals in the portal's words: by error code, and by the field a validation refusal names. */
  refusals: {
    codes: {
      device_archived: 'Das Gerät ist archiviert und ändert sich nicht mehr. Nichts wurde geändert.',
      unknown_merkmal: 'Dieses Merkmal gibt es nicht. Nichts wurde geändert.',
      not_in_catalog:
        'Dieses Merkmal steht nicht im Auftragskatalog (oder hat keinen Bauplan für das Backend des Geräts). Nichts wurde geändert.',
      iso_not_ready: 'Das ISO-Image ist noch nicht fertig.',
      organization_mismatch: 'Das gehört zu einer anderen Organisation. Nichts wurde geändert.',
      name_taken: 'Dieser Name ist hier schon vergeben: Wählen Sie einen anderen. Nichts wurde geändert.',
      payload_too_large: 'Das Formular ist zu groß.',
      device_deprovisioned:
        'Das Gerät ist deprovisioniert und nimmt keine Aktionen an, bis es reprovisioniert wird. Nichts wurde geändert.',
      action_not_cancelable:
        'Diese Aktion läuft schon, ist beendet oder abgelaufen: Nur eine wartende oder zugestellte Aktion lässt sich abbrechen.',
      device_count_changed:
        'Die Zahl der Geräte hat sich seit der Bestätigung geändert. Nichts wurde geändert; bitte erneut bestätigen.',
    } as Record<string, string>,
    fields: {
      url: 'Die Adresse ist nicht erlaubt: nur eine vollständige https-Adresse im Internet, ohne Zugangsdaten und ohne #-Teil.',
      cursor: 'Diese Seitenangabe gehört nicht zu dieser Liste: Beginnen Sie auf der ersten Seite.',
      name: 'Der Name muss 1 bis 200 Zeichen lang sein.',
      limit: 'Die Seitengröße muss zwischen 1 und 500 liegen.',
      expires_at: 'Das Ablaufdatum muss ein gültiger Zeitpunkt in der Zukunft sein.',
      max_devices: 'Die Anzahl der Geräte muss eine ganze Zahl ab 1 sein.',
      events: 'Wählen Sie mindestens ein bekanntes Ereignis.',
      role: 'Die Rolle muss „admin“ oder „viewer“ sein.',
      type: 'Bitte eine Aktion wählen: Neustart, Jetzt anwenden, Updates installieren oder Skript.',
      parameters: 'Die Einstellungen der Aktion sind ungültig.',
      'parameters.delay_seconds': 'Die Verzögerung muss eine ganze Zahl von 0 bis 3600 Sekunden sein.',
      'parameters.message': 'Die Nachricht darf höchstens 200 Zeichen in einer Zeile haben.',
      'parameters.interpreter': 'Der Interpreter muss sh, bash oder python3 sein.',
      'parameters.script': 'Das Skript darf nicht leer sein und höchstens 64 KiB (65.536 Bytes UTF-8) haben.',
      'parameters.timeout_seconds': 'Das Zeitlimit muss eine ganze Zahl von 1 bis 3600 Sekunden sein.',
    } as Record<string, string>,
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
