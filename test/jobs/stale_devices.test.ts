/**
 * The stale device sweeps: `sweep_stale_devices` announces a device that went stale with the
 * webhook `device.stale` once per stale period; `archive_stale_devices` archives a device
 * stale for longer than its org unit chain's `archive_stale_after_days`, audited by the
 * system, with `device.archived` saying `reason: "stale"`. Time passes by moving the
 * device's timestamps back in the database. Two sweeps at once run on two clients of
 * their own, as two workers would.
 */
import { runOnce } from 'graphile-worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSql, type Sql } from '../../api/db/client.ts';
import { createTaskList } from '../../jobs/tasks/index.ts';
import { archiveStaleDevices } from '../../jobs/tasks/archive_stale_devices.ts';
import { staleAfterSeconds, sweepStaleDevices } from '../../jobs/tasks/sweep_stale_devices.ts';
import { checkin, enrollAgent } from '../support/agent.ts';
import { useTestApp, writeHeartbeats } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { insertDevice, insertOrgUnit } from '../support/devices.ts';
import { queueJob, silentGraphileLogger, taskDeps } from '../support/iso_builds.ts';

const ctx = useTestApp();
const STALE_AFTER = staleAfterSeconds({ agentPollIntervalSeconds: 300 });

/** Two more clients: the database as two workers see it. */
let workerA: Sql;
let workerB: Sql;
beforeAll(() => {
  workerA = createSql(ctx.db.url, { max: 2, applicationName: 'fleet-test-worker-a' });
  workerB = createSql(ctx.db.url, { max: 2, applicationName: 'fleet-test-worker-b' });
});
afterAll(async () => {
  await Promise.all([workerA?.end(), workerB?.end()]);
});

/** An organization whose webhook takes the stale and archive events (never delivered here). */
async function subscribedOrganization() {
  const org = await createOrganization(ctx);
  const res = await ctx.request('POST', `/api/v1/organizations/${org.id}/webhooks`, {
    body: { url: 'https://hooks.example.com/fleet', events: ['device.stale', 'device.archived'] },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return org as { id: string; default_oe_id: string };
}

/**
 * A device whose agent bootstrapped `issuedAgo` ago and last checked in `checkinAgo` ago
 * (null: never), written as the bootstrap and the heartbeat batch write them.
 */
async function bootstrappedDevice(
  organizationId: string,
  options: { oeId?: string; issuedAgo: string; checkinAgo: string | null },
) {
  const device = await insertDevice(ctx.sql, { organizationId, oeId: options.oeId });
  await ctx.sql`
    update devices set agent_secret_hash = sha256(convert_to(${device.id}, 'UTF8')),
                       agent_secret_issued_at = now() - ${options.issuedAgo}::interval
     where id = ${device.id}`;
  await ctx.sql`
    update device_heartbeats set at = now() - ${options.checkinAgo}::interval where device_id = ${device.id}`;
  return device;
}

async function eventsOf(type: string, deviceId: string) {
  return ctx.sql<{ data: Record<string, unknown> }[]>`
    select data from webhook_events where type = ${type} and data ->> 'device_id' = ${deviceId} order by created_at`;
}

async function archiveAudits(deviceId: string) {
  return ctx.sql<{ actor: unknown; details: Record<string, unknown>; request_id: string }[]>`
    select actor, details, request_id from audit_events
     where action = 'device.archive' and target_id = ${deviceId}`;
}

async function archivedAt(deviceId: string): Promise<Date | null> {
  const [row] = await ctx.sql<{ archived_at: Date | null }[]>`select archived_at from devices where id = ${deviceId}`;
  return row!.archived_at;
}

async function setDays(unitId: string, days: number | null) {
  const res = await ctx.request('PATCH', `/api/v1/org-units/${unitId}`, { body: { archive_stale_after_days: days } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

/** The archiving sweep, in small batches. */
async function archiveAll(sql: Sql, requestId: string, batch = 100): Promise<string[]> {
  return (await archiveStaleDevices(sql, STALE_AFTER, requestId, batch)).archived;
}

/** Queues the task and runs it through Graphile Worker with the worker's real task. */
async function runTask(task: 'sweep_stale_devices' | 'archive_stale_devices') {
  await queueJob(ctx.sql, task);
  const tasks = createTaskList(taskDeps(ctx));
  await runOnce({
    connectionString: ctx.db.url,
    taskList: { [task]: tasks[task]! },
    noHandleSignals: true,
    logger: silentGraphileLogger,
  });
}

describe('sweep_stale_devices: device.stale', () => {
  it('announces a device stale since its bootstrap without any check-in, once per stale period', async () => {
    const org = await subscribedOrganization();
    const agent = await enrollAgent(ctx, { organizationId: org.id });
    // Bootstrapped 14 minutes ago, never checked in: not stale yet (three intervals are 15).
    await ctx.sql`update devices set agent_secret_issued_at = now() - interval '14 minutes' where id = ${agent.device_id}`;
    await sweepStaleDevices(ctx.sql, STALE_AFTER);
    expect(await eventsOf('device.stale', agent.device_id)).toHaveLength(0);

    await ctx.sql`update devices set agent_secret_issued_at = now() - interval '16 minutes' where id = ${agent.device_id}`;
    expect(await sweepStaleDevices(ctx.sql, STALE_AFTER)).toContain(agent.device_id);
    const [first] = await eventsOf('device.stale', agent.device_id);
    const [device] = await ctx.sql`select serial, hostname, oe_id from devices where id = ${agent.device_id}`;
    expect(first!.data).toEqual({
      device_id: agent.device_id,
      serial: device!.serial,
      hostname: device!.hostname,
      oe_id: device!.oe_id,
      agent_last_checkin: null,
    });

    // Still the same silence: nothing more, however often the sweep runs.
    await sweepStaleDevices(ctx.sql, STALE_AFTER);
    await runTask('sweep_stale_devices');
    expect(await eventsOf('device.stale', agent.device_id)).toHaveLength(1);

    // A real check-in ends the period; the device is active and nothing is sent.
    expect((await checkin(ctx, agent.secret)).status).toBe(200);
    await writeHeartbeats(ctx);
    expect(await sweepStaleDevices(ctx.sql, STALE_AFTER)).not.toContain(agent.device_id);
    expect(await eventsOf('device.stale', agent.device_id)).toHaveLength(1);

    // Silent again for three intervals after that check-in: a new period, announced once.
    await ctx.sql`update device_heartbeats set at = at - interval '16 minutes' where device_id = ${agent.device_id}`;
    await runTask('sweep_stale_devices');
    await sweepStaleDevices(ctx.sql, STALE_AFTER);
    const events = await eventsOf('device.stale', agent.device_id);
    expect(events).toHaveLength(2);
    expect(events[1]!.data.agent_last_checkin).toEqual(expect.any(String));
    // The device row was never written for the mark.
    const [row] = await ctx.sql`select archived_at, deprovisioned_at from devices where id = ${agent.device_id}`;
    expect(row).toEqual({ archived_at: null, deprovisioned_at: null });
  });

  it('leaves active, enrolled, deprovisioned and archived devices alone', async () => {
    const org = await subscribedOrganization();
    const active = await bootstrappedDevice(org.id, { issuedAgo: '2 days', checkinAgo: '5 minutes' });
    const enrolled = await insertDevice(ctx.sql, { organizationId: org.id });
    const deprovisioned = await bootstrappedDevice(org.id, { issuedAgo: '2 days', checkinAgo: '1 day' });
    await ctx.sql`update devices set deprovisioned_at = now() where id = ${deprovisioned.id}`;
    const archived = await bootstrappedDevice(org.id, { issuedAgo: '2 days', checkinAgo: '1 day' });
    await ctx.sql`update devices set archived_at = now() where id = ${archived.id}`;
    const stale = await bootstrappedDevice(org.id, { issuedAgo: '2 days', checkinAgo: '1 day' });

    const announced = await sweepStaleDevices(ctx.sql, STALE_AFTER);
    expect(announced).toContain(stale.id);
    for (const quiet of [active, enrolled, deprovisioned, archived]) {
      expect(announced).not.toContain(quiet.id);
      expect(await eventsOf('device.stale', quiet.id)).toHaveLength(0);
    }
  });

  it('two sweeps at once announce each device once', async () => {
    const org = await subscribedOrganization();
    const devices = [];
    for (let i = 0; i < 60; i++) {
      devices.push(await bootstrappedDevice(org.id, { issuedAgo: '3 days', checkinAgo: `${i + 20} minutes` }));
    }
    const [a, b] = await Promise.all([
      sweepStaleDevices(workerA, STALE_AFTER),
      sweepStaleDevices(workerB, STALE_AFTER),
    ]);
    const ids = devices.map((d) => d.id);
    const mine = (list: string[]) => list.filter((id) => ids.includes(id));
    expect([...mine(a), ...mine(b)].sort()).toEqual([...ids].sort());
    const [events] = await ctx.sql<{ n: number; devices: number }[]>`
      select count(*)::int as n, count(distinct data ->> 'device_id')::int as devices
        from webhook_events where type = 'device.stale' and organization_id = ${org.id}`;
    expect(events).toEqual({ n: 60, devices: 60 });
  });
});

describe('archive_stale_devices: archiving by policy', () => {
  it('archives a device stale for longer than its unit chain allows, once, audited by the system, with device.archived', async () => {
    const org = await subscribedOrganization();
    const school = await insertOrgUnit(ctx.sql, org.id, 'Schule');
    const room = await insertOrgUnit(ctx.sql, org.id, 'Raum 1', school);
    await setDays(school, 30);
    // Inherits 30 days from its parent: stale for 31 days (silent since 31 days and 15 minutes).
    const due = await bootstrappedDevice(org.id, {
      oeId: room,
      issuedAgo: '60 days',
      checkinAgo: '31 days 15 minutes',
    });
    // Silent for 30 days and 10 minutes: stale for just under 30 days, so it stays.
    const notYet = await bootstrappedDevice(org.id, {
      oeId: room,
      issuedAgo: '60 days',
      checkinAgo: '30 days 10 minutes',
    });
    // Never checked in since its bootstrap 40 days ago: stale since then, due too.
    const neverCheckedIn = await bootstrappedDevice(org.id, { oeId: school, issuedAgo: '40 days', checkinAgo: null });

    await runTask('archive_stale_devices');

    for (const id of [due.id, neverCheckedIn.id]) {
      expect(await archivedAt(id), id).not.toBeNull();
      const audits = await archiveAudits(id);
      expect(audits).toHaveLength(1);
      expect(audits[0]!.actor).toEqual({ type: 'system' });
      expect(audits[0]!.details).toMatchObject({ reason: 'stale', archive_stale_after_days: 30 });
      expect(audits[0]!.request_id).toMatch(/^job:/);
      const events = await eventsOf('device.archived', id);
      expect(events).toHaveLength(1);
      expect(events[0]!.data).toMatchObject({ device_id: id, reason: 'stale' });
    }
    expect(await archivedAt(notYet.id)).toBeNull();
    const read = await ctx.request('GET', `/api/v1/devices/${due.id}`);
    expect(read.body.archived_at).not.toBeNull();
    const listed = await ctx.request('GET', `/api/v1/organizations/${org.id}/audit-events?action=device.archive`);
    expect(listed.body.items.map((e: { target_id: string }) => e.target_id).sort()).toEqual(
      [due.id, neverCheckedIn.id].sort(),
    );
    expect(listed.body.items[0].actor).toEqual({ type: 'system' });

    // Idempotent: the next runs find nothing more to do.
    await runTask('archive_stale_devices');
    expect(await archiveAll(ctx.sql, 'test')).not.toContain(due.id);
    expect(await archiveAudits(due.id)).toHaveLength(1);
    expect(await eventsOf('device.archived', due.id)).toHaveLength(1);
  });

  it('the nearest unit with a value decides; a chain without one never archives', async () => {
    const org = await subscribedOrganization();
    const top = await insertOrgUnit(ctx.sql, org.id, 'Oben');
    const longer = await insertOrgUnit(ctx.sql, org.id, 'Länger', top);
    const inherits = await insertOrgUnit(ctx.sql, org.id, 'Erbt', top);
    const unset = await insertOrgUnit(ctx.sql, org.id, 'Ohne');
    await setDays(top, 10);
    await setDays(longer, 100);
    const silent = { issuedAgo: '200 days', checkinAgo: '50 days' };
    const underLonger = await bootstrappedDevice(org.id, { oeId: longer, ...silent });
    const underInherits = await bootstrappedDevice(org.id, { oeId: inherits, ...silent });
    const underUnset = await bootstrappedDevice(org.id, { oeId: unset, issuedAgo: '9 years', checkinAgo: '9 years' });
    const inNewDevices = await bootstrappedDevice(org.id, { issuedAgo: '9 years', checkinAgo: '9 years' });
    // Another organization that sets nothing at all.
    const other = await subscribedOrganization();
    const elsewhere = await bootstrappedDevice(other.id, { issuedAgo: '9 years', checkinAgo: '9 years' });

    const archived = await archiveAll(ctx.sql, 'test');

    expect(archived).toContain(underInherits.id);
    for (const stays of [underLonger, underUnset, inNewDevices, elsewhere]) {
      expect(archived).not.toContain(stays.id);
      expect(await archivedAt(stays.id)).toBeNull();
      expect(await archiveAudits(stays.id)).toHaveLength(0);
    }

    // null on the unit again: the parent's 10 days decide, and it goes too.
    await setDays(longer, null);
    expect(await archiveAll(ctx.sql, 'test')).toEqual([underLonger.id]);
  });

  it('leaves deprovisioned and active devices alone, however long ago they bootstrapped', async () => {
    const org = await subscribedOrganization();
    await setDays(org.default_oe_id, 1);
    const active = await bootstrappedDevice(org.id, { issuedAgo: '30 days', checkinAgo: '1 minute' });
    const deprovisioned = await bootstrappedDevice(org.id, { issuedAgo: '30 days', checkinAgo: '20 days' });
    await ctx.sql`update devices set deprovisioned_at = now() - interval '19 days' where id = ${deprovisioned.id}`;
    const enrolled = await insertDevice(ctx.sql, { organizationId: org.id });
    await ctx.sql`update devices set created_at = now() - interval '30 days' where id = ${enrolled.id}`;
    const archived = await archiveAll(ctx.sql, 'test');
    for (const stays of [active, deprovisioned, enrolled]) expect(archived).not.toContain(stays.id);
  });

  it('two sweeps at once archive each device once, with one audit row and one webhook each', async () => {
    const org = await subscribedOrganization();
    await setDays(org.default_oe_id, 7);
    const devices = [];
    for (let i = 0; i < 120; i++) {
      devices.push(await bootstrappedDevice(org.id, { issuedAgo: '30 days', checkinAgo: `${8 + (i % 5)} days` }));
    }
    const ids = devices.map((d) => d.id);
    const [a, b] = await Promise.all([archiveAll(workerA, 'worker-a', 10), archiveAll(workerB, 'worker-b', 10)]);
    const mine = (list: string[]) => list.filter((id) => ids.includes(id));
    expect(mine(a).filter((id) => b.includes(id))).toEqual([]);
    expect([...mine(a), ...mine(b)].sort()).toEqual([...ids].sort());

    const [counts] = await ctx.sql<{ audits: number; audited: number; events: number; announced: number }[]>`
      select (select count(*)::int from audit_events
               where organization_id = ${org.id} and action = 'device.archive') as audits,
             (select count(distinct target_id)::int from audit_events
               where organization_id = ${org.id} and action = 'device.archive') as audited,
             (select count(*)::int from webhook_events
               where organization_id = ${org.id} and type = 'device.archived') as events,
             (select count(distinct data ->> 'device_id')::int from webhook_events
               where organization_id = ${org.id} and type = 'device.archived') as announced`;
    expect(counts).toEqual({ audits: 120, audited: 120, events: 120, announced: 120 });
    const [left] = await ctx.sql<{ n: number }[]>`
      select count(*)::int as n from devices where organization_id = ${org.id} and archived_at is null`;
    expect(left!.n).toBe(0);
  });

  it('an admin archive stays as it was: device.archived without a reason', async () => {
    const org = await subscribedOrganization();
    const device = await bootstrappedDevice(org.id, { issuedAgo: '1 day', checkinAgo: '1 minute' });
    // After a stale archive in this session, the reason must not leak into the next archive.
    await archiveAll(ctx.sql, 'test');
    const res = await ctx.request('POST', `/api/v1/devices/${device.id}/archive`);
    expect(res.status).toBe(200);
    const [event] = await eventsOf('device.archived', device.id);
    expect(event!.data).not.toHaveProperty('reason');
  });
});
