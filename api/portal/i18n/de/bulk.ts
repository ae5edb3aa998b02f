/** German: the device list's bulk actions, their confirmation and their result. */

export const bulk = {
  legend: 'Sammelaktion',
  action: 'Aktion',
  chooseAction: 'bitte wählen',
  actions: {
    move: 'In Organisationseinheit verschieben',
    'group-add': 'Zu Gruppe hinzufügen',
    'group-remove': 'Aus Gruppe entfernen',
    select: 'Merkmal auswählen',
    deselect: 'Merkmal abwählen',
    unset: 'Merkmal zurücksetzen (Vorgabe am Gerät entfernen)',
  },
  targets: {
    oe: 'Ziel-Organisationseinheit',
    group: 'Ziel-Gruppe',
    merkmal: 'Ziel-Merkmal',
  },
  none: '–',
  applySelected: 'Auf ausgewählte Geräte anwenden …',
  /** `count`: the devices the list's filters match, e.g. "30 Geräte". */
  applyFiltered: (count: string) => `Auf alle ${count} anwenden, die zu den Filtern passen …`,
  noAction: 'Bitte eine Aktion wählen.',
  noTarget: {
    oe: 'Bitte eine Organisationseinheit wählen.',
    group: 'Bitte eine Gruppe wählen.',
    merkmal: 'Bitte ein Merkmal wählen.',
  },
  noDevices: 'Keine Geräte ausgewählt.',
  tooMany: (max: string) => `Höchstens ${max} Geräte auf einmal auswählen; für mehr die Filter verwenden.`,
  confirmTitle: 'Sammelaktion bestätigen',
  /** The action on the confirmation page, `target` the unit's or group's name or the Merkmal's key. */
  summary: {
    move: (target: string) => `In die Organisationseinheit „${target}“ verschieben`,
    'group-add': (target: string) => `Zur Gruppe „${target}“ hinzufügen`,
    'group-remove': (target: string) => `Aus der Gruppe „${target}“ entfernen`,
    select: (target: string) => `Merkmal „${target}“ am Gerät auswählen`,
    deselect: (target: string) => `Merkmal „${target}“ am Gerät abwählen`,
    unset: (target: string) => `Die Vorgabe des Geräts für das Merkmal „${target}“ entfernen`,
  },
  changes: 'Diese Aktion ändert',
  selectedDevices: 'die ausgewählten Geräte',
  filteredDevices: 'alle Geräte, die zu den Filtern der Liste passen',
  nothingToChange: 'Keine Geräte passen: es gibt nichts zu ändern.',
  eachAudited: 'Jedes Gerät wird einzeln geändert und protokolliert (ein Eintrag im Audit-Log je Gerät).',
  confirm: (devices: string) => `${devices} ändern`,
  cancel: 'Abbrechen',
  resultTitle: 'Sammelaktion ausgeführt',
  changed: 'geändert',
  notChanged: 'nicht geändert:',
  serial: 'Seriennummer',
  reason: 'Grund',
  /** Why a rule refused a device, by the error's code (another code shows the API's message). */
  reasons: {
    device_deprovisioned: 'Das Gerät ist deprovisioniert.',
    device_archived: 'Das Gerät ist archiviert.',
    rollout_in_progress: 'Ein laufender Rollout hält dieses Merkmal.',
  } as Record<string, string>,
  backToList: '← Zurück zur Geräteliste',
  /** A bulk action over many devices runs in the background; its own page shows how far it is. */
  job: {
    title: 'Sammelaktion im Hintergrund',
    /** On the confirmation page, when the action will run as a job. */
    background: (max: string) =>
      `Mehr als ${max} Geräte: die Aktion läuft im Hintergrund weiter, ihre Seite zeigt den Fortschritt.`,
    many: (devices: string) => `${devices}: die Aktion läuft im Hintergrund, Gerät für Gerät.`,
    status: 'Stand',
    statuses: {
      queued: 'wartet auf den Start',
      running: 'läuft',
      completed: 'abgeschlossen',
      failed: 'abgebrochen',
    },
    progress: 'Fortschritt',
    changed: 'Geändert',
    refused: 'Abgelehnt',
    left: 'Verbleibend',
    refreshing: 'Diese Seite lädt sich alle 2 Sekunden neu, bis die Aktion abgeschlossen ist.',
    error: 'Grund des Abbruchs',
    moreRefused: (shown: string) => `Die ersten ${shown} abgelehnten Geräte:`,
  },
  /** `n` devices, `shown` being n as the language writes it. */
  devices: (n: number, shown: string) => `${shown} ${n === 1 ? 'Gerät' : 'Geräte'}`,
};
