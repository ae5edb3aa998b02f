/**
 * English: the rollouts' list, a rollout's page, pause, resume and abort, and the "in rings"
 * form of a catalog change.
 */
// Typed by the German section itself, not by `Catalog` (catalog.ts imports this file: no circle).
import type { rollouts as german } from '../de/rollouts.ts';

const plural = (n: number, one: string, other: string) => (n === 1 ? one : other);

export const rollouts: typeof german = {
  listTitle: 'Rollouts',
  intro:
    'A rollout changes a catalog item at an org unit or group in rings: first on a few devices, then on more. ' +
    'If too many devices in a ring report a failure, it pauses by itself before the next ring opens. ' +
    "You start a rollout from an org unit's or a group's page.",
  empty: 'No rollouts yet.',
  emptyFiltered: 'No rollouts with this status.',
  filterForm: 'Filter rollouts',
  filter: 'Status',
  all: 'all',
  apply: 'Filter',
  next: 'Next page →',
  first: '← First page',
  created: 'Created',
  scope: 'Scope',
  merkmal: 'Catalog item',
  action: 'Action',
  status: 'Status',
  progress: 'Progress',
  details: 'Details',
  detailsOf: (merkmal: string, action: string) => `Details: ${action} ${merkmal}`,
  statuses: {
    running: 'running',
    paused: 'paused',
    completed: 'completed',
    aborted: 'aborted',
  },
  actions: {
    select: 'select',
    deselect: 'deselect',
    unset: 'unset',
  },
  percent: (value: string) => `${value}%`,
  ringsHeading: 'Rings',
  ring: (n: string) => `Ring ${n}`,
  ringOf: (n: string, of: string) => `Ring ${n} of ${of}`,
  upTo: (percent: string) => `up to ${percent}`,
  devices: 'Devices',
  bar: 'Convergence',
  figures: 'Figures',
  opened: 'Opened',
  notOpened: 'not opened yet',
  figure: { converged: 'converged', pending: 'pending', failed: 'failed' },
  ringDevicesOf: (ring: string) => `Devices of ring ${ring}`,
  waiting: {
    noLiveDevices: (ring: string) =>
      `Ring ${ring} is waiting for live devices: none of its devices has checked in lately (all stale). ` +
      'The next ring opens only once devices have reported.',
    soak: (ring: string, until: string) => `Ring ${ring} is waiting for its soak time to end, at ${until}.`,
    reports: (ring: string, reported: string, needed: string) =>
      `Ring ${ring} is waiting for reports: ${reported} of the ${needed} devices needed have reported.`,
  },
  deviceList: {
    title: (ring: string | null, figure: string | null) =>
      `Rollout devices${ring === null ? '' : `: ${ring}`}${figure === null ? '' : `, ${figure}`}`,
    back: (merkmal: string, action: string) => `← To the rollout: ${action} ${merkmal}`,
    intro:
      'The devices the rollout put in its rings when it started, by ring and serial number. ' +
      'Stale devices are listed (marked) but not counted in the ring figures.',
    empty: 'No devices.',
    serial: 'Serial number',
    hostname: 'Hostname',
    convergence: 'Convergence',
    reported: 'Last report',
    stale: 'stale',
    notOpened: 'ring not opened yet',
    nothingReported: 'no report yet',
  },
  uncounted: 'Stale or deprovisioned devices are not counted (the grey rest of the bar).',
  barLabel: (devices: number, converged: string, pending: string, failed: string, shown: string) =>
    `${converged} converged, ${pending} pending, ${failed} failed of ${shown} ${plural(devices, 'device', 'devices')}`,
  progressText: (devices: number, converged: string, shown: string) =>
    `${converged} of ${shown} ${plural(devices, 'device', 'devices')} converged`,
  progressFailed: (failed: string) => `, ${failed} failed`,
  pausedForFailures: ' (failures)',
  refresh: 'Refresh',
  refreshNote: (seconds: string) => `The figures refresh every ${seconds} seconds while the rollout is under way.`,
  back: '← All rollouts',
  title: (merkmal: string, action: string) => `Rollout: ${action} ${merkmal}`,
  limits: 'Limits',
  limitsText: (maxFailure: string, minReported: string, soak: string | null) =>
    `at most ${maxFailure} failures per ring; next ring once at least ${minReported} have reported${
      soak === null ? ' (no soak time)' : ` and ${soak} have passed`
    }`,
  duration: {
    seconds: (n: number, shown: string) => `${shown} ${plural(n, 'second', 'seconds')}`,
    minutes: (n: number, shown: string) => `${shown} ${plural(n, 'minute', 'minutes')}`,
    hours: (n: number, shown: string) => `${shown} ${plural(n, 'hour', 'hours')}`,
  },
  createdBy: 'Created by',
  completedAt: 'Ended',
  orgUnit: (name: string) => `Org unit “${name}”`,
  group: (name: string) => `Group “${name}”`,
  unknownScope: 'deleted',
  pausedFailures: (ring: string, failed: string, reported: string, max: string) =>
    `paused automatically: in ring ${ring}, ${failed} of ${reported} reporting devices failed, ` +
    `more than the ${max} allowed. Check the failed devices; resuming accepts the failures so far.`,
  pausedManual: 'paused (by hand)',
  operator: 'Operator',
  system: 'System',
  failedDevices: "The scope's failed devices",
  confirm: {
    pause: {
      title: 'Pause rollout',
      text: 'No further ring opens until you resume the rollout. Devices in rings already opened keep the change.',
      button: 'Pause',
      done: 'Rollout paused.',
      link: 'Pause …',
    },
    resume: {
      title: 'Resume rollout',
      text: 'The rollout is judged again and opens the next rings. You accept the failures that paused it so far.',
      button: 'Resume',
      done: 'Rollout resumed.',
      link: 'Resume …',
    },
    abort: {
      title: 'Abort rollout',
      text: 'Every device in an opened ring gets its previous state back at its next check-in; nothing is saved at the scope. This cannot be undone.',
      button: 'Abort (end the rollout)',
      done: 'Rollout aborted: the devices get their previous state back.',
      link: 'Abort …',
    },
  },
  cancel: 'Back',
  notActive:
    "That is not possible in the rollout's current state (it has, for example, already completed, been aborted " +
    'or been paused). Nothing was changed.',
  started: (devices: number, shown: string) =>
    `Rollout started: ring 1 with ${shown} ${plural(devices, 'device', 'devices')} is open.`,
  inProgressTitle: 'A rollout is already under way here',
  inProgress:
    'A rollout is changing this catalog item at this scope right now. While it is running or paused, no other ' +
    'change of this item is possible here. Wait until it has completed, or pause and abort it. Nothing was changed.',
  toRollout: 'To the running rollout',
  runningHeading: 'Running rollouts',
  noneRunning: 'No rollout is running.',
  allRollouts: 'All rollouts',
  form: {
    rings: 'Rings (cumulative percent, ascending, the last 100)',
    maxFailureRatio: 'Highest share of failures per ring (0 to 1; 0.1 = 10%)',
    minReportedRatio: 'Minimum share of devices reporting before the next ring (0 to 1)',
    soakSeconds: 'Soak time per ring in seconds (3600 = 1 hour)',
  },
};
