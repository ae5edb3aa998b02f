/**
 * The ETag is the answer's content (CONTRACT §26), across a small fleet: for each kind of
 * change, the devices whose check-in moves from 304 to 200 are exactly those whose resolved
 * answer changed. The test computes each device's answer on its own (the device's catalog
 * listing, its template's roles read from the seed tables), before and after the change, and
 * compares the set that differs with the set of tags that moved.
 */
import postgres from 'postgres';
import { beforeEach, describe, expect, it } from 'vitest';
import { TEMPLATES } from '../support/activation.ts';
import { enrollAgent, type EnrolledAgent } from '../support/agent.ts';
import { request, testApp, useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { insertRollout, reportOutcome, soak } from '../rollouts/judge_support.ts';
import { judgeRollout } from '../../api/rollouts/judge.ts';

const ctx = useTestApp();

type App = Parameters<typeof request>[0];

interface Fleet {
  organizationId: string;
  units: { root: string; a: string; a1: string; b: string; unused: string };
  groups: { g1: string; g2: string };
  agents: EnrolledAgent[];
  /** Each agent's last ETag, by device id. */
  tags: Map<string, string>;
}

const ok = <T extends { status: number; body: any }>(res: T, status = 200): T => {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  return res;
};

async function post(path: string, body?: unknown) {
  return ok(await ctx.request('POST', path, { body }), 201).body;
}

/**
 * Seven devices: in the default unit, in A, in A's child A1 (two, one of them in group G1),
 * in B (two: one in G1 and G2, one in G2 on Ubuntu), and in the default unit on the
 * encrypted Debian template; a unit U with no devices. Overrides at A, G1 and one device.
 */
async function buildFleet(): Promise<Fleet> {
  const org = (await createOrganization(ctx)) as { id: string; default_oe_id: string };
  const o = org.id;
  const a = (await post(`/api/v1/organizations/${o}/org-units`, { name: 'A' })).id;
  const a1 = (await post(`/api/v1/organizations/${o}/org-units`, { name: 'A1', parent_id: a })).id;
  const b = (await post(`/api/v1/organizations/${o}/org-units`, { name: 'B' })).id;
  const unused = (await post(`/api/v1/organizations/${o}/org-units`, { name: 'U' })).id;
  const g1 = (await post(`/api/v1/organizations/${o}/groups`, { name: 'G1' })).id;
  const g2 = (await post(`/api/v1/organizations/${o}/groups`, { name: 'G2' })).id;
  const places: Array<{ unit: string; groups: string[]; templateId?: string }> = [
    { unit: org.default_oe_id, groups: [] },
    { unit: a, groups: [] },
    { unit: a1, groups: [] },
    { unit: a1, groups: [g1] },
    { unit: b, groups: [g1, g2] },
    { unit: b, groups: [g2], templateId: TEMPLATES.ubuntuStandard },
    { unit: org.default_oe_id, groups: [], templateId: TEMPLATES.debianEncrypted },
  ];
  const agents: EnrolledAgent[] = [];
  for (const place of places) {
    const agent = await enrollAgent(ctx, { organizationId: o, templateId: place.templateId });
    if (place.unit !== org.default_oe_id) {
      ok(await ctx.request('PUT', `/api/v1/devices/${agent.device_id}/org-unit`, { body: { oe_id: place.unit } }));
    }
    for (const g of place.groups) ok(await ctx.request('PUT', `/api/v1/groups/${g}/devices/${agent.device_id}`), 204);
    agents.push(agent);
  }
  ok(await ctx.request('POST', `/api/v1/org-units/${a}/catalog/libreoffice/select`, { body: { optionen: { a: 1 } } }));
  ok(await ctx.request('POST', `/api/v1/groups/${g1}/catalog/qgis/select`));
  ok(await ctx.request('POST', `/api/v1/devices/${agents[6]!.device_id}/catalog/onlyoffice/select`));
  const fleet: Fleet = {
    organizationId: o,
    units: { root: org.default_oe_id, a, a1, b, unused },
    groups: { g1, g2 },
    agents,
    tags: new Map(),
  };
  for (const agent of agents) {
    const res = ok(await request(ctx.app, 'POST', '/api/v1/agent/checkin', { token: agent.secret }));
    fleet.tags.set(agent.device_id, res.headers.get('etag')!);
  }
  return fleet;
}

/** JSON with sorted keys. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * A device's answer as the test works it out, not as the check-in does: the states and
 * optionen of its catalog listing, and the roles of its effective template's backend and
 * the blueprints of its workspace, read from the seed tables.
 */
async function answerOf(deviceId: string): Promise<string> {
  const listing = ok(await ctx.request('GET', `/api/v1/devices/${deviceId}/catalog`)).body.items as Array<{
    merkmal: string;
    state: string;
    optionen: unknown;
  }>;
  const roles = await ctx.sql<{ merkmal: string; ansible_role: string; in_workspace: boolean }[]>`
    select b.merkmal, b.ansible_role, wm.merkmal is not null as in_workspace
    from devices d
    join templates t on t.id = effective_template_id(d.template_id)
    join blueprints b on b.backend = t.backend
    left join workspace_merkmale wm on wm.workspace = t.workspace and wm.merkmal = b.merkmal
    where d.id = ${deviceId}
    order by b.merkmal`;
  const role = new Map(roles.map((r) => [r.merkmal, r.ansible_role]));
  return canonical({
    blueprints: roles.filter((r) => r.in_workspace).map((r) => [r.merkmal, r.ansible_role]),
    auftraege: listing.map((m) => [m.merkmal, role.get(m.merkmal), m.state, m.optionen]),
  });
}

async function answersOf(fleet: Fleet): Promise<Map<string, string>> {
  const answers = new Map<string, string>();
  for (const agent of fleet.agents) answers.set(agent.device_id, await answerOf(agent.device_id));
  return answers;
}

/**
 * Makes the change and checks every device in with its last tag: returns the devices whose
 * answer changed by the test's reckoning and those that got a 200, and checks each 200's
 * tag is new and each 304's the one sent.
 */
async function afterChange(
  fleet: Fleet,
  change: () => Promise<unknown>,
  app: App = ctx.app,
): Promise<{ changed: number[]; moved: number[] }> {
  const before = await answersOf(fleet);
  await change();
  const after = await answersOf(fleet);
  const changed: number[] = [];
  const moved: number[] = [];
  for (const [i, agent] of fleet.agents.entries()) {
    if (before.get(agent.device_id) !== after.get(agent.device_id)) changed.push(i);
    const tag = fleet.tags.get(agent.device_id)!;
    const res = await request(app, 'POST', '/api/v1/agent/checkin', {
      token: agent.secret,
      headers: { 'if-none-match': tag },
    });
    expect([200, 304]).toContain(res.status);
    if (res.status === 200) {
      moved.push(i);
      expect(res.headers.get('etag')).not.toBe(tag);
      fleet.tags.set(agent.device_id, res.headers.get('etag')!);
    } else {
      expect(res.headers.get('etag')).toBe(tag);
    }
  }
  return { changed, moved };
}

let fleet: Fleet;
beforeEach(async () => {
  fleet = await buildFleet();
});

describe('changes that leave every answer as it was: every check-in is a 304', () => {
  const unchanged = async (change: (f: Fleet) => Promise<unknown>) => {
    const { changed, moved } = await afterChange(fleet, () => change(fleet));
    expect(changed).toEqual([]);
    expect(moved).toEqual([]);
  };

  it('an empty group created, renamed, deleted', async () => {
    let id = '';
    await unchanged(async (f) => {
      id = (await post(`/api/v1/organizations/${f.organizationId}/groups`, { name: 'Leer' })).id;
    });
    await unchanged(async () =>
      ok(await ctx.request('PATCH', `/api/v1/groups/${id}`, { body: { name: 'Noch leer' } })),
    );
    await unchanged(async () => ok(await ctx.request('DELETE', `/api/v1/groups/${id}`), 204));
  });

  it('a group of devices renamed, an org unit renamed, an org unit created', async () => {
    await unchanged(async (f) =>
      ok(await ctx.request('PATCH', `/api/v1/groups/${f.groups.g1}`, { body: { name: 'Umbenannt' } })),
    );
    await unchanged(async (f) =>
      ok(await ctx.request('PATCH', `/api/v1/org-units/${f.units.a}`, { body: { name: 'A neu' } })),
    );
    await unchanged((f) =>
      post(`/api/v1/organizations/${f.organizationId}/org-units`, { name: 'C', parent_id: f.units.b }),
    );
  });

  it('a selection, then its removal, at an org unit on no device’s chain', async () => {
    await unchanged(async (f) =>
      ok(await ctx.request('POST', `/api/v1/org-units/${f.units.unused}/catalog/qgis/select`)),
    );
    await unchanged(async (f) =>
      ok(await ctx.request('DELETE', `/api/v1/org-units/${f.units.unused}/catalog/qgis`), 204),
    );
  });

  it('a selection that resolves as before: firefox (in the workspace) selected at the root of A without optionen', async () => {
    // Firefox is present by default with {}; A's devices resolve to the same answer.
    await unchanged(async (f) =>
      ok(await ctx.request('POST', `/api/v1/org-units/${f.units.a}/catalog/firefox/select`)),
    );
    // A group's vote for what its devices have anyway: G2 deselecting gastsitzung, absent by default.
    await unchanged(async (f) =>
      ok(await ctx.request('POST', `/api/v1/groups/${f.groups.g2}/catalog/gastsitzung/deselect`)),
    );
  });

  it('a template change whose answer is the same (Debian → Debian Verschlüsselt)', async () => {
    await unchanged(
      async (f) =>
        await ctx.sql`update devices set template_id = ${TEMPLATES.debianEncrypted} where id = ${f.agents[1]!.device_id}`,
    );
  });

  it("a rollout's completion for the devices that already have its change", async () => {
    // A select of gastsitzung at A, its devices (A, A1 twice) all in its one ring.
    const inScope = [1, 2, 3].map((i) => fleet.agents[i]!);
    const id = await insertRollout(ctx.sql, {
      organizationId: fleet.organizationId,
      scope: 'org_unit',
      scopeId: fleet.units.a,
      merkmal: 'gastsitzung',
      action: 'select',
      rings: [100],
      soakSeconds: 0,
      placement: new Map(inScope.map((a) => [a.device_id, 0] as const)),
    });
    // The ring's opening gave them the change: their next check-in is a 200, the others' a 304.
    const opened = await afterChange(fleet, async () => {});
    expect(opened.moved).toEqual([1, 2, 3]);
    for (const agent of inScope) await reportOutcome(ctx, agent.secret, 'gastsitzung', 'applied');
    await soak(ctx.sql, id);
    await unchanged(async () =>
      expect(await judgeRollout(ctx.sql, id, { pollIntervalSeconds: 300, requestId: 'job:test' })).toBe('completed'),
    );
  });
});

describe('changes that alter some answers: exactly those devices get a 200', () => {
  const alters = async (change: (f: Fleet) => Promise<unknown>, expected: number[], app?: App) => {
    const { changed, moved } = await afterChange(fleet, () => change(fleet), app);
    expect(changed).toEqual(expected);
    expect(moved).toEqual(changed);
  };

  it('a selection at a device’s own unit, and at an ancestor', async () => {
    await alters(
      async (f) => ok(await ctx.request('POST', `/api/v1/org-units/${f.units.a1}/catalog/qgis/select`)),
      [2],
    );
    // Device 3's group G1 already voted qgis present: A1's select changed device 2 alone.
    // Firefox deselected at A reaches A and A1.
    await alters(
      async (f) => ok(await ctx.request('POST', `/api/v1/org-units/${f.units.a}/catalog/firefox/deselect`)),
      [1, 2, 3],
    );
  });

  it('a selection at a group the device is in, and new optionen of it', async () => {
    await alters(
      async (f) =>
        ok(await ctx.request('POST', `/api/v1/groups/${f.groups.g2}/catalog/onlyoffice/select`, { body: {} })),
      [4, 5],
    );
    await alters(
      async (f) =>
        ok(
          await ctx.request('POST', `/api/v1/groups/${f.groups.g2}/catalog/onlyoffice/select`, {
            body: { optionen: { kanal: 'stabil', version: 8 } },
          }),
        ),
      [4, 5],
    );
    // The same optionen in another key order: nothing changes.
    await alters(
      async (f) =>
        ok(
          await ctx.request('POST', `/api/v1/groups/${f.groups.g2}/catalog/onlyoffice/select`, {
            body: { optionen: { version: 8, kanal: 'stabil' } },
          }),
        ),
      [],
    );
  });

  it('a device override, and new optionen of the unit that decides', async () => {
    await alters(
      async (f) => ok(await ctx.request('POST', `/api/v1/devices/${f.agents[0]!.device_id}/catalog/qgis/select`)),
      [0],
    );
    await alters(
      async (f) =>
        ok(
          await ctx.request('POST', `/api/v1/org-units/${f.units.a}/catalog/libreoffice/select`, {
            body: { optionen: { a: 2 } },
          }),
        ),
      [1, 2, 3],
    );
  });

  it('a move to another unit (only where the new chain decides otherwise)', async () => {
    // Device 0 from the default unit to A: libreoffice present with A's optionen.
    await alters(
      async (f) =>
        ok(
          await ctx.request('PUT', `/api/v1/devices/${f.agents[0]!.device_id}/org-unit`, {
            body: { oe_id: f.units.a1 },
          }),
        ),
      [0],
    );
    // Device 6 to U, a unit without overrides: its answer stays.
    await alters(
      async (f) =>
        ok(
          await ctx.request('PUT', `/api/v1/devices/${f.agents[6]!.device_id}/org-unit`, {
            body: { oe_id: f.units.unused },
          }),
        ),
      [],
    );
  });

  it('a group membership gained and lost', async () => {
    await alters(
      async (f) => ok(await ctx.request('PUT', `/api/v1/groups/${f.groups.g1}/devices/${f.agents[0]!.device_id}`), 204),
      [0],
    );
    await alters(
      async (f) =>
        ok(await ctx.request('DELETE', `/api/v1/groups/${f.groups.g1}/devices/${f.agents[0]!.device_id}`), 204),
      [0],
    );
  });

  it('a template change whose roles differ (a seed where Ubuntu applies qgis by another role)', async () => {
    // Seed data is cached per database client: a fresh client stands for a service started after the migration.
    const client = postgres(ctx.db.url, { max: 2, onnotice: () => {} });
    try {
      const app = testApp(client, ctx.config);
      // The migration alone: the Ubuntu device's answer changed (its role), no other's.
      await alters(
        async () => {
          await ctx.sql`update blueprints set ansible_role = 'qgis_ubuntu' where merkmal = 'qgis' and backend = 'ubuntu'`;
          await ctx.sql`insert into schema_migrations (version) values ('99990101000000')`;
        },
        [5],
        app,
      );
      // Debian → Ubuntu: device 1's roles change with it.
      await alters(
        async (f) =>
          await ctx.sql`update devices set template_id = ${TEMPLATES.ubuntuStandard} where id = ${f.agents[1]!.device_id}`,
        [1],
        app,
      );
    } finally {
      await ctx.sql`update blueprints set ansible_role = 'qgis' where merkmal = 'qgis' and backend = 'ubuntu'`;
      await ctx.sql`delete from schema_migrations where version = '99990101000000'`;
      await client.end();
    }
  });
});
