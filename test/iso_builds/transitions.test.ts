/**
 * The iso_builds state machine, one transition at a time against the test database: which
 * states each change starts from, and that a change from any other state changes nothing.
 */
import { describe, expect, it } from 'vitest';
import { buildIsoJobKey } from '../../api/iso_builds/job.ts';
import {
  claimBuild,
  completeBuild,
  deleteExpiredBuilds,
  deleteOldFailedBuilds,
  FAILURE_REASONS,
  failBuild,
  failBuilds,
  failBuildsWithoutJob,
  failStuckBuilds,
  releaseBuild,
  setProgress,
} from '../../api/iso_builds/transitions.ts';
import { useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';

const ctx = useTestApp();

interface Row {
  status: string;
  progress: number;
  error: string | null;
  started_at: Date | null;
  finished_at: Date | null;
  file_name: string | null;
}

async function pendingBuild(organizationId: string): Promise<string> {
  const [row] = await ctx.sql<{ id: string }[]>`
    insert into iso_builds (organization_id) values (${organizationId}) returning id`;
  return row!.id;
}

async function runningBuild(organizationId: string): Promise<string> {
  const id = await pendingBuild(organizationId);
  expect(await claimBuild(ctx.sql, id)).not.toBeNull();
  return id;
}

async function completedBuild(organizationId: string): Promise<string> {
  const id = await runningBuild(organizationId);
  expect((await complete(organizationId, id)).completed).toBe(true);
  return id;
}

async function failedBuild(organizationId: string): Promise<string> {
  const id = await pendingBuild(organizationId);
  expect(await failBuild(ctx.sql, id, 'first reason')).toBe(true);
  return id;
}

function complete(organizationId: string, buildId: string) {
  return completeBuild(ctx.sql, {
    buildId,
    organizationId,
    sizeBytes: 4,
    sha256: 'a'.repeat(64),
    fileName: `fleet-${buildId}.iso`,
  });
}

async function row(id: string): Promise<Row | undefined> {
  const [found] = await ctx.sql<Row[]>`
    select status, progress, error, started_at, finished_at, file_name from iso_builds where id = ${id}`;
  return found;
}

describe('claimBuild', () => {
  it('takes a pending build, and a running one over, to running at 0 %', async () => {
    const org = await createOrganization(ctx);
    const id = await pendingBuild(org.id);
    expect(await claimBuild(ctx.sql, id)).toMatchObject({ organization_id: org.id, template_id: null });
    await setProgress(ctx.sql, id, 40);
    expect(await claimBuild(ctx.sql, id)).not.toBeNull();
    expect(await row(id)).toMatchObject({ status: 'running', progress: 0, started_at: expect.any(Date) });
  });

  it('leaves completed, failed and deleted builds alone', async () => {
    const org = await createOrganization(ctx);
    const completed = await completedBuild(org.id);
    const failed = await failedBuild(org.id);
    expect(await claimBuild(ctx.sql, completed)).toBeNull();
    expect(await claimBuild(ctx.sql, failed)).toBeNull();
    expect(await claimBuild(ctx.sql, crypto.randomUUID())).toBeNull();
    expect((await row(completed))?.status).toBe('completed');
    expect((await row(failed))?.status).toBe('failed');
  });
});

describe('setProgress', () => {
  it('only grows, and only while running', async () => {
    const org = await createOrganization(ctx);
    const id = await runningBuild(org.id);
    await setProgress(ctx.sql, id, 40);
    await setProgress(ctx.sql, id, 30);
    expect((await row(id))?.progress).toBe(40);
    const pending = await pendingBuild(org.id);
    await setProgress(ctx.sql, pending, 40);
    expect((await row(pending))?.progress).toBe(0);
  });
});

describe('releaseBuild', () => {
  it('puts a running build back to pending, and nothing else', async () => {
    const org = await createOrganization(ctx);
    const id = await runningBuild(org.id);
    await setProgress(ctx.sql, id, 40);
    await releaseBuild(ctx.sql, id);
    expect(await row(id)).toMatchObject({ status: 'pending', progress: 0, started_at: null });
    const failed = await failedBuild(org.id);
    await releaseBuild(ctx.sql, failed);
    expect((await row(failed))?.status).toBe('failed');
  });
});

describe('completeBuild', () => {
  it('completes a running build and deletes the older completed build of the organization', async () => {
    const org = await createOrganization(ctx);
    const other = await createOrganization(ctx);
    const older = await completedBuild(org.id);
    const elsewhere = await completedBuild(other.id);
    const id = await runningBuild(org.id);
    expect(await complete(org.id, id)).toEqual({ completed: true, replacedFiles: [`fleet-${older}.iso`] });
    expect(await row(id)).toMatchObject({ status: 'completed', progress: 100, file_name: `fleet-${id}.iso` });
    expect(await row(older)).toBeUndefined();
    expect((await row(elsewhere))?.status).toBe('completed');
  });

  it('completes no build that is not running, and then deletes nothing', async () => {
    const org = await createOrganization(ctx);
    const kept = await completedBuild(org.id);
    for (const id of [await pendingBuild(org.id), await failedBuild(org.id), kept, crypto.randomUUID()]) {
      expect(await complete(org.id, id)).toEqual({ completed: false, replacedFiles: [] });
    }
    expect((await row(kept))?.status).toBe('completed');
  });
});

describe('failBuild', () => {
  it('fails a pending or running build with its reason, cut to 2000 characters', async () => {
    const org = await createOrganization(ctx);
    const pending = await pendingBuild(org.id);
    const running = await runningBuild(org.id);
    expect(await failBuild(ctx.sql, pending, 'x'.repeat(2500))).toBe(true);
    expect(await failBuild(ctx.sql, running, 'the script failed')).toBe(true);
    expect(await row(pending)).toMatchObject({ status: 'failed', finished_at: expect.any(Date) });
    expect((await row(pending))?.error).toHaveLength(2000);
    expect((await row(running))?.error).toBe('the script failed');
  });

  it('a second failure is a no-op that keeps the first reason', async () => {
    const org = await createOrganization(ctx);
    const id = await failedBuild(org.id);
    const before = await row(id);
    expect(await failBuild(ctx.sql, id, 'second reason')).toBe(false);
    expect(await row(id)).toEqual(before);
  });

  it('cannot fail a completed build, nor a deleted one', async () => {
    const org = await createOrganization(ctx);
    const id = await completedBuild(org.id);
    expect(await failBuild(ctx.sql, id, 'too late')).toBe(false);
    expect(await row(id)).toMatchObject({ status: 'completed', error: null });
    expect(await failBuild(ctx.sql, crypto.randomUUID(), 'gone')).toBe(false);
  });
});

describe('the sweep and the reaper', () => {
  it('failBuilds fails the unfinished builds among those given and says which', async () => {
    const org = await createOrganization(ctx);
    const pending = await pendingBuild(org.id);
    const running = await runningBuild(org.id);
    const completed = await completedBuild(org.id);
    const failed = await failedBuild(org.id);
    const ids = await failBuilds(ctx.sql, [pending, running, completed, failed], FAILURE_REASONS.deadWorker);
    expect(ids.sort()).toEqual([pending, running].sort());
    expect((await row(running))?.error).toBe(FAILURE_REASONS.deadWorker);
    expect((await row(failed))?.error).toBe('first reason');
    expect(await failBuilds(ctx.sql, [], FAILURE_REASONS.deadWorker)).toEqual([]);
  });

  it('failStuckBuilds fails only builds running for longer than the limit', async () => {
    const org = await createOrganization(ctx);
    const stuck = await runningBuild(org.id);
    const recent = await runningBuild(org.id);
    const oldPending = await pendingBuild(org.id);
    await ctx.sql`
      update iso_builds set started_at = now() - interval '2 hours' where id in ${ctx.sql([stuck, oldPending])}`;
    const failed = await failStuckBuilds(ctx.sql, 60 * 60_000);
    expect(failed).toContain(stuck);
    expect(failed).not.toContain(recent);
    expect(await row(stuck)).toMatchObject({ status: 'failed', error: FAILURE_REASONS.stuck });
    expect((await row(recent))?.status).toBe('running');
    expect((await row(oldPending))?.status).toBe('pending');
  });

  it('failBuildsWithoutJob fails pending builds whose job is gone, and only those', async () => {
    const org = await createOrganization(ctx);
    const lost = await pendingBuild(org.id);
    const queued = await pendingBuild(org.id);
    await ctx.sql`select from graphile_worker.add_job('build_iso', '{}'::json, job_key => ${buildIsoJobKey(queued)})`;
    expect(await failBuildsWithoutJob(ctx.sql)).toBeGreaterThanOrEqual(1);
    expect(await row(lost)).toMatchObject({ status: 'failed', error: FAILURE_REASONS.jobLost });
    expect((await row(queued))?.status).toBe('pending');
    await ctx.sql`select graphile_worker.remove_job(${buildIsoJobKey(queued)})`;
  });

  it('deletes completed builds past expiry, with their files, and failed builds a week old', async () => {
    const org = await createOrganization(ctx);
    const expired = await completedBuild(org.id);
    const other = await createOrganization(ctx);
    const current = await completedBuild(other.id);
    const oldFailure = await failedBuild(org.id);
    const newFailure = await failedBuild(org.id);
    await ctx.sql`
      update iso_builds set finished_at = now() - interval '8 days', expires_at = now() - interval '1 day'
       where id = ${expired}`;
    await ctx.sql`update iso_builds set finished_at = now() - interval '8 days' where id = ${oldFailure}`;
    expect(await deleteExpiredBuilds(ctx.sql)).toContain(`fleet-${expired}.iso`);
    expect(await deleteOldFailedBuilds(ctx.sql)).toBeGreaterThanOrEqual(1);
    expect(await row(expired)).toBeUndefined();
    expect(await row(oldFailure)).toBeUndefined();
    expect((await row(current))?.status).toBe('completed');
    expect((await row(newFailure))?.status).toBe('failed');
  });
});
