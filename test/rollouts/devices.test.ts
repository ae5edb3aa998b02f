/**
 * `GET /rollouts/{id}/devices` (CONTRACT §26): the rollout's devices with their ring,
 * convergence (null in a ring not opened yet), last report and staleness; filtered by ring
 * and by convergence, keyset-paged (a cursor walk meets each device once), tenant-checked,
 * and bad queries refused. The Rollout object's `waiting_for` over HTTP beside it.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../support/access.ts';
import { type EnrolledAgent, enrollAgent } from '../support/agent.ts';
import { type TestResponse, useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { insertRollout, reportOutcome } from './judge_support.ts';

const ctx = useTestApp();
const MERKMAL = 'libreoffice'; // absent by default: selecting it changes every device

const ok = <T extends TestResponse>(res: T, status = 200): T => {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  return res;
};

interface Item {
  device_id: string;
  serial_number: string;
  hostname: string | null;
  ring: number;
  convergence: string | null;
  reported: { event: string; at: string; detail: unknown } | null;
  stale: boolean;
}

let organizationId: string;
let agents: EnrolledAgent[];
let serials: Map<string, string>;
let rolloutId: string;

/**
 * Seven devices: ring 0 (open) holds 0–3, ring 1 (closed) 4–6. In ring 0: 0 converged,
 * 1 failed, 2 pending, 3 stale (its last report an old `applied`, before it went silent).
 */
beforeAll(async () => {
  const org = (await createOrganization(ctx)) as { id: string; default_oe_id: string };
  organizationId = org.id;
  agents = [];
  for (let i = 0; i < 7; i++) {
    agents.push(await enrollAgent(ctx, { organizationId, serial: `RD-${i}-${crypto.randomUUID().slice(0, 4)}` }));
  }
  const rows = await ctx.sql<{ id: string; serial: string }[]>`
    select id, serial from devices where organization_id = ${organizationId}`;
  serials = new Map(rows.map((r) => [r.id, r.serial]));
  rolloutId = await insertRollout(ctx.sql, {
    organizationId,
    scope: 'org_unit',
    scopeId: org.default_oe_id,
    merkmal: MERKMAL,
    action: 'select',
    rings: [50, 100],
    soakSeconds: 3600,
    placement: new Map(agents.map((a, i) => [a.device_id, i < 4 ? 0 : 1] as const)),
  });
  await reportOutcome(ctx, agents[0]!.secret, MERKMAL, 'applied');
  await reportOutcome(ctx, agents[1]!.secret, MERKMAL, 'apply_failed');
  await reportOutcome(ctx, agents[3]!.secret, MERKMAL, 'applied');
  await ctx.sql`update devices set agent_secret_issued_at = now() - interval '1 day' where id = ${agents[3]!.device_id}`;
  await ctx.sql`update device_heartbeats set at = null where device_id = ${agents[3]!.device_id}`;
});

const list = (query = '', token?: string | null, id = rolloutId) =>
  ctx.request('GET', `/api/v1/rollouts/${id}/devices${query}`, { token });

const ids = (items: Item[]) => items.map((i) => i.device_id);
const agentIds = (...indexes: number[]) => indexes.map((i) => agents[i]!.device_id);
/** Devices in the list's order: by ring, then serial. */
const ordered = (devices: string[]) =>
  [...devices].sort((a, b) => {
    const ring = (d: string) => (agentIds(4, 5, 6).includes(d) ? 1 : 0);
    return ring(a) - ring(b) || (serials.get(a)! < serials.get(b)! ? -1 : 1);
  });

describe('GET /rollouts/{id}/devices', () => {
  it('lists every device with its ring, convergence, last report and staleness, by ring and serial', async () => {
    const res = ok(await list());
    const items = res.body.items as Item[];
    expect(res.body.next_cursor).toBeNull();
    expect(ids(items)).toEqual(ordered(agentIds(0, 1, 2, 3, 4, 5, 6)));
    const byDevice = new Map(items.map((i) => [i.device_id, i]));
    expect(byDevice.get(agents[0]!.device_id)).toEqual({
      device_id: agents[0]!.device_id,
      serial_number: serials.get(agents[0]!.device_id),
      hostname: null,
      ring: 0,
      convergence: 'converged',
      reported: { event: 'applied', at: expect.stringMatching(/Z$/), detail: 'applied by the test' },
      stale: false,
    });
    expect(byDevice.get(agents[1]!.device_id)).toMatchObject({
      convergence: 'failed',
      reported: { event: 'apply_failed' },
      stale: false,
    });
    expect(byDevice.get(agents[2]!.device_id)).toMatchObject({ convergence: 'pending', reported: null, stale: false });
    expect(byDevice.get(agents[3]!.device_id)).toMatchObject({ ring: 0, convergence: 'converged', stale: true });
    // Ring 1 is not opened yet: no convergence.
    for (const i of [4, 5, 6]) {
      expect(byDevice.get(agents[i]!.device_id)).toMatchObject({ ring: 1, convergence: null, reported: null });
    }
  });

  it('filters by ring and by convergence, as the ring figures count (stale devices listed, marked)', async () => {
    expect(ids(ok(await list('?ring=0')).body.items)).toEqual(ordered(agentIds(0, 1, 2, 3)));
    expect(ids(ok(await list('?ring=1')).body.items)).toEqual(ordered(agentIds(4, 5, 6)));
    expect(ids(ok(await list('?ring=0&convergence=failed')).body.items)).toEqual(agentIds(1));
    expect(ids(ok(await list('?convergence=pending')).body.items)).toEqual(agentIds(2));
    expect(ids(ok(await list('?ring=0&convergence=converged')).body.items)).toEqual(ordered(agentIds(0, 3)));
    expect(ok(await list('?ring=1&convergence=pending')).body.items).toEqual([]);

    const rollout = ok(await ctx.request('GET', `/api/v1/rollouts/${rolloutId}`)).body;
    // The figures count the live devices only: the stale one is not among the converged.
    expect(rollout.rings_detail[0]).toMatchObject({ devices: 4, converged: 1, pending: 1, failed: 1 });
    // And what ring 0 waits for: its soak, with 2 of the 3 reports it takes (max(min(5, 3), ⌈0.9 × 3⌉)).
    expect(rollout.rings_detail.map((r: { waiting_for: unknown }) => r.waiting_for)).toEqual([
      { reason: 'soak', until: expect.stringMatching(/Z$/), reported: 2, needed: 3 },
      null,
    ]);
  });

  it('pages with a cursor: a walk of any page size meets each device once, in order', async () => {
    for (const [limit, filter] of [
      [1, ''],
      [2, ''],
      [3, ''],
      [1, '&ring=0'],
      [1, '&convergence=converged'],
    ] as const) {
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const query: string = `?limit=${limit}${filter}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
        const res = ok(await list(query));
        expect(res.body.items.length).toBeLessThanOrEqual(limit);
        seen.push(...ids(res.body.items));
        cursor = res.body.next_cursor;
        pages++;
        expect(pages, 'the walk ends').toBeLessThan(20);
      } while (cursor !== null);
      const all = ids(ok(await list(`?limit=500${filter}`)).body.items);
      expect(seen, `limit ${limit}${filter}`).toEqual(all);
      expect(new Set(seen).size).toBe(seen.length);
    }
  });

  it('is readable with a viewer key and an admin key of the organization and the operator token', async () => {
    const viewer = await createApiKey(ctx, organizationId, 'viewer');
    const admin = await createApiKey(ctx, organizationId, 'admin');
    for (const token of [viewer.key, admin.key, undefined]) {
      expect(ids(ok(await list('?ring=0', token)).body.items)).toHaveLength(4);
    }
  });

  it("answers 404 for another organization's rollout and an unknown one, 401 without a credential", async () => {
    const other = await createOrganization(ctx);
    const foreignKey = await createApiKey(ctx, other.id, 'admin');
    const foreign = await list('', foreignKey.key);
    expect(foreign.status).toBe(404);
    expect(foreign.body.error).toBe('not_found');
    const unknown = await list('', undefined, crypto.randomUUID());
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toBe('not_found');
    expect((await list('', undefined, 'not-a-uuid')).status).toBe(404);
    const anonymous = await list('', null);
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.error).toBe('unauthorized');
  });

  it('refuses a bad query with 400 invalid_request', async () => {
    for (const query of [
      '?ring=x',
      '?ring=-1',
      '?ring=1.0',
      '?ring=10',
      '?ring=2', // the rollout has rings 0 and 1
      '?convergence=converging',
      '?limit=0',
      '?limit=501',
      '?cursor=bm90IGEgY3Vyc29y',
      `?cursor=${Buffer.from(JSON.stringify([0, 'X', 'not-a-uuid'])).toString('base64url')}`,
      `?cursor=${Buffer.from(JSON.stringify(['2026-11-28T09:00:00.000Z', crypto.randomUUID()])).toString('base64url')}`,
      '?status=stale',
    ]) {
      const res = await list(query);
      expect(res.status, query).toBe(400);
      expect(res.body.error, query).toBe('invalid_request');
    }
  });
});
