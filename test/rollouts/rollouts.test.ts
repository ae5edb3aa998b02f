/**
 * Rollouts over HTTP: creation with ring 0's devices changed at their next check-in and the
 * others not, the 409s, devices entering the scope later, pause / resume / abort, abort
 * giving each device its previous state back, explain, webhooks, audit rows, roles and
 * tenants, and bad input that changes nothing.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { createApiKey, databaseFingerprint } from '../support/access.ts';
import { type EnrolledAgent, enrollAgent, report } from '../support/agent.ts';
import { type TestResponse, useTestApp, writeHeartbeats } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { insertDevice, insertGroup, addToGroup } from '../support/devices.ts';

// Creating a rollout over 10,000 devices takes seconds on a busy machine.
const ctx = useTestApp({ databaseTimeoutSeconds: 60 });

const ok = <T extends TestResponse>(res: T, status = 200): T => {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  return res;
};

function checkin(secret: string, etag?: string) {
  return ctx.request('POST', '/api/v1/agent/checkin', {
    token: secret,
    headers: etag === undefined ? {} : { 'if-none-match': etag },
  });
}

function stateOf(body: { auftraege: Array<{ merkmal: string; state: string }> }, merkmal: string) {
  return body.auftraege.find((a) => a.merkmal === merkmal)?.state;
}

const create = (organizationId: string, body: Record<string, unknown>, token?: string) =>
  ctx.request('POST', `/api/v1/organizations/${organizationId}/rollouts`, { body, token });

interface Fleet {
  organizationId: string;
  unitId: string;
  agents: EnrolledAgent[];
  /** Each agent's check-in before any rollout: its ETag and answer. */
  before: Map<string, { etag: string; body: any }>;
}

/** An organization with `n` bootstrapped agents in its default unit, each checked in once. */
async function fleet(n: number): Promise<Fleet> {
  const org = await createOrganization(ctx);
  const agents: EnrolledAgent[] = [];
  for (let i = 0; i < n; i++) agents.push(await enrollAgent(ctx, { organizationId: org.id }));
  const before = new Map<string, { etag: string; body: any }>();
  for (const a of agents) {
    const res = ok(await checkin(a.secret));
    before.set(a.device_id, { etag: res.headers.get('etag')!, body: res.body });
  }
  return { organizationId: org.id, unitId: org.default_oe_id, agents, before };
}

async function ringsOf(rolloutId: string): Promise<Map<string, number>> {
  const rows = await ctx.sql<{ device_id: string; ring: number }[]>`
    select device_id, ring from rollout_devices where rollout_id = ${rolloutId}`;
  return new Map(rows.map((r) => [r.device_id, r.ring]));
}

describe('ring assignment', () => {
  it('puts 10,000 devices in rings proportional within ±2 %, stably and whatever order they come in', async () => {
    const org = await createOrganization(ctx);
    await ctx.sql`
      insert into devices (organization_id, serial, oe_id)
      select ${org.id}, 'RING-' || i, ${org.default_oe_id} from generate_series(1, 10000) as i`;
    const res = ok(
      await create(org.id, {
        scope: 'org_unit',
        scope_id: org.default_oe_id,
        merkmal: 'libreoffice',
        action: 'select',
        rings: [10, 50, 100],
      }),
      201,
    );
    const sizes = res.body.rings_detail.map((r: { devices: number }) => r.devices);
    expect(sizes.reduce((a: number, b: number) => a + b)).toBe(10_000);
    for (const [i, expected] of [1000, 4000, 5000].entries()) {
      expect(Math.abs(sizes[i] - expected), `ring ${i}: ${sizes[i]}`).toBeLessThanOrEqual(200);
    }
    const rings = await ringsOf(res.body.id);
    // The same rollout assigns anew in another order: every device lands in the same ring.
    const { assignRings } = await import('../../api/rollouts/rings.ts');
    const shuffled = [...rings.keys()].sort(() => Math.random() - 0.5);
    const again = await ctx.sql
      .begin(async (tx) => {
        await tx`delete from rollout_devices where rollout_id = ${res.body.id}`;
        await tx`delete from rollout_rings where rollout_id = ${res.body.id}`;
        await assignRings(tx, res.body.id, [10, 50, 100], shuffled.reverse());
        const rows = await tx<{ device_id: string; ring: number }[]>`
          select device_id, ring from rollout_devices where rollout_id = ${res.body.id}`;
        throw Object.assign(new Error('rollback'), { rows });
      })
      .catch((err: { rows: Array<{ device_id: string; ring: number }> }) => err.rows);
    expect(new Map(again.map((r) => [r.device_id, r.ring]))).toEqual(rings);
    // Ring 0's devices are the applied ones.
    const [applied] = await ctx.sql<{ n: number }[]>`
      select count(*)::int as n from devices where organization_id = ${org.id} and rollouts_text = ${res.body.id}`;
    expect(applied!.n).toBe(sizes[0]);
  }, 120_000);
});

describe('a rollout at the check-in', () => {
  let f: Fleet;
  let rollout: any;
  beforeAll(async () => {
    f = await fleet(12);
    rollout = ok(
      await create(f.organizationId, {
        scope: 'org_unit',
        scope_id: f.unitId,
        merkmal: 'libreoffice',
        action: 'select',
        optionen: { sprache: 'de' },
        rings: [50, 100],
        soak_seconds: 60,
      }),
      201,
    ).body;
  });

  it('answers the Rollout object, ring 0 open', () => {
    expect(rollout).toMatchObject({
      organization_id: f.organizationId,
      scope: 'org_unit',
      scope_id: f.unitId,
      merkmal: 'libreoffice',
      action: 'select',
      optionen: { sprache: 'de' },
      rings: [50, 100],
      max_failure_ratio: 0.1,
      min_reported_ratio: 0.9,
      soak_seconds: 60,
      status: 'running',
      paused_reason: null,
      current_ring: 0,
      created_by: { type: 'operator' },
      completed_at: null,
    });
    expect(rollout.rings_detail).toHaveLength(2);
    expect(rollout.rings_detail[0]).toMatchObject({ ring: 0, percent: 50, converged: 0, failed: 0 });
    expect(rollout.rings_detail[0].opened_at).toMatch(/Z$/);
    expect(rollout.rings_detail[1]).toMatchObject({ ring: 1, percent: 100, opened_at: null, pending: 0 });
    expect(rollout.rings_detail[0].devices + rollout.rings_detail[1].devices).toBe(12);
    expect(rollout.rings_detail[0].devices).toBeGreaterThan(0);
    expect(rollout.rings_detail[1].devices).toBeGreaterThan(0);
    expect(rollout.rings_detail[0]).not.toHaveProperty('accepted_failures');
  });

  it("changes ring 0's devices at their next check-in (a new ETag) and no other's", async () => {
    const rings = await ringsOf(rollout.id);
    for (const a of f.agents) {
      const res = await checkin(a.secret, f.before.get(a.device_id)!.etag);
      if (rings.get(a.device_id) === 0) {
        expect(res.status, a.device_id).toBe(200);
        expect(stateOf(res.body, 'libreoffice')).toBe('present');
        expect(res.body.auftraege.find((x: { merkmal: string }) => x.merkmal === 'libreoffice').optionen).toEqual({
          sprache: 'de',
        });
      } else {
        expect(res.status, a.device_id).toBe(304);
      }
    }
    const events = await ctx.sql<{ device_id: string; type: string; payload: any }[]>`
      select device_id, type, payload from device_merkmal_events
      where merkmal = 'libreoffice' and payload->>'source_id' = ${rollout.id}`;
    expect(events.map((e) => e.device_id).sort()).toEqual(
      [...rings]
        .filter(([, ring]) => ring === 0)
        .map(([id]) => id)
        .sort(),
    );
    for (const e of events) {
      expect(e.type).toBe('selected');
      expect(e.payload).toMatchObject({ cause: 'rollout', actor: { type: 'operator' } });
    }
  });

  it('explains the rollout step: ring open or holding the device back', async () => {
    const rings = await ringsOf(rollout.id);
    for (const a of f.agents) {
      const res = ok(await ctx.request('GET', `/api/v1/devices/${a.device_id}/catalog/libreoffice/explain`));
      const step = res.body.steps.find((s: { step: string }) => s.step === 'rollout');
      const ring = rings.get(a.device_id)!;
      expect(step).toEqual({ step: 'rollout', rollout_id: rollout.id, ring, ring_open: ring === 0, state: 'present' });
      expect(res.body.state).toBe(ring === 0 ? 'present' : 'absent');
    }
  });

  it('refuses a second rollout and a direct select, deselect or unset at the scope: 409 rollout_in_progress', async () => {
    await writeHeartbeats(ctx); // a timer's batch must not land between the two fingerprints
    const before = await databaseFingerprint(ctx.sql);
    for (const action of ['select', 'deselect', 'unset']) {
      const res = await create(f.organizationId, {
        scope: 'org_unit',
        scope_id: f.unitId,
        merkmal: 'libreoffice',
        action,
      });
      expect(res.status, JSON.stringify(res.body)).toBe(409);
      expect(res.body.error).toBe('rollout_in_progress');
      expect(res.body.message).toContain(rollout.id);
    }
    for (const [method, path] of [
      ['POST', `/api/v1/org-units/${f.unitId}/catalog/libreoffice/select`],
      ['POST', `/api/v1/org-units/${f.unitId}/catalog/libreoffice/deselect`],
      ['DELETE', `/api/v1/org-units/${f.unitId}/catalog/libreoffice`],
    ] as const) {
      const res = await ctx.request(method, path);
      expect(res.status, `${method} ${path}`).toBe(409);
      expect(res.body.error).toBe('rollout_in_progress');
    }
    await writeHeartbeats(ctx); // a timer's batch must not land between the two fingerprints
    expect(await databaseFingerprint(ctx.sql)).toBe(before);
  });

  it('lets one of two creations at once through, the other 409 rollout_in_progress', async () => {
    const body = { scope: 'org_unit', scope_id: f.unitId, merkmal: 'firefox', action: 'deselect', rings: [100] };
    const answers = await Promise.all([create(f.organizationId, body), create(f.organizationId, body)]);
    expect(answers.map((r) => r.status).sort()).toEqual([201, 409]);
    expect(answers.find((r) => r.status === 409)!.body.error).toBe('rollout_in_progress');
    const winner = answers.find((r) => r.status === 201)!.body.id;
    ok(await ctx.request('POST', `/api/v1/rollouts/${winner}/abort`));
  });

  it('leaves a device that enters the scope after the creation as it was', async () => {
    const late = await enrollAgent(ctx, { organizationId: f.organizationId });
    const res = ok(await checkin(late.secret));
    expect(stateOf(res.body, 'libreoffice')).toBe('absent');
    const explained = ok(await ctx.request('GET', `/api/v1/devices/${late.device_id}/catalog/libreoffice/explain`));
    expect(explained.body.steps.map((s: { step: string }) => s.step)).not.toContain('rollout');
    expect((await ringsOf(rollout.id)).has(late.device_id)).toBe(false);
  });

  it('abort gives every changed device its previous state back: the check-in answers what it answered before', async () => {
    const rings = await ringsOf(rollout.id);
    ok(await ctx.request('POST', `/api/v1/rollouts/${rollout.id}/abort`));
    for (const a of f.agents) {
      const { etag, body } = f.before.get(a.device_id)!;
      const res = await checkin(a.secret);
      expect(res.status).toBe(200);
      expect(res.body, a.device_id).toEqual(body);
      expect(res.headers.get('etag'), a.device_id).toBe(etag);
    }
    const events = await ctx.sql<{ device_id: string; type: string; payload: any }[]>`
      select device_id, type, payload from device_merkmal_events
      where merkmal = 'libreoffice' and payload->>'source_id' = ${rollout.id} and type = 'deselected'`;
    expect(events.map((e) => e.device_id).sort()).toEqual(
      [...rings]
        .filter(([, ring]) => ring === 0)
        .map(([id]) => id)
        .sort(),
    );
    for (const e of events) expect(e.payload.cause).toBe('rollout');
    // Nothing was written at the scope, and the scope is free again.
    const [override] = await ctx.sql`
      select 1 from org_unit_merkmale where org_unit_id = ${f.unitId} and merkmal = 'libreoffice'`;
    expect(override).toBeUndefined();
    ok(await ctx.request('POST', `/api/v1/org-units/${f.unitId}/catalog/libreoffice/deselect`));
  });
});

describe('pause, resume and abort', () => {
  it('move the status, answer an unchanged rollout as it is, and 409 rollout_not_active once it ended; with webhooks and audit rows', async () => {
    const f = await fleet(3);
    const webhook = ok(
      await ctx.request('POST', `/api/v1/organizations/${f.organizationId}/webhooks`, {
        body: {
          url: 'https://hooks.example.com/rollouts',
          events: ['rollout.ring_opened', 'rollout.paused', 'rollout.completed', 'rollout.aborted'],
        },
      }),
      201,
    ).body;
    const rollout = ok(
      await create(f.organizationId, {
        scope: 'org_unit',
        scope_id: f.unitId,
        merkmal: 'qgis',
        action: 'select',
        rings: [100],
      }),
      201,
    ).body;
    const post = (verb: string) => ctx.request('POST', `/api/v1/rollouts/${rollout.id}/${verb}`);

    expect(ok(await post('pause')).body).toMatchObject({ status: 'paused', paused_reason: 'manual' });
    expect(ok(await post('pause')).body).toMatchObject({ status: 'paused', paused_reason: 'manual' });
    expect(ok(await post('resume')).body).toMatchObject({ status: 'running', paused_reason: null });
    expect(ok(await post('resume')).body).toMatchObject({ status: 'running', paused_reason: null });
    const [soon] =
      await ctx.sql`select run_at from graphile_worker.jobs where key = ${`judge_rollout:${rollout.id}:soon`}`;
    expect(soon).toBeDefined();
    const aborted = ok(await post('abort')).body;
    expect(aborted).toMatchObject({ status: 'aborted', paused_reason: null });
    expect(aborted.completed_at).toMatch(/Z$/);
    expect(ok(await ctx.request('GET', `/api/v1/rollouts/${rollout.id}`)).body).toEqual(aborted);
    await writeHeartbeats(ctx); // a timer's batch must not land between the two fingerprints
    const before = await databaseFingerprint(ctx.sql);
    for (const verb of ['pause', 'resume', 'abort']) {
      const res = await post(verb);
      expect(res.status, verb).toBe(409);
      expect(res.body.error).toBe('rollout_not_active');
    }
    await writeHeartbeats(ctx); // a timer's batch must not land between the two fingerprints
    expect(await databaseFingerprint(ctx.sql)).toBe(before);

    const sent = await ctx.sql<{ event: string; data: any }[]>`
      select d.event, e.data from webhook_deliveries d join webhook_events e on e.id = d.event_id
      where d.webhook_id = ${webhook.id} order by d.seq`;
    expect(sent.map((s) => s.event)).toEqual(['rollout.ring_opened', 'rollout.paused', 'rollout.aborted']);
    expect(sent[0]!.data).toMatchObject({
      rollout_id: rollout.id,
      scope: 'org_unit',
      scope_id: f.unitId,
      merkmal: 'qgis',
      action: 'select',
      status: 'running',
      current_ring: 0,
      ring: 0,
    });
    expect(sent[1]!.data).toMatchObject({ status: 'paused', paused_reason: 'manual' });
    expect(sent[2]!.data).toMatchObject({ status: 'aborted' });

    const audit = ok(
      await ctx.request('GET', `/api/v1/organizations/${f.organizationId}/audit-events?target_id=${rollout.id}`),
    ).body.items;
    expect(audit.map((e: { action: string }) => e.action).reverse()).toEqual([
      'rollout.create',
      'rollout.pause',
      'rollout.pause',
      'rollout.resume',
      'rollout.resume',
      'rollout.abort',
    ]);
    for (const e of audit) expect(e).toMatchObject({ actor: { type: 'operator' }, target_type: 'rollout' });
    expect(audit.at(-1).details).toMatchObject({
      scope: 'org_unit',
      scope_id: f.unitId,
      merkmal: 'qgis',
      action: 'select',
    });
  });

  it('resume after an automatic pause accepts the open ring’s failures so far', async () => {
    const f = await fleet(2);
    const rollout = ok(
      await create(f.organizationId, {
        scope: 'org_unit',
        scope_id: f.unitId,
        merkmal: 'onlyoffice',
        action: 'select',
        rings: [100],
      }),
      201,
    ).body;
    for (const a of f.agents) ok(await report(ctx, a.secret, [{ merkmal: 'onlyoffice', event: 'apply_failed' }]));
    await writeHeartbeats(ctx);
    await ctx.sql`update rollouts set status = 'paused', paused_reason = 'failure_ratio' where id = ${rollout.id}`;
    const resumed = ok(await ctx.request('POST', `/api/v1/rollouts/${rollout.id}/resume`)).body;
    expect(resumed).toMatchObject({ status: 'running', paused_reason: null });
    expect(resumed.rings_detail[0]).toMatchObject({ failed: 2 });
    const [ring] = await ctx.sql<{ accepted_failures: number }[]>`
      select accepted_failures from rollout_rings where rollout_id = ${rollout.id} and ring = 0`;
    expect(ring!.accepted_failures).toBe(2);
  });
});

describe('the list and the group scope', () => {
  it('lists newest first, filters by status, pages with next_cursor, and takes a group as scope', async () => {
    const org = await createOrganization(ctx);
    const group = await insertGroup(ctx.sql, org.id);
    const members = [];
    for (let i = 0; i < 4; i++) {
      const d = await insertDevice(ctx.sql, { organizationId: org.id });
      await addToGroup(ctx.sql, group, d.id);
      members.push(d.id);
    }
    const outsider = await insertDevice(ctx.sql, { organizationId: org.id });
    const ids: string[] = [];
    for (const merkmal of ['libreoffice', 'qgis', 'onlyoffice']) {
      const res = ok(await create(org.id, { scope: 'group', scope_id: group, merkmal, action: 'select' }), 201);
      ids.push(res.body.id);
    }
    const [grouped] = await ctx.sql<{ n: number }[]>`
      select count(*)::int as n from rollout_devices where rollout_id = ${ids[0]!}`;
    expect(grouped!.n).toBe(4);
    const [outside] = await ctx.sql`select 1 from rollout_devices where device_id = ${outsider.id}`;
    expect(outside).toBeUndefined();
    ok(await ctx.request('POST', `/api/v1/rollouts/${ids[1]}/abort`));

    const all = ok(await ctx.request('GET', `/api/v1/organizations/${org.id}/rollouts`)).body;
    expect(all.items.map((r: { id: string }) => r.id)).toEqual([...ids].reverse());
    expect(all.next_cursor).toBeNull();
    const running = ok(await ctx.request('GET', `/api/v1/organizations/${org.id}/rollouts?status=running`)).body;
    expect(running.items.map((r: { id: string }) => r.id)).toEqual([ids[2], ids[0]]);
    const aborted = ok(await ctx.request('GET', `/api/v1/organizations/${org.id}/rollouts?status=aborted`)).body;
    expect(aborted.items.map((r: { id: string }) => r.id)).toEqual([ids[1]]);

    const paged: string[] = [];
    let cursor: string | null = null;
    do {
      const query: string = cursor === null ? '?limit=2' : `?limit=2&cursor=${cursor}`;
      const page: any = ok(await ctx.request('GET', `/api/v1/organizations/${org.id}/rollouts${query}`)).body;
      paged.push(...page.items.map((r: { id: string }) => r.id));
      cursor = page.next_cursor;
    } while (cursor !== null);
    expect(paged).toEqual([...ids].reverse());

    for (const query of ['?state=running', '?status=done', '?cursor=bm9wZQ', '?limit=0']) {
      const res = await ctx.request('GET', `/api/v1/organizations/${org.id}/rollouts${query}`);
      expect(res.status, query).toBe(400);
      expect(res.body.error).toBe('invalid_request');
    }
  });
});

describe('errors, roles and tenants', () => {
  let f: Fleet;
  let rolloutId: string;
  let keys: { admin: string; viewer: string; otherAdmin: string };
  let otherUnit: string;
  beforeAll(async () => {
    f = await fleet(1);
    const other = await createOrganization(ctx);
    otherUnit = other.default_oe_id;
    keys = {
      admin: (await createApiKey(ctx, f.organizationId, 'admin')).key,
      viewer: (await createApiKey(ctx, f.organizationId, 'viewer')).key,
      otherAdmin: (await createApiKey(ctx, other.id, 'admin')).key,
    };
    rolloutId = ok(
      await create(
        f.organizationId,
        { scope: 'org_unit', scope_id: f.unitId, merkmal: 'gastsitzung', action: 'select' },
        keys.admin,
      ),
      201,
    ).body.id;
  });

  it('names the admin key that created it', async () => {
    const res = ok(await ctx.request('GET', `/api/v1/rollouts/${rolloutId}`, { token: keys.viewer }));
    expect(res.body.created_by).toMatchObject({ type: 'api_key', name: 'admin key' });
  });

  it('lets a viewer list and read, but not write (403, nothing changed)', async () => {
    ok(await ctx.request('GET', `/api/v1/rollouts/${rolloutId}`, { token: keys.viewer }));
    const list = ok(
      await ctx.request('GET', `/api/v1/organizations/${f.organizationId}/rollouts`, { token: keys.viewer }),
    );
    expect(list.body.items.map((r: { id: string }) => r.id)).toContain(rolloutId);
    await writeHeartbeats(ctx); // a timer's batch must not land between the two fingerprints
    const before = await databaseFingerprint(ctx.sql, { columns: { api_keys: ['last_used_at'] } });
    const refused = [
      await create(
        f.organizationId,
        { scope: 'org_unit', scope_id: f.unitId, merkmal: 'qgis', action: 'select' },
        keys.viewer,
      ),
      ...(await Promise.all(
        ['pause', 'resume', 'abort'].map((verb) =>
          ctx.request('POST', `/api/v1/rollouts/${rolloutId}/${verb}`, { token: keys.viewer }),
        ),
      )),
    ];
    for (const res of refused) expect([res.status, res.body.error]).toEqual([403, 'forbidden']);
    await writeHeartbeats(ctx); // a timer's batch must not land between the two fingerprints
    expect(await databaseFingerprint(ctx.sql, { columns: { api_keys: ['last_used_at'] } })).toBe(before);
  });

  it("answers another organization's rollout and scope as unknown ones: 404; the operator gets 422 for the scope", async () => {
    for (const path of [`/api/v1/rollouts/${rolloutId}`, `/api/v1/rollouts/${crypto.randomUUID()}`]) {
      const res = await ctx.request('GET', path, { token: keys.otherAdmin });
      expect([res.status, res.body.error]).toEqual([404, 'not_found']);
    }
    const abort = await ctx.request('POST', `/api/v1/rollouts/${rolloutId}/abort`, { token: keys.otherAdmin });
    expect([abort.status, abort.body.error]).toEqual([404, 'not_found']);
    const body = (scopeId: string) => ({ scope: 'org_unit', scope_id: scopeId, merkmal: 'qgis', action: 'select' });
    const theirs = await create(f.organizationId, body(otherUnit), keys.admin);
    const unknownId = crypto.randomUUID();
    const unknown = await create(f.organizationId, body(unknownId), keys.admin);
    expect([theirs.status, theirs.body.error]).toEqual([404, 'not_found']);
    expect(theirs.body.message.replace(otherUnit, 'ID')).toBe(unknown.body.message.replace(unknownId, 'ID'));
    const operator = await create(f.organizationId, body(otherUnit));
    expect([operator.status, operator.body.error]).toEqual([422, 'organization_mismatch']);
    const group = await create(f.organizationId, { ...body(crypto.randomUUID()), scope: 'group' });
    expect([group.status, group.body.error]).toEqual([404, 'not_found']);
    // An org unit's id given as a group's is no group.
    const mixed = await create(f.organizationId, { ...body(f.unitId), scope: 'group' });
    expect([mixed.status, mixed.body.error]).toEqual([404, 'not_found']);
  });

  it('422 for a Merkmal a selection refuses', async () => {
    const base = { scope: 'org_unit', scope_id: f.unitId, action: 'select' };
    const unknown = await create(f.organizationId, { ...base, merkmal: 'textverarbeitung' });
    expect([unknown.status, unknown.body.error]).toEqual([422, 'unknown_merkmal']);
    const system = await create(f.organizationId, { ...base, merkmal: 'basis' });
    expect([system.status, system.body.error]).toEqual([422, 'not_in_catalog']);
  });

  it('400 for bad input, and nothing changed', async () => {
    const base = { scope: 'org_unit', scope_id: f.unitId, merkmal: 'firefox', action: 'deselect' };
    const bodies: Array<Record<string, unknown>> = [
      {},
      { ...base, scope: 'device' },
      { ...base, action: 'install' },
      { ...base, scope_id: 'nope' },
      { ...base, rings: [] },
      { ...base, rings: [50, 40, 100] },
      { ...base, rings: [50, 50, 100] },
      { ...base, rings: [10, 50] },
      { ...base, rings: [0, 100] },
      { ...base, rings: [10.5, 100] },
      { ...base, rings: [100, 101] },
      { ...base, rings: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 100] },
      { ...base, max_failure_ratio: 1.5 },
      { ...base, max_failure_ratio: -0.1 },
      { ...base, min_reported_ratio: 2 },
      { ...base, soak_seconds: -1 },
      { ...base, soak_seconds: 604_801 },
      { ...base, soak_seconds: 1.5 },
      { ...base, optionen: 'de' },
      { ...base, optionen: [] },
      { ...base, action: 'unset', optionen: {} },
      { ...base, status: 'completed' },
      { ...base, id: crypto.randomUUID() },
    ];
    await writeHeartbeats(ctx); // a timer's batch must not land between the two fingerprints
    const before = await databaseFingerprint(ctx.sql);
    for (const body of bodies) {
      const res = await create(f.organizationId, body);
      expect([res.status, res.body.error], JSON.stringify(body)).toEqual([400, 'invalid_request']);
    }
    const withBody = await ctx.request('POST', `/api/v1/rollouts/${rolloutId}/pause`, { body: { reason: 'x' } });
    expect([withBody.status, withBody.body.error]).toEqual([400, 'invalid_request']);
    await writeHeartbeats(ctx); // a timer's batch must not land between the two fingerprints
    expect(await databaseFingerprint(ctx.sql)).toBe(before);
    // The limits themselves are taken.
    const edge = await create(f.organizationId, {
      ...base,
      rings: [1, 2, 3, 4, 5, 6, 7, 8, 9, 100],
      max_failure_ratio: 0,
      min_reported_ratio: 1,
      soak_seconds: 604_800,
    });
    expect(edge.status, JSON.stringify(edge.body)).toBe(201);
  });
});
