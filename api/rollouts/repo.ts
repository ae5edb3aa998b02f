/**
 * The rollouts' rows: inserting one, reading one or a page of an organization's, and
 * moving its status. The rules of each transition are in service.ts.
 */
import type { Actor } from '../access/declaration.ts';
import { afterCursor } from '../db/keyset.ts';
import type { Db } from '../db/client.ts';
import type { Cursor } from '../http/pagination.ts';
import type { ReportedEvent } from '../catalog/outcomes.ts';
import type { Convergence } from '../devices/repo.ts';
import { rolloutDevices } from './figures.ts';
import type { RolloutScope } from './rings.ts';
import type { RolloutStatus } from './schemas.ts';
import type { ActionType } from '../actions/schemas.ts';

export interface RolloutRow {
  id: string;
  organization_id: string;
  scope: RolloutScope;
  scope_id: string;
  /** Null, with `action` and `optionen`, for a rollout of a device action. */
  merkmal: string | null;
  action: 'select' | 'deselect' | 'unset' | null;
  optionen: Record<string, unknown> | null;
  /** The device action its rings get (`{ type, parameters }`, defaults filled in); null for a catalog change. */
  device_action: { type: ActionType; parameters: Record<string, unknown> } | null;
  rings: number[];
  max_failure_ratio: number;
  min_reported_ratio: number;
  soak_seconds: number;
  status: RolloutStatus;
  paused_reason: 'failure_ratio' | 'manual' | null;
  current_ring: number;
  created_by: Actor;
  created_at: Date;
  completed_at: Date | null;
}

const columns = (db: Db) => db`
  id, organization_id, scope, scope_id, merkmal, action, optionen, device_action, rings::int[] as rings, max_failure_ratio,
  min_reported_ratio, soak_seconds, status, paused_reason, current_ring::int as current_ring, created_by,
  created_at, completed_at`;

export interface NewRollout {
  organizationId: string;
  scope: RolloutScope;
  scopeId: string;
  merkmal: string | null;
  action: RolloutRow['action'];
  optionen: Record<string, unknown> | null;
  deviceAction: RolloutRow['device_action'];
  rings: number[];
  maxFailureRatio: number;
  minReportedRatio: number;
  soakSeconds: number;
  createdBy: Actor;
}

/** Inserts a running rollout. A unique violation means another is running or paused for the scope and Merkmal. */
export async function insertRollout(db: Db, r: NewRollout): Promise<RolloutRow> {
  const [row] = await db<RolloutRow[]>`
    insert into rollouts (organization_id, scope, scope_id, merkmal, action, optionen, device_action, rings,
                          max_failure_ratio, min_reported_ratio, soak_seconds, created_by, created_at)
    values (${r.organizationId}, ${r.scope}, ${r.scopeId}, ${r.merkmal}, ${r.action},
            ${r.optionen === null ? null : db.json(r.optionen as Parameters<Db['json']>[0])},
            ${r.deviceAction === null ? null : db.json(r.deviceAction as Parameters<Db['json']>[0])},
            ${r.rings}::smallint[], ${r.maxFailureRatio},
            ${r.minReportedRatio}, ${r.soakSeconds}, ${db.json(r.createdBy as Parameters<Db['json']>[0])},
            now_ms())
    returning ${columns(db)}`;
  return row!;
}

/** The rollout, or null; `lock`: its row locked for the rest of the transaction (a transition, the judge). */
export async function getRollout(db: Db, id: string, lock = false): Promise<RolloutRow | null> {
  const [row] = lock
    ? await db<RolloutRow[]>`select ${columns(db)} from rollouts where id = ${id} for update`
    : await db<RolloutRow[]>`select ${columns(db)} from rollouts where id = ${id}`;
  return row ?? null;
}

/** The running or paused rollout of the scope and Merkmal, if any. */
export async function activeRolloutOf(db: Db, scopeId: string, merkmal: string): Promise<string | null> {
  const [row] = await db<{ id: string }[]>`
    select id from rollouts where scope_id = ${scopeId} and merkmal = ${merkmal} and status in ('running', 'paused')`;
  return row?.id ?? null;
}

/** Newest first, keyset-paged on (created_at, id) descending. */
export async function listRollouts(
  db: Db,
  organizationId: string,
  status: RolloutStatus | undefined,
  cursor: Cursor | null,
  limit: number,
): Promise<RolloutRow[]> {
  return db<RolloutRow[]>`
    select ${columns(db)} from rollouts
    where organization_id = ${organizationId}
      and ${status === undefined ? db`true` : db`status = ${status}`}
      and ${afterCursor(db, cursor, 'desc')}
    order by created_at desc, id desc
    limit ${limit + 1}`;
}

/** Moves the rollout to `status` (with its pause reason; completion and abort stamp `completed_at`). */
export async function setStatus(
  db: Db,
  id: string,
  status: RolloutStatus,
  pausedReason: RolloutRow['paused_reason'] = null,
): Promise<void> {
  const ended = status === 'completed' || status === 'aborted';
  await db`
    update rollouts set status = ${status}, paused_reason = ${pausedReason},
           completed_at = ${ended ? db`now_ms()` : db`completed_at`}
    where id = ${id}`;
}

/** The open ring's failures so far become accepted: the judge counts only failures beyond them. */
export async function acceptFailures(db: Db, id: string, ring: number, failed: number): Promise<void> {
  await db`update rollout_rings set accepted_failures = ${failed} where rollout_id = ${id} and ring = ${ring}`;
}

/** A device of the rollout as its list shows it (`rolloutDevices`). */
export interface RolloutDeviceRow {
  ring: number;
  device_id: string;
  serial: string;
  hostname: string | null;
  status: 'archived' | 'deprovisioned' | 'enrolled' | 'stale' | 'active';
  convergence: Convergence | null;
  reported_event: ReportedEvent | null;
  reported_at: Date | null;
  reported_detail: unknown;
}

/** Where a page of the rollout's devices starts: after this ring, serial and device id. */
export interface RolloutDeviceKey {
  ring: number;
  serial: string;
  deviceId: string;
}

/**
 * Up to `limit + 1` of the rollout's devices (one more tells that there are more), by
 * ring, serial and id, after `after`; of one ring and of one convergence when asked.
 */
export async function listRolloutDevices(
  db: Db,
  rolloutId: string,
  pollIntervalSeconds: number,
  filter: { ring?: number | undefined; convergence?: Convergence | undefined },
  after: RolloutDeviceKey | null,
  limit: number,
): Promise<RolloutDeviceRow[]> {
  return db<RolloutDeviceRow[]>`
    select x.ring, x.device_id, x.serial, x.hostname, x.status, x.convergence,
           x.reported_event, x.reported_at, x.reported_detail
    from (${rolloutDevices(db, rolloutId, pollIntervalSeconds)}) x
    where ${filter.ring === undefined ? db`true` : db`x.ring = ${filter.ring}`}
      and ${filter.convergence === undefined ? db`true` : db`x.convergence = ${filter.convergence}`}
      and ${after === null ? db`true` : db`(x.ring, x.serial, x.device_id) > (${after.ring}, ${after.serial}, ${after.deviceId}::uuid)`}
    order by x.ring, x.serial, x.device_id
    limit ${limit + 1}`;
}
