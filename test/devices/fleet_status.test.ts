/**
 * GET /organizations/{id}/fleet-status: its counts equal those the test computes itself from
 * the device reads (each device's status, each catalog item's state and convergence), for
 * the whole organization, an org unit's subtree and a group; the scope's ids checked like
 * every other filter.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../support/access.ts';
import { useTestApp } from '../support/app.ts';
import { enrollAgent, report as postReport } from '../support/agent.ts';
import { createOrganization } from '../support/builders.ts';
import { addToGroup, insertDevice, insertGroup, insertOrgUnit, TEMPLATE_IDS } from '../support/devices.ts';

// Poll interval 300 s (testConfig): stale after 15 minutes without a check-in.
const ctx = useTestApp();

interface Fleet {
  orgId: string;
  top: string;
  child: string;
  grandchild: string;
  other: string;
  group: string;
}

let fleet: Fleet;

async function call(path: string, token?: string) {
  const res = await ctx.request('GET', `/api/v1${path}`, { token });
  expect(res.status, `${path}: ${JSON.stringify(res.body)}`).toBe(200);
  return res.body;
}

/** The counts, computed from what the device list and each device's catalog say. */
async function expectedCounts(orgId: string, include: (d: { oe_id: string; group_ids: string[] }) => boolean) {
  const devices: Array<{ id: string; oe_id: string; group_ids: string[]; status: string }> = [];
  let cursor: string | null = null;
  do {
    const page = await call(`/organizations/${orgId}/devices?limit=3${cursor ? `&cursor=${cursor}` : ''}`);
    devices.push(...page.items);
    cursor = page.next_cursor;
  } while (cursor !== null);
  const inScope = devices.filter(include);
  const byStatus = (s: string) => inScope.filter((d) => d.status === s).length;
  const counts = new Map<string, Record<string, number>>();
  const merkmale: Array<{ key: string; im_auftragskatalog: boolean; blueprints: unknown[] }> = (await call('/merkmale'))
    .items;
  for (const m of merkmale.filter((m) => m.im_auftragskatalog && m.blueprints.length > 0)) {
    counts.set(m.key, { present: 0, absent: 0, converged: 0, pending: 0, failed: 0 });
  }
  for (const d of inScope.filter((d) => d.status === 'active' || d.status === 'stale')) {
    for (const item of (await call(`/devices/${d.id}/catalog`)).items) {
      const c = counts.get(item.merkmal)!;
      c[item.state] = c[item.state]! + 1;
      c[item.convergence] = c[item.convergence]! + 1;
    }
  }
  return {
    devices: {
      total: inScope.length,
      enrolled: byStatus('enrolled'),
      active: byStatus('active'),
      stale: byStatus('stale'),
      deprovisioned: byStatus('deprovisioned'),
    },
    counts,
  };
}

function countsOf(body: { merkmale: Array<Record<string, number | string>> }) {
  return new Map(body.merkmale.map(({ merkmal, name: _name, ...c }) => [merkmal as string, c]));
}

async function report(...args: Parameters<typeof postReport>) {
  const res = await postReport(...args);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

beforeAll(async () => {
  const org = await createOrganization(ctx);
  const top = await insertOrgUnit(ctx.sql, org.id, 'Schule');
  const child = await insertOrgUnit(ctx.sql, org.id, 'Verwaltung', top);
  const grandchild = await insertOrgUnit(ctx.sql, org.id, 'Sekretariat', child);
  const other = await insertOrgUnit(ctx.sql, org.id, 'Bibliothek');
  const group = await insertGroup(ctx.sql, org.id, 'Laptops');
  fleet = { orgId: org.id, top, child, grandchild, other, group };

  const place = async (deviceId: string, oeId: string, inGroup: boolean) => {
    // Before any selection at a unit or group: the move changes no effective state.
    await ctx.sql`update devices set oe_id = ${oeId} where id = ${deviceId}`;
    if (inGroup) await addToGroup(ctx.sql, group, deviceId);
  };
  const agents = [];
  for (const [i, oeId] of [top, child, grandchild, grandchild, other, other, child].entries()) {
    const agent = await enrollAgent(ctx, {
      organizationId: org.id,
      ...(i === 3 ? { templateId: TEMPLATE_IDS.ubuntuStandard } : {}),
    });
    await place(agent.device_id, oeId, i % 2 === 0);
    agents.push(agent);
  }
  // Not active: never bootstrapped, deprovisioned, archived; and one stale since its bootstrap.
  const enrolled = await insertDevice(ctx.sql, { organizationId: org.id, oeId: grandchild });
  await addToGroup(ctx.sql, group, enrolled.id);
  await insertDevice(ctx.sql, { organizationId: org.id, oeId: child, deprovisioned: true });
  await insertDevice(ctx.sql, { organizationId: org.id, oeId: child, archived: true });
  await ctx.sql`update devices set agent_secret_issued_at = now() - interval '1 hour' where id = ${agents[6]!.device_id}`;

  // Changes of state: a unit's selection reaches its subtree, a device's own deselection.
  const select = await ctx.request('POST', `/api/v1/org-units/${child}/catalog/libreoffice/select`, { body: {} });
  expect(select.status).toBe(200);
  const deselect = await ctx.request('POST', `/api/v1/devices/${agents[0]!.device_id}/catalog/firefox/deselect`, {
    body: {},
  });
  expect(deselect.status).toBe(200);
  // Reports: converged, failed, for the other state, and one from before the change.
  await report(ctx, agents[0]!.secret, [{ merkmal: 'firefox', event: 'removed' }]);
  await report(ctx, agents[1]!.secret, [
    { merkmal: 'libreoffice', event: 'apply_failed' },
    { merkmal: 'firefox', event: 'applied' },
  ]);
  await report(ctx, agents[2]!.secret, [{ merkmal: 'libreoffice', event: 'applied' }]);
  await report(ctx, agents[3]!.secret, [
    { merkmal: 'firefox', event: 'applied' },
    { merkmal: 'qgis', event: 'remove_failed' },
  ]);
  await report(ctx, agents[4]!.secret, [{ merkmal: 'firefox', event: 'removed' }]);
  await report(ctx, agents[6]!.secret, [{ merkmal: 'libreoffice', event: 'applied' }]);
});

describe('GET /api/v1/organizations/{id}/fleet-status', () => {
  it.each([
    ['the whole organization', () => '', () => true],
    [
      "an org unit's subtree",
      () => `?oe_id=${fleet.child}`,
      (d: { oe_id: string }) => d.oe_id === fleet.child || d.oe_id === fleet.grandchild,
    ],
    ['a group', () => `?group_id=${fleet.group}`, (d: { group_ids: string[] }) => d.group_ids.includes(fleet.group)],
  ])('over %s: the counts of the device reads', async (_case, query, include) => {
    const body = await call(`/organizations/${fleet.orgId}/fleet-status${query()}`);
    const expected = await expectedCounts(
      fleet.orgId,
      include as (d: { oe_id: string; group_ids: string[] }) => boolean,
    );
    expect(body.devices).toEqual(expected.devices);
    expect(countsOf(body)).toEqual(expected.counts);
    expect(body.merkmale.map((m: { merkmal: string }) => m.merkmal)).toEqual([...expected.counts.keys()].sort());
  });

  it('counts what the setup made: statuses, and the failures where they were reported', async () => {
    const body = await call(`/organizations/${fleet.orgId}/fleet-status`);
    expect(body.devices).toEqual({ total: 9, enrolled: 1, active: 6, stale: 1, deprovisioned: 1 });
    const counts = countsOf(body);
    expect(counts.get('libreoffice')).toMatchObject({ failed: 1 });
    expect(counts.get('qgis')).toMatchObject({ failed: 1 });
    // libreoffice: present in the child's subtree (4 of the 7 counted devices), failed on one, converged on two.
    expect(counts.get('libreoffice')).toEqual({ present: 4, absent: 3, converged: 2, pending: 4, failed: 1 });
    const sub = await call(`/organizations/${fleet.orgId}/fleet-status?oe_id=${fleet.grandchild}`);
    expect(sub.devices).toEqual({ total: 3, enrolled: 1, active: 2, stale: 0, deprovisioned: 0 });
  });

  it('is readable with a viewer key', async () => {
    const viewer = await createApiKey(ctx, fleet.orgId, 'viewer');
    const body = await call(`/organizations/${fleet.orgId}/fleet-status?oe_id=${fleet.top}`, viewer.key);
    expect(body.devices.total).toBeGreaterThan(0);
  });

  it('an empty organization: zero devices, every catalog Merkmal with zeros', async () => {
    const org = await createOrganization(ctx);
    const body = await call(`/organizations/${org.id}/fleet-status`);
    expect(body.devices).toEqual({ total: 0, enrolled: 0, active: 0, stale: 0, deprovisioned: 0 });
    expect(body.merkmale.length).toBeGreaterThan(0);
    for (const m of body.merkmale)
      expect(m).toMatchObject({ present: 0, absent: 0, converged: 0, pending: 0, failed: 0 });
  });

  it('is 400 with both oe_id and group_id, and for an unknown parameter', async () => {
    for (const q of [`oe_id=${fleet.top}&group_id=${fleet.group}`, 'status=active']) {
      const res = await ctx.request('GET', `/api/v1/organizations/${fleet.orgId}/fleet-status?${q}`);
      expect(res.status, q).toBe(400);
      expect(res.body.error).toBe('invalid_request');
    }
  });

  it("another organization's org unit or group is 404 with a key, exactly as an unknown id; 422 for the operator", async () => {
    const otherOrg = await createOrganization(ctx);
    const foreignUnit = await insertOrgUnit(ctx.sql, otherOrg.id, 'Fremd');
    const foreignGroup = await insertGroup(ctx.sql, otherOrg.id, 'Fremd');
    const admin = await createApiKey(ctx, fleet.orgId, 'admin');
    for (const [field, foreign] of [
      ['oe_id', foreignUnit],
      ['group_id', foreignGroup],
    ] as const) {
      const path = `/api/v1/organizations/${fleet.orgId}/fleet-status?${field}=`;
      const mine = await ctx.request('GET', `${path}${foreign}`, { token: admin.key });
      const unknown = await ctx.request('GET', `${path}${crypto.randomUUID()}`, { token: admin.key });
      expect(mine.status, field).toBe(404);
      expect(unknown.status, field).toBe(404);
      expect({ ...mine.body, message: undefined, request_id: undefined }).toEqual({
        ...unknown.body,
        message: undefined,
        request_id: undefined,
      });
      const operator = await ctx.request('GET', `${path}${foreign}`);
      expect(operator.status, field).toBe(422);
      expect(operator.body.error).toBe('organization_mismatch');
      const unknownForOperator = await ctx.request('GET', `${path}${crypto.randomUUID()}`);
      expect(unknownForOperator.status, field).toBe(404);
    }
  });
});
