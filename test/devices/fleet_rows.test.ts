/**
 * The devices' fleet rows (`device_fleet`, which the fleet status and the device list's
 * convergence filter read) stay equal to what the device reads compute from scratch, after
 * every kind of write that changes a device's status bucket, org unit or catalog:
 * activation, bootstrap, selections at each scope and their unset, moves of a device and of
 * an org unit, memberships, a group's deletion, reports, deprovision, reprovision and a new
 * bootstrap, archive. Also under concurrent writes to one device. Each device's heartbeat row
 * follows it too (organization, and the issue time while its agent reports).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { resolveDevice } from '../support/activation.ts';
import { bootstrapAgent, type EnrolledAgent, enrollAgent, report } from '../support/agent.ts';
import { useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { insertDevice, insertGroup, insertOrgUnit, TEMPLATE_IDS } from '../support/devices.ts';

const ctx = useTestApp();

async function call(method: string, path: string, body?: unknown, expected = method === 'DELETE' ? 204 : 200) {
  const res = await ctx.request(method, `/api/v1${path}`, { body });
  expect(res.status, `${method} ${path}: ${JSON.stringify(res.body)}`).toBe(expected);
  return res.body;
}

interface FleetRow {
  device_id: string;
  oe_id: string;
  bucket: string;
  issued_at: string | null;
  convergence: string | null;
  catalog: string;
}

/** What each live device's fleet row must hold, from the device read and its catalog read. */
async function expectedRows(orgId: string): Promise<FleetRow[]> {
  const rows: FleetRow[] = [];
  let cursor: string | null = null;
  do {
    const page = await call('GET', `/organizations/${orgId}/devices?limit=50${cursor ? `&cursor=${cursor}` : ''}`);
    for (const d of page.items) {
      const reporting = d.status === 'active' || d.status === 'stale';
      const items: Array<{ merkmal: string; state: string; convergence: string }> = reporting
        ? (await call('GET', `/devices/${d.id}/catalog`)).items
        : [];
      rows.push({
        device_id: d.id,
        oe_id: d.oe_id,
        bucket: reporting ? 'reporting' : d.status,
        issued_at: reporting ? d.agent_secret_issued_at : null,
        convergence: d.convergence,
        catalog: items
          .map((i) => `${i.merkmal}:${i.state}:${i.convergence}`)
          .sort()
          .join(' '),
      });
    }
    cursor = page.next_cursor;
  } while (cursor !== null);
  return rows.sort((a, b) => a.device_id.localeCompare(b.device_id));
}

async function storedRows(orgId: string): Promise<FleetRow[]> {
  const rows = await ctx.sql<Array<Omit<FleetRow, 'issued_at'> & { issued_at: Date | null }>>`
    select device_id, oe_id, bucket, issued_at, convergence, catalog
    from device_fleet where organization_id = ${orgId} order by device_id`;
  return rows
    .map((r) => ({ ...r, issued_at: r.issued_at === null ? null : r.issued_at.toISOString() }))
    .sort((a, b) => a.device_id.localeCompare(b.device_id));
}

/**
 * Every device of the organization, archived ones too, has its heartbeat row, which carries
 * the organization and, while the agent reports, the issue time its fleet row holds.
 */
async function expectHeartbeatRows(orgId: string, expected: FleetRow[], step: string) {
  const issued = new Map(expected.map((r) => [r.device_id, r.issued_at]));
  const rows = await ctx.sql<{ device_id: string; organization_id: string | null; issued_at: Date | null }[]>`
    select d.id as device_id, h.organization_id, h.issued_at
    from devices d left join device_heartbeats h on h.device_id = d.id
    where d.organization_id = ${orgId} order by d.id`;
  expect(
    rows.map((r) => ({ ...r, issued_at: r.issued_at?.toISOString() ?? null })),
    `${step}: heartbeat rows`,
  ).toEqual(
    rows.map((r) => ({ device_id: r.device_id, organization_id: orgId, issued_at: issued.get(r.device_id) ?? null })),
  );
}

/** The fleet rows (and heartbeat rows) equal the device reads; and the fleet status' counts equal the rows'. */
async function expectFresh(orgId: string, step: string) {
  const expected = await expectedRows(orgId);
  expect(await storedRows(orgId), step).toEqual(expected);
  await expectHeartbeatRows(orgId, expected, step);
  const status = await call('GET', `/organizations/${orgId}/fleet-status`);
  const reporting = expected.filter((r) => r.bucket === 'reporting');
  expect(status.devices.total, step).toBe(expected.length);
  expect(status.devices.active + status.devices.stale, step).toBe(reporting.length);
  for (const m of status.merkmale as Array<Record<string, number | string>>) {
    const items = reporting.flatMap((r) =>
      r.catalog
        .split(' ')
        .map((i) => i.split(':'))
        .filter(([key]) => key === m.merkmal),
    );
    const count = (index: number, value: string) => items.filter((i) => i[index] === value).length;
    expect(m, `${step}: ${m.merkmal}`).toMatchObject({
      present: count(1, 'present'),
      absent: count(1, 'absent'),
      converged: count(2, 'converged'),
      pending: count(2, 'pending'),
      failed: count(2, 'failed'),
    });
  }
}

describe('device_fleet after every kind of write', () => {
  let orgId: string;
  let a: string;
  let b: string;
  let b1: string;
  let g: string;
  let agents: EnrolledAgent[];
  let enrolled: string;

  beforeAll(async () => {
    orgId = (await createOrganization(ctx)).id;
    a = await insertOrgUnit(ctx.sql, orgId, 'A');
    b = await insertOrgUnit(ctx.sql, orgId, 'B');
    b1 = await insertOrgUnit(ctx.sql, orgId, 'B1', b);
    g = await insertGroup(ctx.sql, orgId);
    agents = [];
    for (let i = 0; i < 4; i++) {
      agents.push(
        await enrollAgent(ctx, {
          organizationId: orgId,
          ...(i === 3 ? { templateId: TEMPLATE_IDS.ubuntuStandard } : {}),
        }),
      );
    }
    enrolled = (await insertDevice(ctx.sql, { organizationId: orgId, oeId: a })).id;
  });

  it('activation and bootstrap', async () => {
    await expectFresh(orgId, 'enrolled agents');
  });

  it('moves, memberships and selections at each scope, and their unset', async () => {
    const [d0, d1, d2] = agents.map((x) => x.device_id);
    await call('PUT', `/devices/${d0}/org-unit`, { oe_id: a });
    await call('PUT', `/devices/${d1}/org-unit`, { oe_id: b1 });
    await call('PUT', `/devices/${d2}/org-unit`, { oe_id: b });
    await expectFresh(orgId, 'moves');
    await call('POST', `/org-units/${a}/catalog/qgis/select`);
    await call('POST', `/org-units/${b}/catalog/libreoffice/select`, { optionen: { v: 1 } });
    await expectFresh(orgId, 'org unit selections');
    await call('POST', `/groups/${g}/catalog/onlyoffice/select`);
    await call('PUT', `/groups/${g}/devices/${d0}`, undefined, 204);
    await call('PUT', `/groups/${g}/devices/${d2}`, undefined, 204);
    await call('PUT', `/groups/${g}/devices/${enrolled}`, undefined, 204);
    await expectFresh(orgId, 'group selection and memberships');
    await call('POST', `/devices/${d1}/catalog/firefox/deselect`);
    await call('POST', `/devices/${d0}/catalog/gastsitzung/select`);
    await expectFresh(orgId, 'device selections');
    await call('DELETE', `/org-units/${a}/catalog/qgis`);
    await call('DELETE', `/groups/${g}/devices/${d2}`);
    await expectFresh(orgId, 'unset and membership removed');
    await call('PATCH', `/org-units/${b1}`, { parent_id: a });
    await expectFresh(orgId, 'org unit moved');
  });

  it('reports: converged, failed, for the other state', async () => {
    const [x0, x1, x2, x3] = agents;
    const ok = async (agent: EnrolledAgent, entries: unknown[]) => {
      const res = await report(ctx, agent.secret, entries);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
    };
    await ok(x0!, [
      { merkmal: 'gastsitzung', event: 'applied' },
      { merkmal: 'onlyoffice', event: 'apply_failed', detail: 'apt failed' },
      { merkmal: 'firefox', event: 'applied' },
    ]);
    await ok(x1!, [{ merkmal: 'firefox', event: 'removed' }]);
    await ok(x2!, [{ merkmal: 'libreoffice', event: 'removed' }]);
    await ok(x3!, [{ merkmal: 'firefox', event: 'remove_failed' }]);
    await expectFresh(orgId, 'reports');
    // A report of one device takes a path of its own; reports of two devices in one statement the general one.
    await ctx.sql`
      insert into device_merkmal_events (device_id, merkmal, type, payload)
      values (${x1!.device_id}, 'firefox', 'apply_failed', '{"detail": "x"}'),
             (${x2!.device_id}, 'libreoffice', 'applied', '{}'), (${x2!.device_id}, 'qgis', 'removed', '{}')`;
    await expectFresh(orgId, 'reports of two devices in one statement');
    // A later change makes the report an old one again.
    await call('POST', `/devices/${x0!.device_id}/catalog/firefox/deselect`);
    await expectFresh(orgId, 'a change after the report');
  });

  it("a group's deletion", async () => {
    await call('DELETE', `/groups/${g}`);
    await expectFresh(orgId, 'group deleted');
  });

  it('deprovision, reprovision, a new bootstrap, archive', async () => {
    const [x0, x1, x2] = agents;
    await call('POST', `/devices/${x1!.device_id}/deprovision`);
    await expectFresh(orgId, 'deprovisioned');
    await call('POST', `/devices/${x1!.device_id}/reprovision`);
    await expectFresh(orgId, 'reprovisioned');
    const blueprint = await resolveDevice(ctx, { code: x1!.code, device_id: x1!.device_id });
    x1!.secret = await bootstrapAgent(ctx, blueprint.agent);
    // Reports from before the new bootstrap count for nothing until it reports again.
    await expectFresh(orgId, 'bootstrapped again');
    await call('POST', `/devices/${x2!.device_id}/archive`);
    await call('POST', `/devices/${x0!.device_id}/deprovision`);
    await call('POST', `/devices/${x0!.device_id}/archive`);
    await expectFresh(orgId, 'archived');
    const [gone] =
      await ctx.sql`select 1 from device_fleet where device_id in ${ctx.sql([x0!.device_id, x2!.device_id])}`;
    expect(gone).toBeUndefined();
  });

  it('a stale device is counted stale by its heartbeat, and one that never checked in by its bootstrap', async () => {
    const [, x1] = agents;
    await ctx.sql`update devices set agent_secret_issued_at = now() - interval '1 hour' where id = ${x1!.device_id}`;
    await ctx.sql`update device_heartbeats set at = now() - interval '1 hour' where device_id = ${x1!.device_id}`;
    const lone = await insertDevice(ctx.sql, { organizationId: orgId });
    await ctx.sql`update devices set agent_secret_hash = ${new Uint8Array(32).fill(7)},
                    agent_secret_issued_at = now() - interval '1 day' where id = ${lone.id}`;
    await expectFresh(orgId, 'stale devices');
    const status = await call('GET', `/organizations/${orgId}/fleet-status`);
    const list = await call('GET', `/organizations/${orgId}/devices?status=stale&limit=100`);
    expect(status.devices.stale).toBe(list.items.length);
    expect(list.items.map((d: { id: string }) => d.id).sort()).toEqual([x1!.device_id, lone.id].sort());
  });
});

describe('device_fleet under concurrent writes', () => {
  it('reports and selections racing on one device leave its row equal to the reads', async () => {
    const org = await createOrganization(ctx);
    const u = await insertOrgUnit(ctx.sql, org.id, 'U');
    const grp = await insertGroup(ctx.sql, org.id);
    const agent = await enrollAgent(ctx, { organizationId: org.id });
    const d = agent.device_id;
    const [home] = await ctx.sql<{ id: string }[]>`
      select id from org_units where organization_id = ${org.id} and protected`;
    for (let round = 0; round < 3; round++) {
      const answers = await Promise.all([
        report(ctx, agent.secret, [
          { merkmal: 'qgis', event: round % 2 === 0 ? 'applied' : 'removed' },
          { merkmal: 'firefox', event: 'apply_failed' },
        ]),
        ctx.request('POST', `/api/v1/devices/${d}/catalog/qgis/${round % 2 === 0 ? 'deselect' : 'select'}`),
        ctx.request('PUT', `/api/v1/devices/${d}/org-unit`, { body: { oe_id: round % 2 === 0 ? u : home!.id } }),
        ctx.request('POST', `/api/v1/groups/${grp}/catalog/libreoffice/select`),
        ctx.request(round % 2 === 0 ? 'PUT' : 'DELETE', `/api/v1/groups/${grp}/devices/${d}`),
        report(ctx, agent.secret, [{ merkmal: 'libreoffice', event: 'applied' }]),
      ]);
      for (const res of answers) expect(res.status, JSON.stringify(res.body)).toBeLessThan(500);
      await expectFresh(org.id, `round ${round}`);
    }
  });
});
