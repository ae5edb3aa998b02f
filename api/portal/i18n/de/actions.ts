/** German: a device's actions (queue, history, an action's page), their forms and confirmations, and the list's bulk actions. */
import type { ActionStatus, ActionType } from '../../../actions/schemas.ts';

export const actions = {
  heading: 'Aktionen',
  intro:
    'Eine Aktion wartet, bis sich das Gerät meldet, läuft dann genau einmal und meldet ihr Ergebnis; beginnt das Gerät sie nicht vor ihrem Ablauf, läuft sie nie.',
  types: {
    reboot: 'Neustart',
    apply_now: 'Jetzt anwenden',
    apply_updates: 'Updates installieren',
    script: 'Skript',
  } satisfies Record<ActionType, string>,
  statuses: {
    pending: 'wartet auf das Gerät',
    delivered: 'zugestellt',
    running: 'läuft',
    succeeded: 'erfolgreich',
    failed: 'fehlgeschlagen',
    expired: 'abgelaufen',
    canceled: 'abgebrochen',
  } satisfies Record<ActionStatus, string>,
  queue: 'Warteschlange',
  queueEmpty: 'Keine offenen Aktionen.',
  history: 'Verlauf',
  historyEmpty: 'Noch keine abgeschlossene Aktion.',
  columns: {
    action: 'Aktion',
    status: 'Status',
    created: 'Erstellt',
    expires: 'Läuft ab',
    finished: 'Beendet',
    result: 'Ergebnis',
    cancel: 'Abbrechen',
  },
  /** A finished action's exit code and duration, both formatted. */
  result: (exitCode: string, seconds: string) => `Exit-Code ${exitCode}, ${seconds} s`,
  fromRollout: 'Rollout',
  cancel: 'Abbrechen',
  cancelLabel: (type: string) => `${type} abbrechen`,
  canceled: (type: string) => `${type} abgebrochen: Das Gerät führt die Aktion nicht aus.`,
  script: 'Skript',
  output: 'Ausgabe',
  scriptAndOutput: 'Skript und Ausgabe',
  noOutput: 'Keine Ausgabe.',
  /** Above a long output on the device page: only its end is shown there. */
  outputTail: (chars: string) => `Die letzten ${chars} Zeichen:`,
  wholeOutput: 'Die ganze Ausgabe',
  paging: { label: 'Seiten des Verlaufs', newest: '« Neueste', older: 'Ältere →' },
  /** The parameters in words. */
  parameters: {
    delay: (seconds: string) => `in ${seconds} s`,
    message: (message: string) => `Nachricht: „${message}“`,
    securityOnly: 'nur Sicherheitsupdates',
    allUpdates: 'alle ausstehenden Updates',
    interpreter: (name: string) => `Interpreter ${name}`,
    timeout: (seconds: string) => `Zeitlimit ${seconds} s`,
    none: '–',
  },
  forms: {
    legend: 'Neue Aktion',
    reboot: {
      delay: 'Verzögerung in Sekunden (0–3600)',
      message: 'Nachricht an angemeldete Benutzer (optional, höchstens 200 Zeichen)',
      button: 'Neustart …',
    },
    applyNow: {
      note: 'Wendet den ganzen Auftragskatalog sofort an, ohne auf den nächsten Durchlauf zu warten.',
      button: 'Jetzt anwenden …',
    },
    applyUpdates: {
      note: 'Installiert ausstehende Updates (geänderte Konfigurationsdateien bleiben) und meldet, ob ein Neustart nötig ist.',
      securityOnly: 'Nur Sicherheitsupdates',
      button: 'Updates installieren …',
    },
    script: {
      interpreter: 'Interpreter',
      script: 'Skript (läuft als root, höchstens 64 KiB)',
      timeout: 'Zeitlimit in Sekunden (1–3600)',
      button: 'Skript ausführen …',
    },
  },
  confirm: {
    title: 'Aktion bestätigen',
    action: 'Aktion',
    parameters: 'Einstellungen',
    devices: 'Geräte',
    waits:
      'Ein Gerät, das gerade nicht erreichbar ist, bekommt die Aktion bei seinem nächsten Check-in; nicht begonnen, läuft sie nach 7 Tagen ab.',
    /** The confirming button: the action and the count of devices it goes to. */
    button: (type: string, devices: string) => `${type} für ${devices} einreihen`,
    cancel: 'Abbrechen',
  },
  queued: (type: string) => `${type} eingereiht: Die Aktion wartet auf den nächsten Check-in des Geräts.`,
  /** An action's own page. */
  page: {
    title: (type: string, serial: string) => `${type} auf ${serial}`,
    device: 'Gerät',
    back: 'Zurück zum Gerät',
    createdBy: 'Erstellt von',
    operator: 'Betreiber',
    system: 'System',
    delivered: 'Zugestellt',
    started: 'Gestartet',
    exitCode: 'Exit-Code',
    duration: 'Dauer',
    seconds: (seconds: string) => `${seconds} s`,
    upgraded: 'Aktualisierte Pakete',
    noneUpgraded: 'Keine Pakete aktualisiert.',
    rebootRequired: 'Neustart nötig',
    yes: 'ja',
    no: 'nein',
    bootedAt: 'Wieder hochgefahren',
    interrupted:
      'Unterbrochen: Das Gerät wurde während der Aktion ausgeschaltet oder stürzte ab; sie läuft nicht noch einmal.',
    rollout: 'Rollout',
    toRollout: 'Zum Rollout',
  },
  /** The device list's bulk actions that queue an action. */
  bulk: {
    group: 'Geräteaktionen',
    title: 'Aktion für mehrere Geräte',
    goesTo: 'Die Aktion geht an',
    nothing: 'Keine Geräte passen: Es gibt nichts einzureihen.',
    eachAudited: 'Jedes Gerät bekommt seine eigene Aktion (ein Eintrag im Audit-Log je Gerät).',
    /** Above `max` ticked devices (a list page holds fewer): the way to rings. */
    tooManyTicked: (max: string) =>
      `Höchstens ${max} ausgewählte Geräte. Für mehr filtern Sie die Liste nach einer Organisationseinheit oder einer Gruppe: Dann geht die Aktion in Ringen hinaus.`,
    /** Above `max` devices the filter must name a scope a rollout can take. */
    needsScope: (max: string) =>
      `Mehr als ${max} Geräte bekommen eine Aktion in Ringen, und die gehen an eine Organisationseinheit oder eine Gruppe. Filtern Sie die Liste nur nach einer Organisationseinheit oder nur nach einer Gruppe.`,
    inRings: (max: string) =>
      `Mehr als ${max} Geräte: Die Aktion geht als Rollout in Ringen hinaus. Jeder Ring bekommt sie, wenn er öffnet; schlagen zu viele fehl, hält der Rollout an.`,
    unitScope: (name: string) => `die verwalteten Geräte der Organisationseinheit „${name}“ und ihrer Untereinheiten`,
    groupScope: (name: string) => `die verwalteten Geräte der Gruppe „${name}“`,
    managedOnly: 'Archivierte und deprovisionierte Geräte bekommen keine Aktion.',
    countChanged: (devices: string) =>
      `Die Zahl der Geräte hat sich inzwischen geändert: jetzt ${devices}. Nichts wurde eingereiht; bitte erneut bestätigen.`,
    resultTitle: 'Aktion eingereiht',
    queued: 'eingereiht',
    notQueued: 'nicht eingereiht:',
  },
};
