import { Buffer } from 'node:buffer';
import { describe, expect, it } from 'vitest';
import { activateDevice, resolveDevice } from '../support/activation.ts';
import { useTestApp } from '../support/app.ts';
import { bootstrapAgent, checkin, enrollAgent, report } from '../support/agent.ts';
import { createOrganization } from '../support/builders.ts';

const ctx = useTestApp();

const deviceKeys = [
  'id',
  'organization_id',
  'serial',
  'hostname',
  'oe_id',
  'group_ids',
  'template_id',
  'backend',
  'enrollment_session_id',
  'deprovisioned_at',
  'archived_at',
  'agent_secret_issued_at',
  'agent_last_checkin',
  'agent_version',
  'created_at',
  'status',
  'convergence',
].sort();

function post(deviceId: string, action: 'deprovision' | 'reprovision' | 'archive', token?: string | null) {
  return ctx.request('POST', `/api/v1/devices/${deviceId}/${action}`, { token });
}

async function listedIds(organizationId: string): Promise<string[]> {
  const res = await ctx.request('GET', `/api/v1/organizations/${organizationId}/devices?limit=500`);
  expect(res.status).toBe(200);
  return res.body.items.map((d: { id: string }) => d.id);
}

describe('POST /api/v1/devices/{id}/deprovision', () => {
  it('sets deprovisioned_at, keeps the device in lists and answers the Device', async () => {
    const agent = await enrollAgent(ctx);
    const res = await post(agent.device_id, 'deprovision');
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(deviceKeys);
    expect(res.body.id).toBe(agent.device_id);
    expect(res.body.deprovisioned_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(res.body.archived_at).toBeNull();
    // The secret stays (the agent must be told 403, not 401) but is never shown.
    expect(res.body.agent_secret_issued_at).not.toBeNull();
    expect(JSON.stringify(res.body)).not.toContain(agent.secret);
    expect(await listedIds(agent.organization_id)).toContain(agent.device_id);
    expect((await checkin(ctx, agent.secret)).body.error).toBe('device_deprovisioned');
  });

  it('is idempotent: a second call keeps the first timestamp', async () => {
    const agent = await enrollAgent(ctx);
    const first = await post(agent.device_id, 'deprovision');
    await new Promise((r) => setTimeout(r, 5));
    const second = await post(agent.device_id, 'deprovision');
    expect(second.status).toBe(200);
    expect(second.body.deprovisioned_at).toBe(first.body.deprovisioned_at);
  });

  it('answers 409 device_archived for an archived device (deprovisioned or not), changes and audits nothing; its agent keeps 403', async () => {
    for (const deprovisionedFirst of [false, true]) {
      const agent = await enrollAgent(ctx);
      if (deprovisionedFirst) await post(agent.device_id, 'deprovision');
      const archived = await post(agent.device_id, 'archive');
      const [audits] = await ctx.sql`select count(*)::int as n from audit_events where target_id = ${agent.device_id}`;
      const res = await post(agent.device_id, 'deprovision');
      expect(res.status).toBe(409);
      expect(res.body).toEqual({
        error: 'device_archived',
        message: `device ${agent.device_id} is archived: it cannot be deprovisioned`,
      });
      expect((await ctx.request('GET', `/api/v1/devices/${agent.device_id}`)).body).toEqual(archived.body);
      const [after] = await ctx.sql`select count(*)::int as n from audit_events where target_id = ${agent.device_id}`;
      expect(after!.n).toBe(audits!.n);
      const refused = await checkin(ctx, agent.secret);
      expect(refused.status).toBe(403);
      expect(refused.body.error).toBe('device_archived');
    }
  });

  it('an unknown device is 404', async () => {
    const res = await post(crypto.randomUUID(), 'deprovision');
    expect(res.status).toBe(404);
    expect(res.body.error).toBe('not_found');
  });
});

describe('POST /api/v1/devices/{id}/reprovision', () => {
  it('clears deprovisioned_at and the agent secret: the old secret stops working', async () => {
    const agent = await enrollAgent(ctx);
    await post(agent.device_id, 'deprovision');
    const res = await post(agent.device_id, 'reprovision');
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(deviceKeys);
    expect(res.body.deprovisioned_at).toBeNull();
    expect(res.body.agent_secret_issued_at).toBeNull();
    const [row] = await ctx.sql`select agent_secret_hash from devices where id = ${agent.device_id}`;
    expect(row!.agent_secret_hash).toBeNull();
    const old = await checkin(ctx, agent.secret);
    expect(old.status).toBe(401);
    expect(old.body.error).toBe('invalid_agent_secret');
  });

  it('works on a device that was never deprovisioned (how an admin lets a managed device bootstrap again)', async () => {
    const agent = await enrollAgent(ctx);
    const res = await post(agent.device_id, 'reprovision');
    expect(res.status).toBe(200);
    expect(res.body.agent_secret_issued_at).toBeNull();
    const blueprint = await resolveDevice(ctx, { code: agent.code, device_id: agent.device_id });
    const secret = await bootstrapAgent(ctx, blueprint.agent);
    expect((await checkin(ctx, secret)).status).toBe(200);
  });

  it('answers 409 device_archived for an archived device and changes nothing', async () => {
    const agent = await enrollAgent(ctx);
    await post(agent.device_id, 'deprovision');
    const archived = await post(agent.device_id, 'archive');
    const res = await post(agent.device_id, 'reprovision');
    expect(res.status).toBe(409);
    expect(res.body.error).toBe('device_archived');
    const device = await ctx.request('GET', `/api/v1/devices/${agent.device_id}`);
    expect(device.body).toEqual(archived.body);
  });
});

describe('POST /api/v1/devices/{id}/archive', () => {
  it('sets archived_at, drops the device from lists but not from GET, and frees its serial', async () => {
    const org = await createOrganization(ctx);
    const serial = `ARCH-${crypto.randomUUID().slice(0, 8)}`;
    const agent = await enrollAgent(ctx, { organizationId: org.id, serial });
    const res = await post(agent.device_id, 'archive');
    expect(res.status).toBe(200);
    expect(res.body.archived_at).not.toBeNull();
    expect(await listedIds(org.id)).not.toContain(agent.device_id);
    const device = await ctx.request('GET', `/api/v1/devices/${agent.device_id}`);
    expect(device.status).toBe(200);
    expect(device.body).toEqual(res.body);
    expect((await checkin(ctx, agent.secret)).body.error).toBe('device_archived');

    // The same serial activates as a new device.
    const again = await activateDevice(ctx, org.id, serial);
    expect(again.device_id).not.toBe(agent.device_id);
  });

  it('is idempotent: a second call keeps the first timestamp', async () => {
    const agent = await enrollAgent(ctx);
    const first = await post(agent.device_id, 'archive');
    await new Promise((r) => setTimeout(r, 5));
    const second = await post(agent.device_id, 'archive');
    expect(second.status).toBe(200);
    expect(second.body.archived_at).toBe(first.body.archived_at);
  });
});

describe('GET /api/v1/devices/{id}/hardware', () => {
  it('answers nulls before any report, then the last reported object', async () => {
    const agent = await enrollAgent(ctx);
    const none = await ctx.request('GET', `/api/v1/devices/${agent.device_id}/hardware`);
    expect(none.status).toBe(200);
    expect(none.body).toEqual({ device_id: agent.device_id, hardware: null, reported_at: null });

    await checkin(ctx, agent.secret, { hardware: { cpu: 'i5', memory_mb: 8192 } });
    const some = await ctx.request('GET', `/api/v1/devices/${agent.device_id}/hardware`);
    expect(some.body.hardware).toEqual({ cpu: 'i5', memory_mb: 8192 });
    expect(some.body.reported_at).toMatch(/Z$/);
  });
});

describe('GET /api/v1/devices/{id}/events', () => {
  type Event = {
    id: string;
    merkmal: string;
    type: string;
    payload: { n?: number; detail?: unknown };
    created_at: string;
  };

  async function seedEvents(deviceId: string, count: number) {
    // Older events, one second apart, written oldest first as they would have happened.
    const base = Date.parse('2026-11-01T00:00:00.000Z');
    for (let i = 0; i < count; i++) {
      await ctx.sql`
        insert into device_merkmal_events (device_id, merkmal, type, payload, created_at)
        values (${deviceId}, 'firefox', ${i % 2 ? 'applied' : 'selected'}, ${ctx.sql.json({ n: i })}, ${new Date(base + i * 1000)})`;
    }
  }

  async function allEvents(deviceId: string): Promise<Event[]> {
    const res = await ctx.request('GET', `/api/v1/devices/${deviceId}/events?limit=500`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.items;
  }

  it('lists the events newest first with the contract fields', async () => {
    const agent = await enrollAgent(ctx);
    await seedEvents(agent.device_id, 3);
    await report(ctx, agent.secret, [{ merkmal: 'libreoffice', event: 'apply_failed', detail: 'exit 2' }]);
    const res = await ctx.request('GET', `/api/v1/devices/${agent.device_id}/events`);
    expect(res.status).toBe(200);
    expect(res.body.next_cursor).toBeNull();
    expect(res.body.items).toHaveLength(4);
    expect(Object.keys(res.body.items[0]).sort()).toEqual([
      'created_at',
      'device_id',
      'id',
      'merkmal',
      'payload',
      'type',
    ]);
    expect(res.body.items[0]).toMatchObject({
      device_id: agent.device_id,
      merkmal: 'libreoffice',
      type: 'apply_failed',
      payload: { detail: 'exit 2' },
    });
    expect(res.body.items.slice(1).map((e: Event) => e.payload.n)).toEqual([2, 1, 0]);
    const times = res.body.items.map((e: Event) => Date.parse(e.created_at));
    expect([...times].sort((a, b) => b - a)).toEqual(times);
  });

  it('lists the entries of one report in exact reverse entry order (the last entry is the newest), every time', async () => {
    const agent = await enrollAgent(ctx);
    const merkmale = ['firefox', 'libreoffice', 'onlyoffice', 'qgis', 'gastsitzung'];
    for (let round = 0; round < 20; round++) {
      // All five share one created_at millisecond: only the write order can order them.
      const res = await report(
        ctx,
        agent.secret,
        merkmale.map((merkmal, i) => ({ merkmal, event: 'applied', detail: { round, entry: i } })),
      );
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      const page = await ctx.request('GET', `/api/v1/devices/${agent.device_id}/events?limit=5`);
      expect(page.body.items.map((e: Event) => e.payload.detail)).toEqual(
        [4, 3, 2, 1, 0].map((entry) => ({ round, entry })),
      );
      expect(page.body.items.map((e: Event) => e.merkmal)).toEqual([...merkmale].reverse());
    }
  });

  it('orders a selection and a report right after it by when they were written', async () => {
    const agent = await enrollAgent(ctx);
    for (let round = 0; round < 10; round++) {
      const selected = await ctx.request('POST', `/api/v1/devices/${agent.device_id}/catalog/libreoffice/select`, {
        body: { optionen: { round } },
      });
      expect(selected.status).toBe(200);
      await report(ctx, agent.secret, [
        { merkmal: 'libreoffice', event: 'applied', detail: round },
        { merkmal: 'qgis', event: 'removed', detail: round },
      ]);
      const newest = (await allEvents(agent.device_id)).slice(0, 3);
      expect(newest.map((e) => [e.merkmal, e.type])).toEqual([
        ['qgis', 'removed'],
        ['libreoffice', 'applied'],
        ['libreoffice', 'selected'],
      ]);
    }
  });

  it('pages through every event exactly once, newest first, with limit=2', async () => {
    const agent = await enrollAgent(ctx);
    await seedEvents(agent.device_id, 7);
    // Five more with one shared timestamp, as one report writes them.
    await report(
      ctx,
      agent.secret,
      Array.from({ length: 5 }, (_, i) => ({ merkmal: 'qgis', event: 'removed', detail: i })),
    );
    const expected: Array<Record<string, number>> = [
      ...[4, 3, 2, 1, 0].map((detail) => ({ detail })),
      ...[6, 5, 4, 3, 2, 1, 0].map((n) => ({ n })),
    ];
    const seen: Event[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: any = await ctx.request(
        'GET',
        `/api/v1/devices/${agent.device_id}/events?limit=2${cursor ? `&cursor=${cursor}` : ''}`,
      );
      expect(page.status).toBe(200);
      expect(page.body.items.length).toBeLessThanOrEqual(2);
      seen.push(...page.body.items);
      cursor = page.body.next_cursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(6);
    expect(seen.map((e) => e.payload)).toEqual(expected);
    expect(seen.map((e) => e.id)).toEqual((await allEvents(agent.device_id)).map((e) => e.id));
    expect(new Set(seen.map((e) => e.id)).size).toBe(12);
  });

  it('takes no cursor but its own: forged, out-of-range and old-style cursors are 400', async () => {
    const agent = await enrollAgent(ctx);
    await report(ctx, agent.secret, [
      { merkmal: 'firefox', event: 'applied' },
      { merkmal: 'qgis', event: 'applied' },
    ]);
    const first = await ctx.request('GET', `/api/v1/devices/${agent.device_id}/events?limit=1`);
    expect(first.body.next_cursor).toEqual(expect.any(String));
    const b64 = (text: string) => Buffer.from(text).toString('base64url');
    // The real cursor's text with its number replaced: everything but a positive safe integer.
    const own = Buffer.from(first.body.next_cursor, 'base64url').toString('utf8');
    expect(own).toMatch(/\d+$/);
    const withNumber = (n: string) => b64(own.replace(/\d+$/, n));
    for (const cursor of [
      b64(JSON.stringify(['2026-01-01T00:00:00.000Z', crypto.randomUUID()])), // the (created_at, id) keyset of other lists
      ...['0', '-1', '1.5', '1e3', '01', ' 1', '1 ', '9007199254740993', '99999999999999999999', 'abc', ''].map(
        withNumber,
      ),
      `${first.body.next_cursor}x`,
      first.body.next_cursor.slice(1),
      '!!!',
    ]) {
      const res = await ctx.request(
        'GET',
        `/api/v1/devices/${agent.device_id}/events?cursor=${encodeURIComponent(cursor)}`,
      );
      expect(res.status, `${cursor}: ${JSON.stringify(res.body)}`).toBe(400);
      expect(res.body.error).toBe('invalid_request');
    }
  });

  it("shows only the device's own events, and an empty page for a device without any", async () => {
    const a = await enrollAgent(ctx);
    const b = await enrollAgent(ctx, { organizationId: a.organization_id });
    await report(ctx, a.secret, [{ merkmal: 'firefox', event: 'applied' }]);
    const res = await ctx.request('GET', `/api/v1/devices/${b.device_id}/events`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ items: [], next_cursor: null });
  });

  it.each(['limit=0', 'limit=501', 'cursor=forged'])('rejects %s with 400', async (query) => {
    const agent = await enrollAgent(ctx);
    const res = await ctx.request('GET', `/api/v1/devices/${agent.device_id}/events?${query}`);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request');
  });
});

describe('unknown devices and authentication', () => {
  const endpoints: Array<[string, (id: string) => string]> = [
    ['POST', (id) => `/api/v1/devices/${id}/deprovision`],
    ['POST', (id) => `/api/v1/devices/${id}/reprovision`],
    ['POST', (id) => `/api/v1/devices/${id}/archive`],
    ['GET', (id) => `/api/v1/devices/${id}/hardware`],
    ['GET', (id) => `/api/v1/devices/${id}/events`],
  ];

  it.each(endpoints)('%s %s answers 404 not_found for an unknown id and a non-UUID id', async (method, path) => {
    for (const id of [crypto.randomUUID(), 'not-a-uuid']) {
      const res = await ctx.request(method, path(id));
      expect(res.status).toBe(404);
      expect(res.body.error).toBe('not_found');
    }
  });

  it.each(endpoints)(
    '%s %s answers 401 unauthorized without the admin token and changes nothing',
    async (method, path) => {
      const agent = await enrollAgent(ctx);
      const [before] =
        await ctx.sql`select deprovisioned_at, archived_at, agent_secret_hash from devices where id = ${agent.device_id}`;
      for (const token of [null, 'wrong-token', agent.secret]) {
        const res = await ctx.request(method, path(agent.device_id), { token });
        expect(res.status).toBe(401);
        expect(res.body.error).toBe('unauthorized');
      }
      const [after] =
        await ctx.sql`select deprovisioned_at, archived_at, agent_secret_hash from devices where id = ${agent.device_id}`;
      expect(after).toEqual(before);
    },
  );
});
