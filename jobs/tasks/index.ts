/** The Graphile Worker task lists of the worker: one file per task, named after it. */
import type { TaskList } from 'graphile-worker';
import { BUILD_ISO_TASK } from '../../api/iso_builds/job.ts';
import { JUDGE_ROLLOUT_TASK } from '../../api/rollouts/schedule.ts';
import type { TaskDeps } from '../worker_deps.ts';
import { DEVICE_BULK_TASK } from '../../api/device_bulk/jobs.ts';
import { buildIsoTask } from './build_iso.ts';
import { EXPIRE_DEVICE_ACTIONS_TASK, expireDeviceActionsTask } from './expire_device_actions.ts';
import { deviceBulkTask } from './device_bulk.ts';
import { DELIVER_WEBHOOK_TASK, deliverWebhookTask } from './deliver_webhook.ts';
import { ARCHIVE_STALE_DEVICES_TASK, archiveStaleDevicesTask } from './archive_stale_devices.ts';
import { judgeRolloutTask } from './judge_rollout.ts';
import { JUDGE_RUNNING_ROLLOUTS_TASK, judgeRunningRolloutsTask } from './judge_running_rollouts.ts';
import { REAP_DEAD_BUILDS_TASK, reapDeadBuildsTask } from './reap_dead_builds.ts';
import { sweepIsoBuildsTask } from './sweep_iso_builds.ts';
import { SWEEP_PACKAGE_SETS_TASK, sweepPackageSetsTask } from './sweep_package_sets.ts';
import { SWEEP_STALE_DEVICES_TASK, sweepStaleDevicesTask } from './sweep_stale_devices.ts';
import { SWEEP_WEBHOOK_DELIVERIES_TASK, sweepWebhookDeliveriesTask } from './sweep_webhook_deliveries.ts';
import { VULNERABILITY_MATCH_TASK } from '../../api/vulnerabilities/match_jobs.ts';
import {
  REFRESH_VULNERABILITY_FEEDS_TASK,
  refreshVulnerabilityFeedsTask,
  vulnerabilityMatchTask,
} from './vulnerabilities.ts';

const SWEEP_ISO_BUILDS_TASK = 'sweep_iso_builds';

/** The tasks of the main runner: ISO builds and the hourly sweeps. */
export function buildHostTasks(deps: TaskDeps): TaskList {
  return {
    [BUILD_ISO_TASK]: buildIsoTask(deps),
    [SWEEP_ISO_BUILDS_TASK]: sweepIsoBuildsTask(deps),
    [SWEEP_WEBHOOK_DELIVERIES_TASK]: sweepWebhookDeliveriesTask(deps),
  };
}

/**
 * The dead build check, the stale device sweeps, the judging of rollouts and the chunks of
 * bulk actions, on a runner of their own: none waits behind a build or a delivery (the stale
 * sweep must run every five minutes, a running rollout is judged at least every 30 s). All
 * are short (a bulk action queues its next chunk as a job of its own).
 */
export function reaperTasks(deps: TaskDeps): TaskList {
  return {
    [REAP_DEAD_BUILDS_TASK]: reapDeadBuildsTask(deps),
    [SWEEP_STALE_DEVICES_TASK]: sweepStaleDevicesTask(deps),
    [ARCHIVE_STALE_DEVICES_TASK]: archiveStaleDevicesTask(deps),
    [JUDGE_ROLLOUT_TASK]: judgeRolloutTask(deps),
    [JUDGE_RUNNING_ROLLOUTS_TASK]: judgeRunningRolloutsTask(deps),
    [DEVICE_BULK_TASK]: deviceBulkTask(deps),
    [EXPIRE_DEVICE_ACTIONS_TASK]: expireDeviceActionsTask(deps),
  };
}

/**
 * The security data: reading the feeds and matching, on a runner of their own (a feed of
 * 50 MB takes a while; nothing else waits behind it, and it waits behind no build), and
 * the sweep of unused package sets, which waits for a matching anyway.
 */
export function securityTasks(deps: TaskDeps): TaskList {
  return {
    [REFRESH_VULNERABILITY_FEEDS_TASK]: refreshVulnerabilityFeedsTask(deps),
    [VULNERABILITY_MATCH_TASK]: vulnerabilityMatchTask(deps),
    [SWEEP_PACKAGE_SETS_TASK]: sweepPackageSetsTask(deps),
  };
}

/** Webhook deliveries, run by a runner of their own beside the builds. */
export function deliveryTasks(deps: TaskDeps): TaskList {
  return { [DELIVER_WEBHOOK_TASK]: deliverWebhookTask(deps) };
}

/** Every task (tests run all due jobs at once). */
export function createTaskList(deps: TaskDeps): TaskList {
  return { ...buildHostTasks(deps), ...reaperTasks(deps), ...deliveryTasks(deps), ...securityTasks(deps) };
}
