/**
 * Builders of the judge's tests: a rollout written as a creation writes it (its devices
 * from `devicesAltered`, placed in rings, ring 0 opened), optionally with the rings chosen
 * by the test instead of the hash; time passed by moving a ring's opening back; a webhook
 * that takes the rollout events; and the reads the tests assert on.
 */
import { expect } from 'vitest';
import type { Db, Sql } from '../../api/db/client.ts';
import { assignRings, changeOf, devicesAltered, openRing, type RolloutScope } from '../../api/rollouts/rings.ts';
import type { TestContext } from '../support/app.ts';

export interface RolloutInput {
  organizationId: string;
  scope: RolloutScope;
  scopeId: string;
  merkmal: string;
  action: 'select' | 'deselect' | 'unset';
  optionen?: Record<string, unknown>;
  rings?: number[];
  maxFailureRatio?: number;
  minReportedRatio?: number;
  soakSeconds?: number;
  /** Each device's ring, instead of the hash's (devices left out are not the rollout's). */
  placement?: Map<string, number>;
}

/** A running rollout with ring 0 open, as `createRollout` leaves it; returns its id. */
export async function insertRollout(sql: Sql, input: RolloutInput): Promise<string> {
  const rings = input.rings ?? [10, 50, 100];
  const optionen = input.optionen ?? {};
  return sql.begin(async (tx) => {
    const [row] = await tx<{ id: string }[]>`
      insert into rollouts (organization_id, scope, scope_id, merkmal, action, optionen, rings,
                            max_failure_ratio, min_reported_ratio, soak_seconds, created_by)
      values (${input.organizationId}, ${input.scope}, ${input.scopeId}, ${input.merkmal}, ${input.action},
              ${tx.json(optionen as never)}, ${rings}::smallint[], ${input.maxFailureRatio ?? 0.1},
              ${input.minReportedRatio ?? 0.9}, ${input.soakSeconds ?? 3600}, ${tx.json({ type: 'operator' })})
      returning id`;
    const id = row!.id;
    if (input.placement) {
      await place(tx, id, rings, input.placement);
    } else {
      const ids = await devicesAltered(
        tx,
        input.organizationId,
        input.scope,
        input.scopeId,
        input.merkmal,
        changeOf(input.action, optionen),
      );
      await assignRings(tx, id, rings, ids);
    }
    await openRing(tx, { id, organizationId: input.organizationId, merkmal: input.merkmal }, 0, { type: 'operator' });
    return id;
  });
}

async function place(db: Db, rolloutId: string, rings: number[], placement: Map<string, number>): Promise<void> {
  const ids = [...placement.keys()];
  await db`
    insert into rollout_devices (rollout_id, device_id, ring)
    select ${rolloutId}, x.id, x.ring from unnest(${ids}::uuid[], ${ids.map((d) => placement.get(d)!)}::int[]) as x (id, ring)`;
  await db`
    insert into rollout_rings (rollout_id, ring, percent, devices)
    select ${rolloutId}, r.i - 1, r.percent,
           (select count(*) from rollout_devices d where d.rollout_id = ${rolloutId} and d.ring = r.i - 1)
    from unnest(${rings}::int[]) with ordinality as r (percent, i)`;
}

/** As if `seconds` had passed since the rollout's rings opened. */
export async function soak(sql: Sql, rolloutId: string, seconds = 7200): Promise<void> {
  await sql`
    update rollout_rings set opened_at = opened_at - make_interval(secs => ${seconds})
    where rollout_id = ${rolloutId} and opened_at is not null`;
}

/** A webhook of the organization that takes every rollout event (never delivered here). */
export async function subscribeRolloutEvents(sql: Sql, organizationId: string): Promise<void> {
  await sql`
    insert into webhooks (organization_id, url, events, secret_sealed)
    values (${organizationId}, 'https://hooks.example.com/fleet',
            array['rollout.ring_opened', 'rollout.paused', 'rollout.completed', 'rollout.aborted'],
            ${sql.json({ sealed: 'not used' })})`;
}

export interface RolloutState {
  status: string;
  paused_reason: string | null;
  current_ring: number;
  completed_at: Date | null;
}

export async function rolloutState(sql: Sql, id: string): Promise<RolloutState> {
  const [row] = await sql<RolloutState[]>`
    select status, paused_reason, current_ring::int, completed_at from rollouts where id = ${id}`;
  expect(row, `rollout ${id}`).toBeDefined();
  return row!;
}

/** The webhook events of the rollout, oldest first. */
export async function rolloutWebhooks(sql: Sql, id: string) {
  return sql<{ type: string; data: Record<string, unknown> }[]>`
    select type, data from webhook_events where data ->> 'rollout_id' = ${id} order by created_at, type`;
}

/** The rollout's devices that are applied now. */
export async function appliedDevices(sql: Sql, id: string): Promise<string[]> {
  const rows = await sql<{ device_id: string }[]>`
    select device_id from rollout_devices where rollout_id = ${id} and applied order by device_id`;
  return rows.map((r) => r.device_id);
}

/** The device's `selected`/`deselected` events of the Merkmal, oldest first. */
export async function stateEvents(sql: Sql, deviceId: string, merkmal: string) {
  return sql<{ type: string; payload: Record<string, unknown> }[]>`
    select type, payload from device_merkmal_events
    where device_id = ${deviceId} and merkmal = ${merkmal} and type in ('selected', 'deselected') order by seq`;
}

/** The judge's jobs queued for the rollout, by key. */
export async function judgeJobs(sql: Sql, id: string) {
  return sql<{ key: string; run_at: Date }[]>`
    select key, run_at from graphile_worker.jobs
    where task_identifier = 'judge_rollout' and key like ${`judge_rollout:${id}:%`} order by key`;
}

/** Reports one outcome of `merkmal` through the real report route. */
export async function reportOutcome(
  ctx: TestContext,
  secret: string,
  merkmal: string,
  event: 'applied' | 'apply_failed' | 'removed' | 'remove_failed',
): Promise<void> {
  const res = await ctx.request('POST', '/api/v1/agent/report', {
    token: secret,
    body: { entries: [{ merkmal, event, detail: `${event} by the test` }] },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}
