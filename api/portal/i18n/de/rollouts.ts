/**
 * German: the rollouts' list, a rollout's page, pause, resume and abort, and the "in rings"
 * form of a catalog change. Numbers come in formatted (a count beside them where the
 * wording follows it).
 */
import type { RolloutCreateBody, RolloutStatus } from '../../../rollouts/schemas.ts';

type Verb = 'pause' | 'resume' | 'abort';

/** "1 Gerät", "3 Geräten" (dative, as every use here needs). */
const devicesDative = (n: number, shown: string) => `${shown} ${n === 1 ? 'Gerät' : 'Geräten'}`;

export const rollouts = {
  listTitle: 'Rollouts',
  intro:
    'Ein Rollout ändert ein Merkmal an einer Organisationseinheit oder Gruppe in Ringen: erst bei wenigen Geräten, ' +
    'dann bei mehr. Melden zu viele Geräte eines Rings einen Fehler, hält es von selbst an, bevor der nächste Ring ' +
    'geöffnet wird. Ein Rollout starten Sie an der Seite einer Organisationseinheit oder Gruppe.',
  empty: 'Noch keine Rollouts.',
  emptyFiltered: 'Keine Rollouts mit diesem Status.',
  filterForm: 'Rollouts filtern',
  filter: 'Status',
  all: 'alle',
  apply: 'Filtern',
  next: 'Nächste Seite →',
  first: '← Erste Seite',
  created: 'Angelegt',
  scope: 'Bereich',
  merkmal: 'Merkmal',
  action: 'Aktion',
  status: 'Status',
  progress: 'Fortschritt',
  details: 'Details',
  /** The details link's label: the rollout's Merkmal and action. */
  detailsOf: (merkmal: string, action: string) => `Details: ${merkmal} ${action}`,
  statuses: {
    running: 'läuft',
    paused: 'angehalten',
    completed: 'abgeschlossen',
    aborted: 'abgebrochen',
  } satisfies Record<RolloutStatus, string>,
  actions: {
    select: 'auswählen',
    deselect: 'abwählen',
    unset: 'zurücksetzen',
  } satisfies Record<NonNullable<RolloutCreateBody['action']>, string>,
  /** A share as a percentage, its number formatted. */
  percent: (value: string) => `${value} %`,
  ringsHeading: 'Ringe',
  /** A ring by its number counted from 1. */
  ring: (n: string) => `Ring ${n}`,
  ringOf: (n: string, of: string) => `Ring ${n} von ${of}`,
  upTo: (percent: string) => `bis ${percent}`,
  devices: 'Geräte',
  bar: 'Umsetzung',
  figures: 'Zahlen',
  opened: 'Geöffnet',
  notOpened: 'noch nicht geöffnet',
  /** A ring's figures beside their counts. */
  figure: { converged: 'umgesetzt', pending: 'ausstehend', failed: 'fehlgeschlagen' },
  /** The link of a ring's device count to its devices. */
  ringDevicesOf: (ring: string) => `Geräte von Ring ${ring}`,
  /** What the current ring waits for before the next opens (a ring passes on reports, never on silence). */
  waiting: {
    noLiveDevices: (ring: string) =>
      `Ring ${ring} wartet auf erreichbare Geräte: keines seiner Geräte hat sich zuletzt gemeldet (alle veraltet). ` +
      'Der nächste Ring öffnet erst, wenn Geräte berichtet haben.',
    soak: (ring: string, until: string) => `Ring ${ring} wartet die Wartezeit ab, bis ${until}.`,
    reports: (ring: string, reported: string, needed: string) =>
      `Ring ${ring} wartet auf Berichte: ${reported} von ${needed} nötigen Geräten haben berichtet.`,
  },
  /** The list of a rollout's devices (of a ring, of a convergence). */
  deviceList: {
    title: (ring: string | null, figure: string | null) =>
      `Geräte des Rollouts${ring === null ? '' : `: ${ring}`}${figure === null ? '' : `, ${figure}`}`,
    back: (merkmal: string, action: string) => `← Zum Rollout: ${merkmal} ${action}`,
    intro:
      'Die Geräte, die das Rollout bei seinem Start in seine Ringe gelegt hat, nach Ring und Seriennummer. ' +
      'Veraltete Geräte stehen hier (markiert), zählen in den Zahlen des Rings aber nicht mit.',
    empty: 'Keine Geräte.',
    serial: 'Seriennummer',
    hostname: 'Hostname',
    convergence: 'Umsetzung',
    reported: 'Letzter Bericht',
    stale: 'veraltet',
    notOpened: 'Ring noch nicht geöffnet',
    nothingReported: 'noch kein Bericht',
  },
  uncounted: 'Veraltete oder deprovisionierte Geräte zählen nicht mit (grauer Rest des Balkens).',
  barLabel: (devices: number, converged: string, pending: string, failed: string, shown: string) =>
    `${converged} umgesetzt, ${pending} ausstehend, ${failed} fehlgeschlagen von ${devicesDative(devices, shown)}`,
  /** How far a rollout got: its opened rings' devices converged. */
  progressText: (devices: number, converged: string, shown: string) =>
    `${converged} von ${devicesDative(devices, shown)} umgesetzt`,
  progressFailed: (failed: string) => `, ${failed} fehlgeschlagen`,
  /** A rollout paused for its failures, as the list's status column adds it. */
  pausedForFailures: ' (fehlgeschlagen)',
  refresh: 'Aktualisieren',
  refreshNote: (seconds: string) =>
    `Die Zahlen aktualisieren sich alle ${seconds} Sekunden, solange das Rollout läuft.`,
  back: '← Alle Rollouts',
  title: (merkmal: string, action: string) => `Rollout: ${merkmal} ${action}`,
  limits: 'Grenzen',
  /** The rollout's limits; `soak` is null without a wait. */
  limitsText: (maxFailure: string, minReported: string, soak: string | null) =>
    `höchstens ${maxFailure} Fehler je Ring; nächster Ring, wenn mindestens ${minReported} berichtet haben${
      soak === null ? ' (ohne Wartezeit)' : ` und ${soak} vergangen sind`
    }`,
  duration: {
    seconds: (n: number, shown: string) => `${shown} ${n === 1 ? 'Sekunde' : 'Sekunden'}`,
    minutes: (n: number, shown: string) => `${shown} ${n === 1 ? 'Minute' : 'Minuten'}`,
    hours: (n: number, shown: string) => `${shown} ${n === 1 ? 'Stunde' : 'Stunden'}`,
  },
  createdBy: 'Angelegt von',
  completedAt: 'Beendet',
  orgUnit: (name: string) => `Organisationseinheit „${name}“`,
  group: (name: string) => `Gruppe „${name}“`,
  unknownScope: 'gelöscht',
  pausedFailures: (ring: string, failed: string, reported: string, max: string) =>
    `automatisch angehalten: in Ring ${ring} sind ${failed} von ${reported} berichtenden Geräten ` +
    `fehlgeschlagen, mehr als die erlaubten ${max}. Prüfen Sie die fehlgeschlagenen Geräte; ` +
    'wer fortsetzt, nimmt die bisherigen Fehler hin.',
  pausedManual: 'angehalten (von Hand angehalten)',
  operator: 'Betreiber',
  system: 'System',
  failedDevices: 'Fehlgeschlagene Geräte des Bereichs',
  confirm: {
    pause: {
      title: 'Rollout anhalten',
      text: 'Es wird kein weiterer Ring geöffnet, bis Sie das Rollout fortsetzen. Geräte geöffneter Ringe behalten die Änderung.',
      button: 'Anhalten',
      done: 'Rollout angehalten.',
      link: 'Anhalten …',
    },
    resume: {
      title: 'Rollout fortsetzen',
      text: 'Das Rollout wird weiter beurteilt und öffnet die nächsten Ringe. Fehler, die es bisher angehalten haben, nehmen Sie damit hin.',
      button: 'Fortsetzen',
      done: 'Rollout fortgesetzt.',
      link: 'Fortsetzen …',
    },
    abort: {
      title: 'Rollout abbrechen',
      text: 'Jedes Gerät eines geöffneten Rings bekommt bei seinem nächsten Check-in seinen vorigen Zustand zurück; am Bereich wird nichts gespeichert. Das lässt sich nicht rückgängig machen.',
      button: 'Abbrechen (Rollout beenden)',
      done: 'Rollout abgebrochen: die Geräte bekommen ihren vorigen Zustand zurück.',
      link: 'Abbrechen …',
    },
  } satisfies Record<Verb, { title: string; text: string; button: string; done: string; link: string }>,
  cancel: 'Zurück',
  notActive:
    'Das geht in diesem Zustand des Rollouts nicht (es ist z. B. schon abgeschlossen, abgebrochen oder ' +
    'bereits angehalten). Nichts wurde geändert.',
  /** The first ring's devices, just opened. */
  started: (devices: number, shown: string) =>
    `Rollout gestartet: Ring 1 mit ${devicesDative(devices, shown)} ist geöffnet.`,
  inProgressTitle: 'Hier läuft schon ein Rollout',
  inProgress:
    'Dieses Merkmal wird an diesem Bereich gerade von einem Rollout geändert. Solange es läuft oder angehalten ist, ' +
    'geht keine andere Änderung des Merkmals hier. Warten Sie, bis es abgeschlossen ist, oder halten Sie es an und ' +
    'brechen Sie es ab. Nichts wurde geändert.',
  toRollout: 'Zum laufenden Rollout',
  runningHeading: 'Laufende Rollouts',
  noneRunning: 'Kein Rollout läuft.',
  allRollouts: 'Alle Rollouts',
  /** The "in rings" form's fields. */
  form: {
    rings: 'Ringe (kumulierte Prozent, aufsteigend, der letzte 100)',
    maxFailureRatio: 'Höchster Fehleranteil je Ring (0 bis 1; 0.1 = 10 %)',
    minReportedRatio: 'Mindestanteil berichtender Geräte vor dem nächsten Ring (0 bis 1)',
    soakSeconds: 'Wartezeit je Ring in Sekunden (3600 = 1 Stunde)',
  },
};
