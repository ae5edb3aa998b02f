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
    await ctx.sql`insert into device_heartbeats (device_id, at)
      values (${d.id}, date_trunc('minute', now()) - make_interval(mins => ${minutes}) + interval '0.123456 seconds')`;
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
    // Each listed device carries what it was filtered by.
    for (const d of await pages(org.id, 'convergence=failed&sort=-last_checkin', 1)) {
      expect(d.convergence).toBe('failed');
    }
  });

  it.each([
    ['status=archived', 400, 'invalid_request'],
    ['convergence=unknown', 400, 'invalid_request'],
    ['merkmal=qgis', 400, 'invalid_request'],
    ['merkmal=qgis&convergence=converged', 400, 'invalid_request'],
    ['merkmal=no-such-merkmal&convergence=failed', 422, 'unknown_merkmal'],
  ])('%s is %i %s', async (query, status, error) => {
    const org = await createOrganization(ctx);
    const res = await ctx.request('GET', `/api/v1/organizations/${org.id}/devices?${query}`);
    expect(res.status).toBe(status);
    expect(res.body.error).toBe(error);
  });
});
