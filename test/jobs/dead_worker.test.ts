/**
 * A build host killed mid-build (SIGKILL, host lost): its worker stops sending heartbeats,
 * and a worker still running fails the build within one silence plus a crontab minute,
 * deletes its job and its work folder. Live workers never fail each other's builds. The
 * check does not wait behind the builds of the host that runs it, and the dead host's build
 * script dies with its worker (a watchdog in its process group), so nothing writes into the
 * work folder once it is removed. The silence is shortened (WORKER_SILENCE_SECONDS) so the
 * test takes seconds.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { startWorker } from '../../jobs/worker.ts';
import { reapDeadBuilds } from '../../jobs/tasks/reap_dead_builds.ts';
import { workPaths } from '../../jobs/iso/iso_files.ts';
import { useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { getBuild, tempIsoDir, triggerBuild, waitForStatus, workerDeps } from '../support/iso_builds.ts';
import { allProcesses, liveInGroup } from '../support/processes.ts';

const isoDir = tempIsoDir();
const ctx = useTestApp({ isoDir });
const SILENCE = 2;

afterAll(async () => {
  await rm(dirname(isoDir), { recursive: true, force: true });
});

/** A build script that reports 40 % and then waits as long as its work folder exists. */
async function slowScript(): Promise<string> {
  const script = join(await mkdtemp(join(tmpdir(), 'fleet-script-')), 'slow.sh');
  await writeFile(
    script,
    [
      '#!/usr/bin/env bash',
      'echo "PROGRESS 40"',
      'while [[ -d $FLEET_ISO_STAGING ]]; do sleep 0.1; done',
      'exit 1',
      '',
    ].join('\n'),
  );
  return script;
}

/**
 * A build script that never ends by itself and keeps writing into its work folder,
 * creating it again if it is gone: only being killed stops it.
 */
async function stubbornScript(): Promise<string> {
  const script = join(await mkdtemp(join(tmpdir(), 'fleet-script-')), 'stubborn.sh');
  await writeFile(
    script,
    [
      '#!/usr/bin/env bash',
      'work=$(dirname "$FLEET_ISO_STAGING")',
      'echo "PROGRESS 40"',
      'while :; do mkdir -p "$work" && date +%s%N >"$work/still-writing"; sleep 0.2; done',
      '',
    ].join('\n'),
  );
  return script;
}

/** A build host in a process of its own, building the given build up to 40 %. */
async function buildHostBuilding(
  buildId: string,
  { script, silence = SILENCE }: { script?: string; silence?: number } = {},
): Promise<{ child: ChildProcess; exited: Promise<unknown> }> {
  const fixture = fileURLToPath(new URL('./fixtures/worker_process.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', fixture], {
    env: {
      ...process.env,
      DATABASE_URL: ctx.db.url,
      ISO_DIR: isoDir,
      BUILD_SCRIPT: script ?? (await slowScript()),
      WORKER_SILENCE_SECONDS: String(silence),
    },
    stdio: 'ignore',
  });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  await waitForStatus(ctx, buildId, ['running'], 60_000);
  await expect.poll(async () => (await getBuild(ctx, buildId)).body.progress, { timeout: 10_000 }).toBe(40);
  return { child, exited };
}

function jobsOf(buildId: string) {
  return ctx.sql<{ id: string; locked_by: string | null }[]>`
    select id, locked_by from graphile_worker.jobs where key = ${'build_iso:' + buildId}`;
}

describe('builds of a dead worker', () => {
  it('fail within seconds of the silence: job and work folder (WLAN profile included) gone', async () => {
    const org = await createOrganization(ctx);
    const queued = await triggerBuild(ctx, org.id, { wlan: { ssid: 'Net', psk: 'dead-worker-psk' } });
    const host = await buildHostBuilding(queued.id);
    const workDir = join(isoDir, `.work-${queued.id}`);
    expect(existsSync(join(workPaths(isoDir, queued.id).staging, 'fleet', 'wlan.nmconnection'))).toBe(true);
    host.child.kill('SIGKILL');
    await host.exited;
    const killedAt = Date.now();

    // Another build host (or the restarted service) runs a worker.
    const survivor = await startWorker(ctx.db.url, workerDeps(ctx, { workerSilenceSeconds: SILENCE }), 1, {
      pollIntervalMs: 200,
    });
    try {
      const failed = await waitForStatus(ctx, queued.id, ['failed', 'completed'], 30_000);
      expect(failed).toMatchObject({
        status: 'failed',
        error: expect.stringContaining('build host stopped during the build'),
      });
      expect(await jobsOf(queued.id)).toEqual([]);
      await expect.poll(() => existsSync(workDir), { timeout: 5000 }).toBe(false);
      console.info(`dead worker's build failed ${Date.now() - killedAt} ms after the kill (silence ${SILENCE} s)`);
    } finally {
      await survivor.stop();
    }
  }, 90_000);

  it('never fail the running build of a live worker on another host', async () => {
    const org = await createOrganization(ctx);
    const queued = await triggerBuild(ctx, org.id);
    const host = await buildHostBuilding(queued.id);
    const other = await startWorker(ctx.db.url, workerDeps(ctx, { workerSilenceSeconds: SILENCE }), 1, {
      pollIntervalMs: 200,
    });
    try {
      // Three silences pass while both run; the reaper (crontab and start-up) finds nothing.
      await new Promise((r) => setTimeout(r, 3 * SILENCE * 1000));
      expect(await reapDeadBuilds(workerDeps(ctx, { workerSilenceSeconds: SILENCE }), ctx.sql)).toEqual([]);
      expect((await getBuild(ctx, queued.id)).body.status).toBe('running');
      expect((await jobsOf(queued.id))[0]?.locked_by).toEqual(expect.any(String));
    } finally {
      await other.stop();
      host.child.kill('SIGKILL');
      await host.exited;
    }
  }, 90_000);

  it('fail within the silence plus a minute while the other host is busy; the build dies with its worker', async () => {
    const silence = 5;
    const script = await stubbornScript();
    const org = await createOrganization(ctx);
    // Host A takes a build that never ends; a second build waits behind it in its queue.
    const long = await triggerBuild(ctx, org.id);
    const busy = await buildHostBuilding(long.id, { script, silence });
    const doomed = await triggerBuild(ctx, org.id);
    const dying = await buildHostBuilding(doomed.id, { script, silence });
    const backlog = await triggerBuild(ctx, org.id);
    try {
      // The dead host's build script and its group (bash, sleep, the watchdog).
      const build = allProcesses().find((p) => p.ppid === dying.child.pid && p.command.includes(script));
      expect(build, 'the build script under host B').toBeDefined();
      const workDir = join(isoDir, `.work-${doomed.id}`);
      // It reported its progress first, then writes: wait for the first write.
      await expect.poll(() => existsSync(join(workDir, 'still-writing')), { timeout: 10_000 }).toBe(true);

      dying.child.kill('SIGKILL');
      await dying.exited;
      const killedAt = Date.now();
      // Host A's runner for builds stays busy the whole time (and one build waits behind it).
      const failed = await waitForStatus(ctx, doomed.id, ['failed', 'completed'], (silence + 60) * 1000);
      const failedMs = Date.now() - killedAt;
      expect(failed).toMatchObject({ status: 'failed', error: expect.stringContaining('build host stopped') });
      expect(failedMs).toBeLessThan((silence + 60) * 1000);
      expect(liveInGroup(build!.pgid)).toEqual([]);
      await expect.poll(() => existsSync(workDir), { timeout: 10_000 }).toBe(false);
      // The script wrote every 0.2 s: five times that without the folder coming back.
      await new Promise((r) => setTimeout(r, 1000));
      expect(existsSync(workDir)).toBe(false);
      expect((await getBuild(ctx, long.id)).body.status).toBe('running');
      expect((await getBuild(ctx, backlog.id)).body.status).toBe('pending');
      console.info(`a dead host's build failed ${failedMs} ms after the kill (silence ${silence} s, other host busy)`);
    } finally {
      busy.child.kill('SIGKILL');
      await busy.exited;
    }
    // Host A's build went with it, too.
    await expect
      .poll(() => allProcesses().filter((p) => p.command.includes(script) && p.state !== 'Z'), { timeout: 10_000 })
      .toEqual([]);
  }, 240_000);
});
