/**
 * The device list's status and convergence filters and its orders: each order paged
 * through shows every device exactly once, in the order; a cursor continues only its own.
 */
import { describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';
import { enrollAgent, report } from '../support/agent.ts';
import { createOrganization } from '../support/builders.ts';
import { insertDevice } from '../support/devices.ts';

// Poll interval 300 s (testConfig): stale after 15 minutes without a check-in.
const ctx = useTestApp();

interface Listed {
  id: string;
  serial: string;
  status: string;
  convergence: string | null;
  agent_last_checkin: string | null;
  created_at: string;
}

async function pages(orgId: string, query: string, limit: number): Promise<Listed[]> {
  const seen: Listed[] = [];
  let cursor: string | null = null;
  do {
    const res: { status: number; body: any } = await ctx.request(
      'GET',
      `/api/v1/organizations/${orgId}/devices?${query}&limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`,
    );
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.items.length).toBeLessThanOrEqual(limit);
    seen.push(...res.body.items);
    cursor = res.body.next_cursor;
  } while (cursor !== null);
  return seen;
}

/** An organization of devices with distinct and equal check-in times, and some that never checked in. */
async function fleet() {
  const org = await createOrganization(ctx);
  const serials = ['M-07', 'A-02', 'Z-11', 'C-05', 'B-09', 'K-01', 'D-03', 'X-04', 'E-08'];
  const ids: string[] = [];
  for (const [i, serial] of serials.entries()) {
    const d = await insertDevice(ctx.sql, { organizationId: org.id, serial });
    ids.push(d.id);
    if (i % 3 === 2) continue; // never checked in
    await ctx.sql`update devices set agent_secret_issued_at = now() - interval '2 days',
      agent_secret_hash = sha256(${d.id}::text::bytea) where id = ${d.id}`;
    // Three share one check-in time (to the microsecond), the others differ.
    const minutes = i < 4 ? 5 : 10 + i;
    await ctx.sql`update device_heartbeats
      set at = date_trunc('minute', now()) - make_interval(mins => ${minutes}) + interval '0.123456 seconds'
      where device_id = ${d.id}`;
  }
  return { orgId: org.id, ids };
}

const time = (t: string | null) => (t === null ? Number.NEGATIVE_INFINITY : Date.parse(t));

describe('GET /api/v1/organizations/{id}/devices?sort=', () => {
  it.each([
    ['serial', (a: Listed, b: Listed) => (a.serial < b.serial ? -1 : 1)],
    [
      'last_checkin',
      (a: Listed, b: Listed) => time(a.agent_last_checkin) - time(b.agent_last_checkin) || (a.id < b.id ? -1 : 1),
    ],
    [
      '-last_checkin',
      (a: Listed, b: Listed) => time(b.agent_last_checkin) - time(a.agent_last_checkin) || (a.id < b.id ? 1 : -1),
    ],
    [
      'created_at',
      (a: Listed, b: Listed) => Date.parse(a.created_at) - Date.parse(b.created_at) || (a.id < b.id ? -1 : 1),
    ],
    [
      '-created_at',
      (a: Listed, b: Listed) => Date.parse(b.created_at) - Date.parse(a.created_at) || (a.id < b.id ? 1 : -1),
    ],
  ])('%s: every device exactly once, in the order, at every page size', async (sort, compare) => {
    const { orgId, ids } = await fleet();
    const whole = await pages(orgId, `sort=${sort}`, 500);
    expect(whole.map((d) => d.id).sort()).toEqual([...ids].sort());
    expect(whole).toEqual([...whole].sort(compare));
    for (const limit of [1, 2, 4]) {
      expect(
        (await pages(orgId, `sort=${sort}`, limit)).map((d) => d.id),
        `limit ${limit}`,
      ).toEqual(whole.map((d) => d.id));
    }
  });

  it('serial is the default order', async () => {
    const { orgId } = await fleet();
    const serials = (await pages(orgId, '', 4)).map((d) => d.serial);
    expect(serials).toEqual([...serials].sort());
  });

  it('a cursor of another order, or a forged one, is 400; an unknown order is 400', async () => {
    const { orgId } = await fleet();
    const first = await ctx.request('GET', `/api/v1/organizations/${orgId}/devices?sort=-last_checkin&limit=2`);
    const cursor = first.body.next_cursor as string;
    const forged = [
      Buffer.from(JSON.stringify(['-last_checkin', '2026-02-31T00:00:00.000000Z', crypto.randomUUID()])).toString(
        'base64url',
      ),
      Buffer.from(JSON.stringify(['serial', 'A\u0000', crypto.randomUUID()])).toString('base64url'),
      Buffer.from(JSON.stringify(['created_at', null, crypto.randomUUID()])).toString('base64url'),
      'not-a-cursor',
    ];
    for (const [sort, c] of [
      ['serial', cursor],
      ['last_checkin', cursor],
      ['-last_checkin', forged[0]],
      ['serial', forged[1]],
      ['created_at', forged[2]],
      ['serial', forged[3]],
    ]) {
      const res = await ctx.request('GET', `/api/v1/organizations/${orgId}/devices?sort=${sort}&cursor=${c}`);
      expect(res.status, `${sort} ${c}`).toBe(400);
      expect(res.body.error).toBe('invalid_request');
    }
    const bad = await ctx.request('GET', `/api/v1/organizations/${orgId}/devices?sort=hostname`);
    expect(bad.status).toBe(400);
  });
});

describe('GET /api/v1/organizations/{id}/devices?sort=-last_checkin among the latest heartbeats', () => {
  it("another organization's check-ins in between, deprovisioned and archived devices, ties and never checked in: the order of the whole", async () => {
    // This organization's check-ins are the latest of the database (ahead of the clock, as
    // another host's may be), so its pages are found among the latest heartbeats; another
    // organization's check-ins fall between them, and filtered devices among them.
    const mine = await createOrganization(ctx);
    const theirs = await createOrganization(ctx);
    const ids: string[] = [];
    for (let i = 0; i < 14; i++) {
      const org = i % 3 === 1 ? theirs : mine;
      const d = await insertDevice(ctx.sql, {
        organizationId: org.id,
        serial: `LH-${String(i).padStart(2, '0')}`,
        deprovisioned: i === 4,
      });
      if (org === mine) ids.push(d.id);
      if (i === 13) continue; // never checked in
      await ctx.sql`update devices set agent_secret_issued_at = now() - interval '2 days',
        agent_secret_hash = sha256(${d.id}::text::bytea), archived_at = ${i === 6 ? new Date() : null} where id = ${d.id}`;
      // Two share a time to the microsecond.
      const seconds = i === 3 ? 2 : i;
      await ctx.sql`update device_heartbeats
        set at = date_trunc('second', now()) + interval '1 hour' - make_interval(secs => ${seconds}) + interval '0.5 ms'
        where device_id = ${d.id}`;
    }
    const listed = await ctx.sql<{ id: string; at: Date | null; status: string }[]>`
      select d.id, h.at, case when d.deprovisioned_at is not null then 'deprovisioned'
                              when d.agent_secret_issued_at is null then 'enrolled' else 'active' end as status
      from devices d left join device_heartbeats h on h.device_id = d.id
      where d.organization_id = ${mine.id} and d.archived_at is null`;
    const expected = listed
      .sort((a, b) => (b.at?.getTime() ?? -1) - (a.at?.getTime() ?? -1) || (a.id < b.id ? 1 : -1))
      .map((d) => ({ id: d.id, status: d.status }));
    expect(expected).toHaveLength(ids.length - 1); // the archived one is not listed
    for (const limit of [1, 2, 4, 500]) {
      expect(
        (await pages(mine.id, 'sort=-last_checkin', limit)).map((d) => d.id),
        `limit ${limit}`,
      ).toEqual(expected.map((d) => d.id));
      expect(
        (await pages(mine.id, 'status=active&sort=-last_checkin', limit)).map((d) => d.id),
        `limit ${limit}`,
      ).toEqual(expected.filter((d) => d.status === 'active').map((d) => d.id));
    }
  });
});

describe('GET /api/v1/organizations/{id}/devices: status and convergence filters', () => {
  it('filter by status, by convergence, and by a Merkmal failed or pending', async () => {
    const org = await createOrganization(ctx);
    const failed = await enrollAgent(ctx, { organizationId: org.id });
    const converged = await enrollAgent(ctx, { organizationId: org.id });
    const pending = await enrollAgent(ctx, { organizationId: org.id });
    const stale = await enrollAgent(ctx, { organizationId: org.id });
    const enrolled = await insertDevice(ctx.sql, { organizationId: org.id });
    const gone = await insertDevice(ctx.sql, { organizationId: org.id, deprovisioned: true });
    await ctx.sql`update devices set agent_secret_issued_at = now() - interval '1 hour' where id = ${stale.device_id}`;

    const catalog = (await ctx.request('GET', `/api/v1/devices/${converged.device_id}/catalog`)).body.items as Array<{
      merkmal: string;
      state: string;
    }>;
    const allDone = catalog.map((i) => ({ merkmal: i.merkmal, event: i.state === 'present' ? 'applied' : 'removed' }));
    for (const agent of [failed, converged, stale]) expect((await report(ctx, agent.secret, allDone)).status).toBe(200);
    expect((await report(ctx, failed.secret, [{ merkmal: 'qgis', event: 'remove_failed' }])).status).toBe(200);
    expect((await report(ctx, pending.secret, [{ merkmal: 'firefox', event: 'apply_failed' }])).status).toBe(200);

    const list = async (query: string) => {
      const items = await pages(org.id, query, 500);
      return items.map((d) => d.id).sort();
    };
    const sorted = (...ids: string[]) => [...ids].sort();
    expect(await list('status=active')).toEqual(sorted(failed.device_id, converged.device_id, pending.device_id));
    expect(await list('status=stale')).toEqual([stale.device_id]);
    expect(await list('status=enrolled')).toEqual([enrolled.id]);
    expect(await list('status=deprovisioned')).toEqual([gone.id]);
    expect(await list('convergence=failed')).toEqual(sorted(failed.device_id, pending.device_id));
    expect(await list('convergence=converged')).toEqual(sorted(converged.device_id, stale.device_id));
    expect(await list('convergence=converged&status=active')).toEqual([converged.device_id]);
    expect(await list('convergence=pending')).toEqual([]);
    expect(await list('merkmal=qgis&convergence=failed')).toEqual([failed.device_id]);
    expect(await list('merkmal=firefox&convergence=failed')).toEqual([pending.device_id]);
    // Everything but firefox never reported on `pending`.
    expect(await list('merkmal=libreoffice&convergence=pending')).toEqual([pending.device_id]);
    // A Merkmal's converged devices too (the overview links that figure as every other).
    expect(await list('merkmal=qgis&convergence=converged')).toEqual(sorted(converged.device_id, stale.device_id));
    expect(await list('merkmal=firefox&convergence=converged')).toEqual(
      sorted(failed.device_id, converged.device_id, stale.device_id),
    );
    // Each listed device carries what it was filtered by.
    for (const d of await pages(org.id, 'convergence=failed&sort=-last_checkin', 1)) {
      expect(d.convergence).toBe('failed');
    }
  });

  it.each([
    ['status=archived', 400, 'invalid_request'],
    ['convergence=unknown', 400, 'invalid_request'],
    ['merkmal=qgis', 400, 'invalid_request'],
    ['merkmal=no-such-merkmal&convergence=failed', 422, 'unknown_merkmal'],
  ])('%s is %i %s', async (query, status, error) => {
    const org = await createOrganization(ctx);
    const res = await ctx.request('GET', `/api/v1/organizations/${org.id}/devices?${query}`);
    expect(res.status).toBe(status);
    expect(res.body.error).toBe(error);
  });
});

describe('GET /api/v1/organizations/{id}/devices: prev_cursor', () => {
  /**
   * 250 devices: created in bunches sharing one time (ties by id), check-in times with ties
   * and a fifth that never checked in, serials out of creation order.
   */
  async function wideFleet(): Promise<{ orgId: string; ids: string[] }> {
    const org = await createOrganization(ctx);
    const rows = await ctx.sql<{ id: string }[]>`
      insert into devices (organization_id, serial, oe_id, agent_secret_hash, agent_secret_issued_at, created_at)
      select ${org.id}, format('W-%s', lpad(((n * 37) % 250)::text, 3, '0')),
             (select id from org_units where organization_id = ${org.id} and protected),
             sha256(convert_to(${org.id}::text || n::text, 'UTF8')), now() - interval '2 days',
             date_trunc('second', now()) - make_interval(secs => n / 3)
      from generate_series(1, 250) n
      returning id`;
    await ctx.sql`
      update device_heartbeats h
         set at = case when d.serial like '%0' or d.serial like '%5' then null
                       else date_trunc('minute', now()) - make_interval(mins => (abs(hashtext(d.id::text)) % 40))
                            + interval '0.123456 seconds' end
        from devices d where d.id = h.device_id and d.organization_id = ${org.id}`;
    return { orgId: org.id, ids: rows.map((r) => r.id) };
  }

  interface Page {
    items: Listed[];
    next_cursor: string | null;
    prev_cursor: string | null;
  }

  async function page(orgId: string, sort: string, limit: number, cursor: string | null): Promise<Page> {
    const res = await ctx.request(
      'GET',
      `/api/v1/organizations/${orgId}/devices?sort=${sort}&limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`,
    );
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body as Page;
  }

  it.each(['serial', 'last_checkin', '-last_checkin', 'created_at', '-created_at'])(
    '%s: forward then back through 250 devices visits each exactly once in each direction',
    async (sort) => {
      const { orgId, ids } = await wideFleet();
      const limit = 30;
      const forward: Page[] = [];
      let current = await page(orgId, sort, limit, null);
      expect(current.prev_cursor).toBeNull();
      forward.push(current);
      while (current.next_cursor !== null) {
        current = await page(orgId, sort, limit, current.next_cursor);
        expect(current.prev_cursor).not.toBeNull();
        forward.push(current);
      }
      const order = forward.flatMap((p) => p.items.map((d) => d.id));
      expect(order).toHaveLength(250);
      expect(new Set(order).size).toBe(250);
      expect([...order].sort()).toEqual([...ids].sort());
      expect(forward.slice(0, -1).every((p) => p.items.length === limit)).toBe(true);

      // Back from the last page: each page equals the one the forward walk showed there.
      const backward: Page[] = [current];
      while (current.prev_cursor !== null) {
        current = await page(orgId, sort, limit, current.prev_cursor);
        expect(current.next_cursor).not.toBeNull();
        backward.unshift(current);
      }
      expect(backward.map((p) => p.items.map((d) => d.id))).toEqual(forward.map((p) => p.items.map((d) => d.id)));
      expect(backward[0]!.prev_cursor).toBeNull();
      // A cursor from the walk back goes forward again the same way.
      const again = await page(orgId, sort, limit, backward[1]!.next_cursor);
      expect(again.items.map((d) => d.id)).toEqual(forward[2]!.items.map((d) => d.id));
    },
  );

  it('back to the start with fewer devices left before the cursor: the first page, whole', async () => {
    const { orgId } = await wideFleet();
    const first = await page(orgId, 'serial', 10, null);
    const second = await page(orgId, 'serial', 10, first.next_cursor);
    // Three of the first page's devices are archived: seven are left before the second page.
    await ctx.sql`update devices set archived_at = now() where id in ${ctx.sql(first.items.slice(0, 3).map((d) => d.id))}`;
    const back = await page(orgId, 'serial', 10, second.prev_cursor);
    expect(back.prev_cursor).toBeNull();
    expect(back.items.map((d) => d.id)).toEqual([
      ...first.items.slice(3).map((d) => d.id),
      ...second.items.slice(0, 3).map((d) => d.id),
    ]);
  });

  it('a forged or garbled cursor, or a prev_cursor of another order, is 400 invalid_request', async () => {
    const { orgId } = await fleet();
    const first = await page(orgId, 'serial', 2, null);
    const second = await page(orgId, 'serial', 2, first.next_cursor);
    const prev = second.prev_cursor!;
    const decoded = JSON.parse(Buffer.from(prev, 'base64url').toString('utf8')) as unknown[];
    expect(decoded[3]).toBe('before');
    const forge = (parts: unknown[]) => Buffer.from(JSON.stringify(parts)).toString('base64url');
    for (const [sort, cursor] of [
      ['-serial', prev],
      ['created_at', prev],
      ['serial', forge([...decoded.slice(0, 3), 'backwards'])],
      ['serial', forge([...decoded, 'more'])],
      ['serial', forge([decoded[0], decoded[1], 'not-a-uuid', 'before'])],
      ['-last_checkin', forge(['-last_checkin', '2026-13-01T00:00:00.000000Z', crypto.randomUUID(), 'before'])],
      ['serial', `${prev.slice(0, -4)}~~~~`],
      ['serial', 'x'.repeat(1001)],
    ]) {
      const res = await ctx.request('GET', `/api/v1/organizations/${orgId}/devices?sort=${sort}&cursor=${cursor}`);
      expect(res.status, `${sort} ${cursor}`).toBe(400);
      expect(res.body.error).toBe('invalid_request');
    }
  });
});
