/**
 * A bulk action over more than 1,000 devices runs as a worker job: the request answers at
 * once with 303 to the job's page, the page shows progress (changed, refused, left) while
 * it runs and reloads itself, and the real task (Graphile Worker's runOnce) changes each
 * device once, by its single change's service function, with one audit event each; a
 * device archived after the start is refused and listed. The request only counts: the job
 * lists the filter's devices in its first chunk (a filter whose group is gone by then ends
 * it as failed). Another organization's job is not found; a key revoked while the job runs stops it.
 */
import { describe, expect, it } from 'vitest';
import { runBulkChunk } from '../../api/device_bulk/jobs.ts';
import { createApiKey } from '../support/access.ts';
import { useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { insertOrgUnit } from '../support/devices.ts';
import { runJobs, workerDeps } from '../support/iso_builds.ts';
import { PortalClient } from '../support/portal_client.ts';

const ctx = useTestApp();

/**
 * The devices of the journey: 1,200 in `npm test` (six chunks, above the 1,000 that run in
 * the request); FLEET_BULK_JOB_DEVICES=5000 for the full journey.
 */
const DEVICES = Number(process.env.FLEET_BULK_JOB_DEVICES ?? 1_200);
const ARCHIVED = `JOB-${String(DEVICES - 7).padStart(5, '0')}`;
const shown = (n: number) => n.toLocaleString('de-DE');

async function signedIn(key: string, acceptLanguage?: string) {
  const b = new PortalClient(ctx.app, `10.54.1.${Math.floor(Math.random() * 250) + 1}`, acceptLanguage);
  expect((await b.signIn(key)).status).toBe(303);
  return b;
}

/** `n` bootstrapped devices in a unit of their own (serials JOB-00001 …), a group, and an admin key. */
async function fleet(n: number) {
  const org = await createOrganization(ctx);
  const unit = await insertOrgUnit(ctx.sql, org.id, 'Schulen');
  const [group] = await ctx.sql<{ id: string }[]>`
    insert into groups (organization_id, name) values (${org.id}, 'Prüfungsgeräte') returning id`;
  await ctx.sql`
    insert into devices (organization_id, serial, oe_id, agent_secret_hash, agent_secret_issued_at)
    select ${org.id}, format('JOB-%s', lpad(n::text, 5, '0')), ${unit}::uuid,
           sha256(convert_to(${org.id}::text || n::text, 'UTF8')), now() - interval '1 hour'
    from generate_series(1, ${n}) n`;
  const key = await createApiKey(ctx, org.id, 'admin');
  return { org, unit, group: group!.id, key, admin: await signedIn(key.key) };
}

/** Confirms "add every device of the unit to the group" and posts it; the answer and how long it took. */
async function startGroupAdd(
  f: Awaited<ReturnType<typeof fleet>>,
  query = `oe_id=${f.unit}&action=group-add&target_group=${f.group}&scope=filter`,
) {
  const confirm = await f.admin.get(`/portal/devices/bulk?${query}`);
  expect(confirm.status).toBe(200);
  const form = /<form method="post" action="([^"]+)">([\s\S]*?)<\/form>/.exec(
    confirm.text.slice(confirm.text.indexOf('<main>')),
  )!;
  const fields: Record<string, string> = {};
  for (const m of form[2]!.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"/g)) fields[m[1]!] = m[2]!;
  const started = performance.now();
  const res = await f.admin.request('POST', form[1]!, fields);
  return { res, ms: performance.now() - started, confirm: confirm.text };
}

/** The figures of the job's page. */
function figures(html: string) {
  const value = (field: string) => Number(new RegExp(`data-field="${field}" data-value="(\\d+)"`).exec(html)?.[1]);
  return {
    status: /data-bulk-job="[^"]+" data-status="([a-z]+)"/.exec(html)?.[1],
    changed: value('changed'),
    refused: value('refused'),
    left: value('left'),
    refreshes: html.includes('<meta http-equiv="refresh" content="2"'),
  };
}

const members = async (groupId: string) =>
  (await ctx.sql<{ n: number }[]>`select count(*)::int as n from group_members where group_id = ${groupId}`)[0]!.n;

describe(`a bulk action over ${DEVICES} devices`, () => {
  it('answers at once with 303 to its page, which shows progress; each device changed and audited once, a refused one listed', async () => {
    const f = await fleet(DEVICES);
    const { res, ms, confirm } = await startGroupAdd(f);
    expect(confirm).toContain(`${shown(DEVICES)} Geräte`);
    expect(confirm).toContain('Mehr als 1.000 Geräte: die Aktion läuft im Hintergrund weiter');
    expect(res.status).toBe(303);
    const location = res.headers.get('location')!;
    expect(location).toMatch(/^\/portal\/devices\/bulk\/jobs\/[0-9a-f-]{36}$/);
    const jobId = location.split('/').pop()!;
    console.log(`bulk group-add over ${DEVICES} devices: the request answered 303 in ${ms.toFixed(0)} ms`);
    // Nothing changed yet: the request only queued the job.
    expect(await members(f.group)).toBe(0);
    let page = await f.admin.get(location);
    expect(page.status).toBe(200);
    expect(figures(page.text)).toEqual({ status: 'queued', changed: 0, refused: 0, left: DEVICES, refreshes: true });
    expect(page.text).toContain('Zur Gruppe „Prüfungsgeräte“ hinzufügen');
    expect(page.text).toContain('läuft im Hintergrund');

    // The request only counted: the first chunk lists the devices, then changes its 200.
    expect((await ctx.sql`select device_ids from device_bulk_jobs where id = ${jobId}`)[0]!.device_ids).toBeNull();

    // One chunk, as the task runs it: the page shows the progress and keeps reloading.
    const poll = ctx.config.agentPollIntervalSeconds;
    expect(await runBulkChunk(ctx.sql, jobId, poll)).toBe(false);

    // A device archived after the list was taken: refused when its chunk comes, the others go on.
    const [archived] = await ctx.sql<{ id: string; serial: string }[]>`
      update devices set archived_at = now() where organization_id = ${f.org.id} and serial = ${ARCHIVED}
      returning id, serial`;
    page = await f.admin.get(location);
    expect(figures(page.text)).toEqual({
      status: 'running',
      changed: 200,
      refused: 0,
      left: DEVICES - 200,
      refreshes: true,
    });
    expect(await members(f.group)).toBe(200);

    // The rest by the worker's real task, chunk after chunk.
    const started = performance.now();
    await runJobs(ctx, workerDeps(ctx));
    console.log(
      `the job went through the other ${DEVICES - 200} devices in ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
    page = await f.admin.get(location);
    expect(figures(page.text)).toEqual({
      status: 'completed',
      changed: DEVICES - 1,
      refused: 1,
      left: 0,
      refreshes: false,
    });
    expect(page.text).toContain(`<tr data-failed="${archived!.id}">`);
    expect(page.text).toContain(`>${archived!.serial}</a>`);
    expect(page.text).toContain('Das Gerät ist archiviert.');

    // Each live device a member once, the archived one not; one audit event per change, by the starting request.
    const rows = await ctx.sql<
      { device_id: string }[]
    >`select device_id from group_members where group_id = ${f.group}`;
    expect(rows).toHaveLength(DEVICES - 1);
    expect(new Set(rows.map((r) => r.device_id)).size).toBe(DEVICES - 1);
    expect(rows.some((r) => r.device_id === archived!.id)).toBe(false);
    // (A membership's audit event names the group, and the device in its details.)
    const audit = await ctx.sql<{ device_id: string; n: number; group_id: string; actor: { api_key_id?: string } }[]>`
      select details->>'device_id' as device_id, count(*)::int as n, min(target_id::text) as group_id,
             min(actor::text)::jsonb as actor
        from audit_events where organization_id = ${f.org.id} and action = 'group.add_device'
       group by details->>'device_id'`;
    expect(audit).toHaveLength(DEVICES - 1);
    expect(audit.every((a) => a.n === 1 && a.group_id === f.group && a.actor.api_key_id === f.key.id)).toBe(true);
    expect(
      (
        await ctx.sql`select distinct request_id from audit_events where organization_id = ${f.org.id}
          and action = 'group.add_device'`
      ).length,
    ).toBe(1);
    expect(audit.some((a) => a.device_id === archived!.id)).toBe(false);
    // Nothing left to run.
    expect(await ctx.sql`select 1 from graphile_worker.jobs where task_identifier = 'device_bulk'`).toHaveLength(0);

    // In English, the same page in English words.
    const english = await signedIn(f.key.key, 'en');
    const en = await english.get(location);
    expect(en.text).toContain('Add to the group');
    expect(en.text).toContain('completed');
  }, 600_000);
});

describe('the job page', () => {
  it("is not found for another organization, an unknown or a malformed id; a revoked key's job stops", async () => {
    const f = await fleet(1_001);
    const { res } = await startGroupAdd(f);
    expect(res.status).toBe(303);
    const location = res.headers.get('location')!;
    const jobId = location.split('/').pop()!;

    const other = await createOrganization(ctx);
    const stranger = await signedIn((await createApiKey(ctx, other.id, 'admin')).key);
    expect((await stranger.get(location)).status).toBe(404);
    expect((await f.admin.get(`/portal/devices/bulk/jobs/${crypto.randomUUID()}`)).status).toBe(404);
    expect((await f.admin.get('/portal/devices/bulk/jobs/not-a-uuid')).status).toBe(404);

    // The key that started it is revoked after the first chunk: the job stops, the rest unchanged.
    expect(await runBulkChunk(ctx.sql, jobId, ctx.config.agentPollIntervalSeconds)).toBe(false);
    await ctx.sql`update api_keys set revoked_at = now() where id = ${f.key.id}`;
    await runJobs(ctx, workerDeps(ctx));
    expect(await members(f.group)).toBe(200);
    const [job] = await ctx.sql<{ status: string; error: string; done: number }[]>`
      select status, error, done from device_bulk_jobs where id = ${jobId}`;
    expect(job).toMatchObject({ status: 'failed', done: 200 });
    expect(job!.error).toContain('revoked or expired');
  }, 60_000);
});

describe('the job lists its devices when it starts running', () => {
  it('takes the devices its filter matches then; a filter whose group was deleted meanwhile ends it as failed', async () => {
    const f = await fleet(1_001);
    const poll = ctx.config.agentPollIntervalSeconds;
    const { res, confirm } = await startGroupAdd(f);
    expect(confirm).toContain(`${shown(1_001)} Geräte`);
    const jobId = res.headers.get('location')!.split('/').pop()!;
    // Enrolled into the unit between the start and the first chunk: listed with the others.
    const [late] = await ctx.sql<{ id: string }[]>`
      insert into devices (organization_id, serial, oe_id, agent_secret_hash, agent_secret_issued_at)
      values (${f.org.id}, 'JOB-LATE', ${f.unit}, sha256('late'), now()) returning id`;
    expect(await runBulkChunk(ctx.sql, jobId, poll)).toBe(false);
    const [listed] = await ctx.sql<{ total: number; device_ids: string[] }[]>`
      select total, device_ids from device_bulk_jobs where id = ${jobId}`;
    expect(listed!.total).toBe(1_002);
    expect(listed!.device_ids).toContain(late!.id);
    expect(figures((await f.admin.get(`/portal/devices/bulk/jobs/${jobId}`)).text)).toMatchObject({
      status: 'running',
      changed: 200,
      left: 802,
    });

    // A move of every device of a second group: the group is deleted before the job lists them.
    const [group] = await ctx.sql<{ id: string }[]>`
      insert into groups (organization_id, name) values (${f.org.id}, 'Leihgeräte') returning id`;
    await ctx.sql`
      insert into group_members (group_id, device_id, organization_id)
      select ${group!.id}, id, organization_id from devices where organization_id = ${f.org.id}`;
    const other = await insertOrgUnit(ctx.sql, f.org.id, 'Verwaltung');
    const moving = await startGroupAdd(f, `group_id=${group!.id}&action=move&target_oe=${other}&scope=filter`);
    expect(moving.res.status).toBe(303);
    const movingId = moving.res.headers.get('location')!.split('/').pop()!;
    await ctx.sql`delete from groups where id = ${group!.id}`;
    expect(await runBulkChunk(ctx.sql, movingId, poll)).toBe(true);
    const [job] = await ctx.sql<{ status: string; error: string; done: number; device_ids: string[] | null }[]>`
      select status, error, done, device_ids from device_bulk_jobs where id = ${movingId}`;
    expect(job).toMatchObject({ status: 'failed', done: 0, device_ids: null });
    expect(job!.error).toContain(group!.id);
    expect(await ctx.sql`select 1 from devices where oe_id = ${other}`).toHaveLength(0);
  }, 60_000);
});
