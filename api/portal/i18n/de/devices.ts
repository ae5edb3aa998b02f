/** German: the device list and a device's page (its catalog, lifecycle and their confirmations). */
import type { Transition } from '../../../devices/lifecycle_service.ts';
import type { DeviceSort } from '../../../devices/organize_repo.ts';

export const devices = {
  title: 'Geräte',
  /** A count of devices: `shown` is `n` as the language writes numbers. */
  count: (n: number, shown: string) => `${shown} ${n === 1 ? 'Gerät' : 'Geräte'}`,
  list: {
    filtersLabel: 'Geräte filtern',
    search: 'Suche (Seriennummer oder Hostname)',
    orgUnit: 'Organisationseinheit (mit den Einheiten darunter)',
    group: 'Gruppe',
    status: 'Status',
    convergence: 'Umsetzung',
    convergenceOf: (merkmal: string) => `Umsetzung von ${merkmal}`,
    diskEncryption: 'Festplattenverschlüsselung',
    any: 'alle',
    sort: 'Sortierung',
    staleOnly: 'Nur veraltete',
    filter: 'Filtern',
    sorts: {
      created_at: 'älteste zuerst',
      '-created_at': 'neueste zuerst',
      serial: 'Seriennummer',
      '-last_checkin': 'letzter Check-in, jüngster zuerst',
      last_checkin: 'letzter Check-in, ältester zuerst',
    } satisfies Record<DeviceSort, string>,
    /** "Geräte, deren Merkmal <strong>firefox</strong> fehlgeschlagen ist." around the Merkmal's key. */
    merkmalFilter: {
      before: 'Geräte, deren Merkmal',
      after: (convergence: string) => `${convergence} ist.`,
    },
    withoutMerkmal: 'Nur nach Umsetzung des Geräts filtern',
    /** `minutes`: three poll intervals, written as the language writes numbers. */
    staleNote: (minutes: string) =>
      `Veraltet: kein Check-in seit drei Abfrageintervallen (${minutes} Minuten), gezählt ab dem Bootstrap des Agenten.`,
    /** After the count of `n` devices. */
    matchFilters: (_n: number) => ' passen zu den Filtern',
    onThisPage: (shown: string) => ` · ${shown} auf dieser Seite`,
    noneMatch: 'Keine Geräte passen zu diesen Filtern.',
    noneYet: 'Noch keine Geräte: erstellen Sie eine Enrollment-Session und ein ISO.',
    resetFilters: 'Filter zurücksetzen',
    toEnrollmentSessions: 'Zu den Enrollment-Sessions',
    bulkLabel: 'Sammelaktion',
    selection: 'Auswahl',
    selectDevice: (serial: string) => `${serial} auswählen`,
    staleMark: ' (veraltet)',
    columns: {
      serial: 'Seriennummer',
      hostname: 'Hostname',
      orgUnit: 'OE',
      groups: 'Gruppen',
      template: 'Template',
      lastCheckin: 'Letzter Check-in',
      status: 'Status',
      convergence: 'Umsetzung',
      created: 'Angelegt',
    },
    paging: {
      label: 'Seiten',
      first: '« Erste Seite',
      previous: '← Vorherige Seite',
      next: 'Nächste Seite →',
    },
  },
  device: {
    title: (serial: string) => `Gerät ${serial}`,
    allDevices: '← Alle Geräte',
    details: 'Details',
    rows: {
      serial: 'Seriennummer',
      hostname: 'Hostname',
      orgUnit: 'Organisationseinheit',
      groups: 'Gruppen',
      template: 'Template',
      lastCheckin: 'Letzter Check-in',
      status: 'Status',
      convergence: 'Umsetzung',
      created: 'Angelegt',
    },
    catalog: 'Auftragskatalog',
    columns: {
      merkmal: 'Merkmal',
      state: 'Zustand',
      origin: 'Herkunft',
      explanation: 'Erklärung',
      lastReport: 'Letzter Bericht',
      convergence: 'Umsetzung',
      atDevice: 'Am Gerät',
      atUnit: (unit: string) => `An der OE „${unit}“`,
    },
    /** Where a Merkmal's state comes from (`origin`). */
    origins: {
      workspace: 'Workspace-Vorgabe',
      oe: 'Organisationseinheit',
      gruppe: 'Gruppen',
      geraet: 'Gerät',
    } as Record<string, string>,
    why: 'Warum?',
    noReport: 'noch keiner',
    /** The buttons' accessible names: the Merkmal's name and where it is changed. */
    atDeviceLabel: (name: string) => `${name} am Gerät`,
    atUnitLabel: (name: string, unit: string) => `${name} an der OE ${unit}`,
    hardware: 'Hardware',
    events: 'Ereignisse',
  },
  /** The explanation of a Merkmal's state, step by step. */
  steps: {
    workspace: (state: string) => `Workspace-Vorgabe: ${state}`,
    unit: (name: string, state: string) => `OE „${name}“: ${state}`,
    noOverride: 'keine Vorgabe',
    groups: (present: number, absent: number) => `Gruppen: ${present} dafür, ${absent} dagegen`,
    tie: ' – kein Mehrheitsentscheid',
    device: (state: string) => `Gerät: ${state}`,
    noOwnOverride: 'keine eigene Vorgabe',
  },
  /** Select / deselect / unset at the device: the buttons and their flash. */
  verbs: { select: 'auswählen', deselect: 'abwählen', unset: 'zurücksetzen' },
  verbLabel: (what: string, verb: string) => `${what}: ${verb}`,
  saved: {
    select: (merkmal: string) => `${merkmal}: auswählen gespeichert.`,
    deselect: (merkmal: string) => `${merkmal}: abwählen gespeichert.`,
    unset: (merkmal: string) => `${merkmal}: zurücksetzen gespeichert.`,
  },
  lifecycle: {
    archivedAt: (time: string) => `Archiviert am ${time}.`,
    reprovision: 'Neu provisionieren …',
    deprovision: 'Deprovisionieren …',
    archive: 'Archivieren …',
  },
  /** A lifecycle transition's confirmation page and its flash message. */
  transitions: {
    deprovision: {
      title: 'Gerät deprovisionieren',
      warning: 'Der Agent des Geräts wird danach abgewiesen (Check-in und Berichte).',
      done: 'Gerät deprovisioniert.',
    },
    reprovision: {
      title: 'Gerät neu provisionieren',
      warning: 'Das Geräte-Geheimnis wird gelöscht; das Gerät muss erneut installiert bzw. gebootstrappt werden.',
      done: 'Gerät zur Neuprovisionierung freigegeben.',
    },
    archive: {
      title: 'Gerät archivieren',
      warning: 'Archivieren ist endgültig: das Gerät verschwindet aus der Liste und sein Agent wird abgewiesen.',
      done: 'Gerät archiviert.',
    },
  } satisfies Record<Transition, { title: string; warning: string; done: string }>,
  confirm: {
    device: 'Gerät',
    noHostname: 'ohne Hostname',
    cancel: 'Abbrechen',
  },
};
