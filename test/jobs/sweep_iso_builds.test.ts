/**
 * The hourly sweep (task sweep_iso_builds, run through Graphile Worker against the test
 * database) and its crontab entry.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseCrontab, runOnce } from 'graphile-worker';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_BUILD_SCRIPT } from '../../jobs/iso/worker_config.ts';
import { createTaskList } from '../../jobs/tasks/index.ts';
import { crontabFile } from '../../jobs/worker.ts';
import { useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import {
  getBuild,
  queueJob,
  runJobs,
  silentGraphileLogger,
  taskDeps,
  tempIsoDir,
  triggerBuild,
  waitForStatus,
  workerDeps,
} from '../support/iso_builds.ts';
import { missingTools } from '../support/tools.ts';

/** The builds run the real build script, which needs xorriso. */
const withoutXorriso = missingTools('xorriso');

const isoDir = tempIsoDir();
const ctx = useTestApp({ isoDir });

afterAll(async () => {
  await rm(dirname(isoDir), { recursive: true, force: true });
});

/** Queues and runs a sweep, and nothing else (queued builds stay queued). */
async function sweep() {
  await queueJob(ctx.sql, 'sweep_iso_builds');
  const { sweep_iso_builds } = createTaskList(taskDeps(ctx));
  await runOnce({
    connectionString: ctx.db.url,
    taskList: { sweep_iso_builds: sweep_iso_builds! },
    noHandleSignals: true,
    logger: silentGraphileLogger,
  });
}

async function completedBuild(organizationId: string): Promise<{ id: string; file: string }> {
  const queued = await triggerBuild(ctx, organizationId);
  await runJobs(ctx, workerDeps(ctx));
  expect((await getBuild(ctx, queued.id)).body.status).toBe('completed');
  return { id: queued.id, file: join(isoDir, `fleet-installer-${queued.id}.iso`) };
}

async function jobsOf(buildId: string) {
  return ctx.sql`select id, locked_by from graphile_worker.jobs where key = ${'build_iso:' + buildId}`;
}

describe('sweep_iso_builds', () => {
  it.skipIf(withoutXorriso)('deletes builds past expires_at, file and row, and keeps the others', async () => {
    const a = await createOrganization(ctx);
    const b = await createOrganization(ctx);
    const expired = await completedBuild(a.id);
    const fresh = await completedBuild(b.id);
    await ctx.sql`
      update iso_builds set finished_at = now_ms() - interval '7 days 1 minute',
                            expires_at = now_ms() - interval '1 minute'
      where id = ${expired.id}`;

    await sweep();

    expect((await getBuild(ctx, expired.id)).status).toBe(404);
    expect(existsSync(expired.file)).toBe(false);
    expect((await ctx.request('GET', `/api/v1/iso-builds/${expired.id}/download`)).status).toBe(404);
    expect((await getBuild(ctx, fresh.id)).body.status).toBe('completed');
    expect(existsSync(fresh.file)).toBe(true);
  });

  it('fails a build stuck in running long past any build, and deletes its job held by a dead worker', async () => {
    const org = await createOrganization(ctx);
    const stuck = await triggerBuild(ctx, org.id, { wlan: { ssid: 'Net', psk: 'stuck-build-psk' } });
    const live = await triggerBuild(ctx, org.id);
    // What a worker killed mid-build leaves: the build running, its job locked by the dead worker.
    await ctx.sql`update iso_builds set status = 'running', started_at = now() - interval '3 hours' where id = ${stuck.id}`;
    await ctx.sql`
      update graphile_worker._private_jobs set locked_by = 'worker-dead', locked_at = now() - interval '3 hours', attempts = 1
      where key = ${'build_iso:' + stuck.id}`;
    await ctx.sql`update iso_builds set status = 'running', started_at = now() - interval '10 minutes' where id = ${live.id}`;
    await ctx.sql`
      update graphile_worker._private_jobs set locked_by = 'worker-alive', locked_at = now() - interval '10 minutes', attempts = 1
      where key = ${'build_iso:' + live.id}`;

    await sweep();

    const failed = (await getBuild(ctx, stuck.id)).body;
    expect(failed.status).toBe('failed');
    expect(failed.error).toBe(
      'the build host stopped while building (worker killed or host lost); trigger a new build',
    );
    expect(await jobsOf(stuck.id)).toEqual([]);
    expect((await getBuild(ctx, live.id)).body.status).toBe('running');
    expect(await jobsOf(live.id)).toEqual([expect.objectContaining({ locked_by: 'worker-alive' })]);
  });

  it('fails the build of a job that exhausted its attempts, and deletes the job', async () => {
    const org = await createOrganization(ctx);
    const queued = await triggerBuild(ctx, org.id, { wlan: { ssid: 'Net', psk: 'dead-job-psk' } });
    await ctx.sql`
      select from graphile_worker.permanently_fail_jobs(
        array(select id from graphile_worker.jobs where key = ${'build_iso:' + queued.id}), 'database away')`;

    await sweep();

    const build = (await getBuild(ctx, queued.id)).body;
    expect(build.status).toBe('failed');
    expect(build.error).toContain('failed on every attempt');
    expect(await jobsOf(queued.id)).toEqual([]);
  });

  it('fails a pending build whose job is gone', async () => {
    const org = await createOrganization(ctx);
    const queued = await triggerBuild(ctx, org.id);
    const waiting = await triggerBuild(ctx, org.id);
    await ctx.sql`select graphile_worker.remove_job(${'build_iso:' + queued.id})`;

    await sweep();

    expect((await getBuild(ctx, queued.id)).body).toMatchObject({
      status: 'failed',
      error: 'the build job was lost from the queue; trigger a new build',
    });
    expect((await getBuild(ctx, waiting.id)).body.status).toBe('pending');
  });

  it('deletes failed builds a week after they failed', async () => {
    const org = await createOrganization(ctx);
    const old = await triggerBuild(ctx, org.id);
    const recent = await triggerBuild(ctx, org.id);
    await ctx.sql`update iso_builds set status = 'failed', error = 'x', finished_at = now() - interval '8 days' where id = ${old.id}`;
    await ctx.sql`update iso_builds set status = 'failed', error = 'x', finished_at = now() - interval '6 days' where id = ${recent.id}`;

    await sweep();

    expect((await getBuild(ctx, old.id)).status).toBe(404);
    expect((await getBuild(ctx, recent.id)).body.status).toBe('failed');
  });

  it.skipIf(withoutXorriso)('removes files no build owns and keeps everything a build still needs', async () => {
    const org = await createOrganization(ctx);
    const done = await completedBuild(org.id);
    const running = await triggerBuild(ctx, org.id);
    await ctx.sql`update iso_builds set status = 'running', started_at = now() where id = ${running.id}`;
    const failed = await triggerBuild(ctx, org.id);
    await ctx.sql`update iso_builds set status = 'failed', finished_at = now(), error = 'x' where id = ${failed.id}`;

    const stranger = crypto.randomUUID();
    const files = {
      orphanImage: join(isoDir, `fleet-installer-${stranger}.iso`),
      orphanWork: join(isoDir, `.work-${stranger}`),
      leftoverWorkOfCompleted: join(isoDir, `.work-${done.id}`),
      workOfFailed: join(isoDir, `.work-${failed.id}`),
      workOfRunning: join(isoDir, `.work-${running.id}`),
      oldDevBaseTemp: join(isoDir, '.dev-base.iso.4242.tmp'),
      newDevBaseTemp: join(isoDir, '.dev-base.iso.4343.tmp'),
      oldUbuntuDevBaseTemp: join(isoDir, '.dev-base-ubuntu.iso.4444.tmp'),
      foreign: join(isoDir, 'notes.txt'),
    };
    await writeFile(files.orphanImage, 'x');
    for (const dir of [files.orphanWork, files.leftoverWorkOfCompleted, files.workOfFailed, files.workOfRunning]) {
      await mkdir(join(dir, 'fleet'), { recursive: true });
      await writeFile(join(dir, 'fleet', 'wlan.nmconnection'), 'psk=plaintext');
    }
    const twoHoursAgo = new Date(Date.now() - 2 * 3600_000);
    for (const old of [files.oldDevBaseTemp, files.oldUbuntuDevBaseTemp]) {
      await writeFile(old, 'x');
      await utimes(old, twoHoursAgo, twoHoursAgo);
    }
    await writeFile(files.newDevBaseTemp, 'x');
    await writeFile(files.foreign, 'operator notes');

    await sweep();

    const names = await readdir(isoDir);
    expect(names).toContain(`fleet-installer-${done.id}.iso`);
    expect(names).toContain('.dev-base-debian.iso');
    for (const kept of [files.workOfRunning, files.newDevBaseTemp, files.foreign])
      expect(existsSync(kept), kept).toBe(true);
    for (const gone of [
      ...[files.orphanImage, files.orphanWork, files.leftoverWorkOfCompleted, files.workOfFailed],
      ...[files.oldDevBaseTemp, files.oldUbuntuDevBaseTemp],
    ]) {
      expect(existsSync(gone), gone).toBe(false);
    }
    expect((await getBuild(ctx, done.id)).body.status).toBe('completed');
  });

  it.skipIf(withoutXorriso)('is idempotent: a second sweep right after changes nothing', async () => {
    const org = await createOrganization(ctx);
    const done = await completedBuild(org.id);
    await sweep();
    const before = await ctx.sql`select * from iso_builds order by id`;
    const filesBefore = (await readdir(isoDir)).sort();
    await sweep();
    expect(await ctx.sql`select * from iso_builds order by id`).toEqual(before);
    expect((await readdir(isoDir)).sort()).toEqual(filesBefore);
    expect(existsSync(done.file)).toBe(true);
  });

  it('recovers from a worker process killed with SIGKILL mid-build', async () => {
    const org = await createOrganization(ctx);
    // Jobs earlier tests left queued first: the worker below must take this build, not one of them.
    await runJobs(ctx, workerDeps(ctx));
    const queued = await triggerBuild(ctx, org.id, { wlan: { ssid: 'Net', psk: 'killed-worker-psk' } });
    // A build script that waits (as long as its work folder exists) before the real build.
    const script = join(await mkdtemp(join(tmpdir(), 'fleet-script-')), 'gated.sh');
    await writeFile(
      script,
      [
        '#!/usr/bin/env bash',
        'echo "PROGRESS 40"',
        'while [[ ! -e $FLEET_ISO_STAGING/../continue ]]; do [[ -d $FLEET_ISO_STAGING ]] || exit 1; sleep 0.05; done',
        `exec bash ${JSON.stringify(DEFAULT_BUILD_SCRIPT)}`,
        '',
      ].join('\n'),
    );
    const fixture = fileURLToPath(new URL('./fixtures/worker_process.ts', import.meta.url));
    const child = spawn(process.execPath, ['--import', 'tsx', fixture], {
      env: { ...process.env, DATABASE_URL: ctx.db.url, ISO_DIR: isoDir, BUILD_SCRIPT: script },
      stdio: 'ignore',
    });
    const exited = new Promise((resolve) => child.on('exit', resolve));
    try {
      await waitForStatus(ctx, queued.id, ['running'], 30_000);
      await expect.poll(async () => (await getBuild(ctx, queued.id)).body.progress, { timeout: 10_000 }).toBe(40);
    } finally {
      child.kill('SIGKILL');
      await exited;
    }

    // The dead worker's lock and the build are left behind; nothing releases them.
    expect((await jobsOf(queued.id))[0]?.locked_by).toEqual(expect.any(String));
    expect((await getBuild(ctx, queued.id)).body.status).toBe('running');
    await sweep();
    expect((await getBuild(ctx, queued.id)).body.status).toBe('running'); // not yet: it may still be building

    // Two hours later, as far as the database can tell.
    await ctx.sql`update iso_builds set started_at = started_at - interval '2 hours 1 minute' where id = ${queued.id}`;
    await ctx.sql`update graphile_worker._private_jobs set locked_at = locked_at - interval '2 hours 1 minute' where key = ${'build_iso:' + queued.id}`;
    await sweep();

    expect((await getBuild(ctx, queued.id)).body).toMatchObject({
      status: 'failed',
      error: expect.stringContaining('worker killed'),
    });
    expect(await jobsOf(queued.id)).toEqual([]); // and with it the sealed credentials
    expect(existsSync(join(isoDir, `.work-${queued.id}`))).toBe(false); // the plaintext profile too
  }, 60_000);
});

describe('jobs/crontab', () => {
  it("runs the sweeps hourly, the dead build check, the rollouts' judge, the security feeds' check and the actions' expiry every minute, the stale device sweep every five and the unused package sets' sweep hourly, under explicit ids, of tasks that exist", () => {
    const items = parseCrontab(readFileSync(crontabFile, 'utf8'));
    expect(items).toHaveLength(9);
    const [sweepItem, reapItem, webhookItem, staleItem, archiveItem, judgeItem, feedsItem, actionsItem, setsItem] =
      items;
    expect(actionsItem).toMatchObject({ task: 'expire_device_actions', identifier: 'expire_device_actions' });
    expect(actionsItem!.match({ min: 17, hour: 13, date: 21, month: 11, dow: 6 })).toBe(true);
    expect(setsItem).toMatchObject({ task: 'sweep_package_sets', identifier: 'sweep_package_sets' });
    expect(setsItem!.match({ min: 45, hour: 13, date: 21, month: 11, dow: 6 })).toBe(true);
    expect(setsItem!.match({ min: 0, hour: 13, date: 21, month: 11, dow: 6 })).toBe(false);
    expect(feedsItem).toMatchObject({ task: 'refresh_vulnerability_feeds', identifier: 'refresh_vulnerability_feeds' });
    expect(feedsItem!.match({ min: 17, hour: 13, date: 21, month: 11, dow: 6 })).toBe(true);
    expect(judgeItem).toMatchObject({ task: 'judge_running_rollouts', identifier: 'judge_running_rollouts' });
    expect(judgeItem!.match({ min: 17, hour: 13, date: 21, month: 11, dow: 6 })).toBe(true);
    expect(staleItem).toMatchObject({ task: 'sweep_stale_devices', identifier: 'sweep_stale_devices' });
    for (const min of [0, 5, 55]) expect(staleItem!.match({ min, hour: 13, date: 21, month: 11, dow: 6 })).toBe(true);
    expect(staleItem!.match({ min: 7, hour: 13, date: 21, month: 11, dow: 6 })).toBe(false);
    expect(archiveItem).toMatchObject({ task: 'archive_stale_devices', identifier: 'archive_stale_devices' });
    expect(archiveItem!.match({ min: 15, hour: 2, date: 21, month: 11, dow: 6 })).toBe(true);
    expect(archiveItem!.match({ min: 0, hour: 2, date: 21, month: 11, dow: 6 })).toBe(false);
    expect(webhookItem).toMatchObject({ task: 'sweep_webhook_deliveries', identifier: 'sweep_webhook_deliveries' });
    expect(webhookItem!.match({ min: 30, hour: 13, date: 21, month: 11, dow: 6 })).toBe(true);
    expect(webhookItem!.match({ min: 0, hour: 13, date: 21, month: 11, dow: 6 })).toBe(false);
    expect(reapItem).toMatchObject({ task: 'reap_dead_builds', identifier: 'reap_dead_builds' });
    expect(reapItem!.match({ min: 17, hour: 13, date: 21, month: 11, dow: 6 })).toBe(true);
    expect(sweepItem).toMatchObject({ task: 'sweep_iso_builds', identifier: 'sweep_iso_builds' });
    expect(sweepItem!.match).toEqual(expect.any(Function));
    // Every hour on the hour, and only then.
    const at = (h: number, m: number) => ({ min: m, hour: h, date: 21, month: 11, dow: 6 });
    expect(sweepItem!.match(at(13, 0))).toBe(true);
    expect(sweepItem!.match(at(0, 0))).toBe(true);
    expect(sweepItem!.match(at(13, 30))).toBe(false);
    // Each task of the crontab is one that a runner of the worker runs.
    const tasks = createTaskList(taskDeps(ctx));
    for (const item of items) expect(Object.keys(tasks)).toContain(item.task);
  });
});
