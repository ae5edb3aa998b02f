/**
 * A rollout end to end: the service behind a real HTTP server, a real Graphile worker, and
 * the fleet simulator's agents speaking the protocol over HTTP (bootstrap, check-in with
 * their ETag, a report of every order). Ring 0's devices get the change and no other does;
 * failures above the threshold pause the rollout in ring 0; below it each next ring opens
 * only after the soak; completion writes the scope's override and every device has the change.
 */
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import type { Runner } from 'graphile-worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Caller } from '../../api/access/declaration.ts';
import { listOverrides } from '../../api/catalog/repo.ts';
import { createRollout, getRollout } from '../../api/rollouts/service.ts';
import { startWorker } from '../../jobs/worker.ts';
import { type AgentAnswer, SimAgent } from '../bench/fleet_agent.ts';
import { activateDevice, resolveDevice } from '../support/activation.ts';
import { useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { workerDeps } from '../support/iso_builds.ts';
import { stateEvents } from './judge_support.ts';

const ctx = useTestApp();
const MERKMAL = 'libreoffice'; // absent by default
const POLL = 300;
const operator: Caller = { type: 'operator' };

let server: ReturnType<typeof serve>;
let baseUrl: string;
let worker: Runner;

beforeAll(async () => {
  await new Promise<void>((ready) => {
    server = serve({ fetch: ctx.app.fetch, port: 0, hostname: '127.0.0.1' }, () => ready());
  });
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  worker = await startWorker(ctx.db.url, workerDeps(ctx), 1, { pollIntervalMs: 200 });
});

afterAll(async () => {
  await worker?.stop();
  await new Promise((done) => server?.close(done));
});

interface Device {
  id: string;
  agent: SimAgent;
  /** The state of libreoffice in the device's last 200 check-in. */
  state: () => string | undefined;
}

/** `n` devices activated and resolved in the organization, each with an agent over HTTP; `fails` is asked at each order. */
async function devices(organizationId: string, n: number, fails: (deviceId: string) => boolean): Promise<Device[]> {
  const out: Device[] = [];
  for (let i = 0; i < n; i++) {
    const activated = await activateDevice(ctx, organizationId);
    const blueprint = await resolveDevice(ctx, { code: activated.code, device_id: activated.device_id });
    let last: string | undefined;
    const send = async (path: string, headers: Record<string, string>, body: string): Promise<AgentAnswer> => {
      const res = await fetch(`${baseUrl}${path}`, { method: 'POST', headers, body });
      const text = await res.text();
      if (path.endsWith('/checkin') && res.status === 200) {
        const auftraege = (JSON.parse(text) as { auftraege: Array<{ merkmal: string; state: string }> }).auftraege;
        last = auftraege.find((a) => a.merkmal === MERKMAL)?.state;
      }
      return {
        status: res.status,
        etag: res.headers.get('etag'),
        retryAfter: res.headers.get('retry-after'),
        body: text,
      };
    };
    // Orders of libreoffice fail with probability one half: always for a device that
    // `fails` (its random draw 0), never for the others (0.9).
    const agent = new SimAgent(blueprint.agent.device_id, blueprint.agent.bootstrap_token, send, {
      pollSeconds: POLL,
      failMerkmal: MERKMAL,
      failProbability: 0.5,
      random: () => (fails(activated.device_id) ? 0 : 0.9),
    });
    out.push({ id: activated.device_id, agent, state: () => last });
  }
  return out;
}

/** One round of every agent: check in, and report what a 200 ordered. */
async function cycleAll(fleet: Device[]): Promise<void> {
  for (const d of fleet) {
    const { checkin } = await d.agent.cycle();
    expect([200, 304]).toContain(checkin);
  }
}

async function ringsOf(rolloutId: string): Promise<Map<string, number>> {
  const rows = await ctx.sql<{ device_id: string; ring: number }[]>`
    select device_id, ring::int from rollout_devices where rollout_id = ${rolloutId}`;
  return new Map(rows.map((r) => [r.device_id, r.ring]));
}

/** Cycles the agents until the rollout reaches `status` (the worker judges in between). */
async function cycleUntil(fleet: Device[], rolloutId: string, status: string, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    await cycleAll(fleet);
    const rollout = await getRollout(ctx.sql, rolloutId, POLL);
    if (rollout.status === status) return rollout;
    if (Date.now() > deadline) throw new Error(`rollout still ${rollout.status}: ${JSON.stringify(rollout)}`);
    await new Promise((r) => setTimeout(r, 300));
  }
}

async function create(organizationId: string, unit: string, body: Record<string, unknown>) {
  const { rollout } = await ctx.sql.begin((tx) =>
    createRollout(
      tx,
      organizationId,
      { scope: 'org_unit', scope_id: unit, merkmal: MERKMAL, action: 'select', ...body },
      operator,
      POLL,
    ),
  );
  return rollout;
}

describe('a rollout with real agents, a real server and a real worker', () => {
  it('failures above the threshold pause it in ring 0; no device of a later ring ever gets the change', async () => {
    const org = (await createOrganization(ctx)) as { id: string; default_oe_id: string };
    const fleet = await devices(org.id, 16, () => true); // every libreoffice order fails
    await cycleAll(fleet); // bootstrapped, and the state before: absent everywhere
    expect(fleet.every((d) => d.state() === 'absent')).toBe(true);

    const rollout = await create(org.id, org.default_oe_id, { rings: [30, 60, 100], soak_seconds: 0 });
    const rings = await ringsOf(rollout.id);
    expect(rings.size).toBe(16);
    const ring0 = fleet.filter((d) => rings.get(d.id) === 0);
    const later = fleet.filter((d) => rings.get(d.id) !== 0);
    expect(ring0.length).toBeGreaterThan(0);
    expect(later.length).toBeGreaterThan(0);

    const paused = await cycleUntil(fleet, rollout.id, 'paused', 30_000);
    expect(paused).toMatchObject({ paused_reason: 'failure_ratio', current_ring: 0 });
    expect(paused.rings_detail[0]).toMatchObject({ devices: ring0.length, failed: ring0.length });
    expect(paused.rings_detail.slice(1).every((r) => r.opened_at === null)).toBe(true);

    await cycleAll(fleet);
    for (const d of ring0) expect(d.state()).toBe('present');
    for (const d of later) {
      expect(d.state()).toBe('absent');
      expect(await stateEvents(ctx.sql, d.id, MERKMAL)).toEqual([]);
    }
    const [audit] = await ctx.sql<{ actor: unknown }[]>`
      select actor from audit_events where action = 'rollout.pause' and target_id = ${rollout.id}`;
    expect(audit!.actor).toEqual({ type: 'system' });
  }, 90_000);

  it('below the threshold each ring opens after the soak, and completion writes the override at the scope', async () => {
    const SOAK = 3;
    const org = (await createOrganization(ctx)) as { id: string; default_oe_id: string };
    let failing: string | undefined;
    const fleet = await devices(org.id, 16, (id) => id === failing);
    await cycleAll(fleet);
    const rollout = await create(org.id, org.default_oe_id, {
      rings: [30, 60, 100],
      soak_seconds: SOAK,
      max_failure_ratio: 0.5,
      min_reported_ratio: 0.9,
    });
    const rings = await ringsOf(rollout.id);
    // One device of the largest ring fails: within the ratio there (1 of at least 2).
    const sizes = [0, 1, 2].map((k) => [...rings.values()].filter((r) => r === k).length);
    const largest = sizes.indexOf(Math.max(...sizes));
    failing = fleet.find((d) => rings.get(d.id) === largest)!.id;

    // Ring 0's devices get the change at their next check-in, the others do not.
    await cycleAll(fleet);
    for (const d of fleet) expect(d.state()).toBe(rings.get(d.id) === 0 ? 'present' : 'absent');

    const completed = await cycleUntil(fleet, rollout.id, 'completed', 60_000);
    expect(completed.rings_detail[largest]!.failed).toBe(1);
    const opened = completed.rings_detail.map((r) => Date.parse(r.opened_at!));
    for (let k = 1; k < opened.length; k++) {
      if (sizes[k - 1]! > 0) expect(opened[k]! - opened[k - 1]!).toBeGreaterThanOrEqual(SOAK * 1000);
    }
    expect(Date.parse(completed.completed_at!) - opened.at(-1)!).toBeGreaterThanOrEqual(
      sizes[2]! > 0 ? SOAK * 1000 : 0,
    );
    expect(await listOverrides(ctx.sql, 'org-units', org.default_oe_id)).toEqual([
      expect.objectContaining({ merkmal: MERKMAL, state: 'present' }),
    ]);
    await cycleAll(fleet);
    for (const d of fleet) expect(d.state()).toBe('present');
    const [applied] = await ctx.sql<{ n: number }[]>`
      select count(*)::int as n from rollout_devices where rollout_id = ${rollout.id} and applied`;
    expect(applied!.n).toBe(0);
  }, 120_000);
});
