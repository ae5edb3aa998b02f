/**
 * Rollouts (api/rollouts/README.md), shared by the API routes and the portal: creation with
 * its rings and ring 0 opened, the reads with each ring's figures, and the transitions an
 * admin makes (pause, resume, abort), each with its webhook and its audit entry. What the
 * service does by itself (the next ring, the automatic pause, completion) is the judge's.
 */
import { actorOf, type AuditEntry, type Caller } from '../access/declaration.ts';
import { organizationOf } from '../access/owners.ts';
import { requireCatalogMerkmal, requireNoRollout } from '../catalog/repo.ts';
import { Buffer } from 'node:buffer';
import type { Convergence } from '../devices/repo.ts';
import { type Db, isPgError, pgError, transaction } from '../db/client.ts';
import { ApiError, notFound } from '../http/errors.ts';
import { invalidRequest } from '../http/openapi.ts';
import { decodeCursor, toPage } from '../http/pagination.ts';
import { isUuid } from '../http/uuid.ts';
import { lockOrganization } from '../org_units/lock.ts';
import { requireOrganization } from '../organizations/repo.ts';
import { ringFigures } from './figures.ts';
import { ringVerdict } from './judge.ts';
import { emitRolloutWebhook } from './notify.ts';
import * as repo from './repo.ts';
import {
  assignRings,
  changeOf,
  devicesAltered,
  devicesOfScope,
  openRingOf,
  type RolloutOpening,
  releaseDevices,
  type RolloutScope,
} from './rings.ts';
import { auditDetailsOf, cancelRolloutActions, seesScripts } from '../actions/service.ts';
import { type DeviceActionSpecBody, withDefaults } from '../actions/schemas.ts';
import { scheduleJudge } from './schedule.ts';
import {
  DEFAULT_MAX_FAILURE_RATIO,
  DEFAULT_MIN_REPORTED_RATIO,
  DEFAULT_RINGS,
  DEFAULT_SOAK_SECONDS,
  RolloutCreate,
  type RolloutCreateBody,
  type RolloutDeviceType,
  type RolloutStatus,
  type RolloutType,
} from './schemas.ts';

type Action = 'select' | 'deselect' | 'unset';

/**
 * The Rollout object of a row, with every ring's figures now, and what the current ring
 * waits for by the judge's own rule while the rollout is under way (running or paused).
 */
async function serialize(
  db: Db,
  row: repo.RolloutRow,
  pollIntervalSeconds: number,
  /** Whether the reader sees a script's text (a viewer does not). */
  full = true,
): Promise<RolloutType> {
  const figures = await ringFigures(db, row.id, pollIntervalSeconds);
  const underWay = row.status === 'running' || row.status === 'paused';
  const waitingFor = (ring: (typeof figures)[number]) =>
    underWay && ring.ring === row.current_ring
      ? ringVerdict({
          figures: ring,
          soaked: ring.soaked ?? 0,
          soakSeconds: row.soak_seconds,
          maxFailureRatio: row.max_failure_ratio,
          minReportedRatio: row.min_reported_ratio,
        }).waitingFor
      : null;
  return {
    id: row.id,
    organization_id: row.organization_id,
    scope: row.scope,
    scope_id: row.scope_id,
    merkmal: row.merkmal,
    action: row.action,
    optionen: row.optionen,
    device_action: row.device_action === null ? null : deviceActionOf(row.device_action, full),
    rings: row.rings,
    max_failure_ratio: row.max_failure_ratio,
    min_reported_ratio: row.min_reported_ratio,
    soak_seconds: row.soak_seconds,
    status: row.status,
    paused_reason: row.paused_reason,
    current_ring: row.current_ring,
    created_by: row.created_by as RolloutType['created_by'],
    created_at: row.created_at.toISOString(),
    completed_at: row.completed_at === null ? null : row.completed_at.toISOString(),
    rings_detail: figures.map((f) => ({
      ring: f.ring,
      percent: f.percent,
      devices: f.devices,
      opened_at: f.opened_at === null ? null : new Date(f.opened_at).toISOString(),
      converged: f.converged,
      pending: f.pending,
      failed: f.failed,
      waiting_for: waitingFor(f),
    })),
  };
}

/** A rollout's device action as it reads: every default filled in, a script null for a viewer. */
function deviceActionOf(action: NonNullable<repo.RolloutRow['device_action']>, full: boolean) {
  const parameters = withDefaults(action.type, action.parameters);
  if (!full && action.type === 'script') parameters['script'] = null;
  return { type: action.type, parameters };
}

const scopeLabel: Record<RolloutScope, string> = { org_unit: 'org unit', group: 'group' };

/**
 * The scope's org unit or group belongs to the organization. Unknown is 404; another
 * organization's is 404 for an organization key too (no existence oracle), and 422
 * `organization_mismatch` for the operator, who sees every organization.
 */
async function requireScopeOf(
  db: Db,
  scope: RolloutScope,
  scopeId: string,
  organizationId: string,
  caller: Caller,
): Promise<void> {
  const owner = await organizationOf(db, scope, scopeId);
  if (owner === null || (owner !== organizationId && caller.type === 'api_key')) {
    throw new ApiError('not_found', `${scopeLabel[scope]} ${scopeId} (scope_id) not found`);
  }
  if (owner !== organizationId) {
    throw new ApiError(
      'organization_mismatch',
      `${scopeLabel[scope]} ${scopeId} (scope_id) belongs to another organization`,
    );
  }
}

/**
 * How many devices the change alters now: the portal shows it before an admin confirms a
 * change "all at once" or "in rings". Reads only.
 */
export async function countDevicesAltered(
  db: Db,
  organizationId: string,
  scope: RolloutScope,
  scopeId: string,
  merkmal: string,
  action: Action,
  optionen: Record<string, unknown> = {},
): Promise<number> {
  const ids = await devicesAltered(db, organizationId, scope, scopeId, merkmal, changeOf(action, optionen));
  return ids.length;
}

/**
 * Creates a rollout: the devices of the scope the change alters, each in its ring, ring 0
 * opened at once (its devices get the change at their next check-in), the webhook
 * `rollout.ring_opened` and the judge queued, all in one transaction. `body` is checked
 * here (400 `invalid_request`), so the portal passes what its form sent.
 */
export async function createRollout(
  db: Db,
  organizationId: string,
  body: unknown,
  caller: Caller,
  pollIntervalSeconds: number,
): Promise<{ rollout: RolloutType; audit: AuditEntry }> {
  const parsed = RolloutCreate.safeParse(body);
  if (!parsed.success) throw invalidRequest('json', parsed.error.issues);
  const input: RolloutCreateBody = parsed.data;
  if (input.device_action !== undefined) {
    return createActionRollout(db, organizationId, input, input.device_action, caller, pollIntervalSeconds);
  }
  const { scope, scope_id: scopeId } = input;
  const merkmal = input.merkmal!;
  const action = input.action!;
  const optionen = input.optionen ?? {};
  const actor = actorOf(caller);
  const change = changeOf(action, optionen);
  try {
    return await transaction(db, async (tx) => {
      await requireOrganization(tx, organizationId);
      await requireScopeOf(tx, scope, scopeId, organizationId, caller);
      await requireCatalogMerkmal(tx, merkmal, null);
      // Read before the locks, once (at a large scope it is the costliest step). A selection
      // committed in between is harmless: a device it left unaltered gets no event when its
      // ring opens, and one it made altered gets the change on completion, as a newcomer.
      const deviceIds = await devicesAltered(tx, organizationId, scope, scopeId, merkmal, change);
      // Device rows before the organization's lock, as every change of a device's state takes them.
      await tx`select 1 from devices where id = any(${deviceIds}::uuid[]) order by id for no key update`;
      await lockOrganization(tx, organizationId);
      await requireNoRollout(tx, scopeId, merkmal);
      return startRollout(
        tx,
        { organizationId, input, merkmal, action, optionen, deviceAction: null, actor },
        { merkmal, action, optionen },
        deviceIds,
        pollIntervalSeconds,
      );
    });
  } catch (err) {
    // Another creation for the scope and Merkmal committed first (the partial unique index).
    if (isPgError(err, pgError.uniqueViolation)) {
      const held = await repo.activeRolloutOf(db, scopeId, merkmal).catch(() => null);
      throw new ApiError(
        'rollout_in_progress',
        `${held === null ? 'Another rollout' : `Rollout ${held}`} is changing "${merkmal}" here; pause and abort it, or wait until it completes`,
      );
    }
    throw err;
  }
}

/**
 * A new rollout of either kind, started: its row, its devices in their rings, ring 0 opened
 * (the change or the action given to its devices), the webhook and the judge's first look;
 * with its audit entry, whose details name the scope, what the rollout does (`does`), the
 * rings and the device count.
 */
async function startRollout(
  tx: Db,
  what: {
    organizationId: string;
    input: RolloutCreateBody;
    merkmal: string | null;
    action: Action | null;
    optionen: Record<string, unknown> | null;
    deviceAction: RolloutOpening['deviceAction'];
    actor: ReturnType<typeof actorOf>;
  },
  does: Record<string, unknown>,
  deviceIds: string[],
  pollIntervalSeconds: number,
): Promise<{ rollout: RolloutType; audit: AuditEntry }> {
  const { organizationId, input, actor } = what;
  const rings = input.rings ?? [...DEFAULT_RINGS];
  const row = await repo.insertRollout(tx, {
    organizationId,
    scope: input.scope,
    scopeId: input.scope_id,
    merkmal: what.merkmal,
    action: what.action,
    optionen: what.optionen,
    deviceAction: what.deviceAction,
    rings,
    maxFailureRatio: input.max_failure_ratio ?? DEFAULT_MAX_FAILURE_RATIO,
    minReportedRatio: input.min_reported_ratio ?? DEFAULT_MIN_REPORTED_RATIO,
    soakSeconds: input.soak_seconds ?? DEFAULT_SOAK_SECONDS,
    createdBy: actor,
  });
  await assignRings(tx, row.id, rings, deviceIds);
  await openRingOf(
    tx,
    { id: row.id, organizationId, merkmal: what.merkmal, deviceAction: what.deviceAction, createdBy: actor },
    0,
    actor,
  );
  await emitRolloutWebhook(tx, 'rollout.ring_opened', row.id, { ring: 0 });
  await scheduleJudge(tx, row.id, { kind: 'soon' });
  return {
    rollout: await serialize(tx, (await repo.getRollout(tx, row.id))!, pollIntervalSeconds),
    audit: {
      organizationId,
      targetType: 'rollout',
      targetId: row.id,
      details: { scope: input.scope, scope_id: input.scope_id, ...does, rings, devices: deviceIds.length },
    },
  };
}

/**
 * A rollout of a device action: its devices are the scope's devices not archived or
 * deprovisioned now (an action waits for a device that is offline), each in its ring; ring
 * 0's get the action at once. For a script the admin confirmed a count (`expected_devices`),
 * which must still be the count: else 409 `device_count_changed`. Several may run on one
 * scope. The audit keeps a script's SHA-256 and size, never its text.
 */
async function createActionRollout(
  db: Db,
  organizationId: string,
  input: RolloutCreateBody,
  spec: DeviceActionSpecBody,
  caller: Caller,
  pollIntervalSeconds: number,
): Promise<{ rollout: RolloutType; audit: AuditEntry }> {
  const { scope, scope_id: scopeId } = input;
  const actor = actorOf(caller);
  const deviceAction = { type: spec.type, parameters: withDefaults(spec.type, spec.parameters ?? {}) };
  return transaction(db, async (tx) => {
    await requireOrganization(tx, organizationId);
    await requireScopeOf(tx, scope, scopeId, organizationId, caller);
    const deviceIds = await devicesOfScope(tx, organizationId, scope, scopeId);
    if (input.expected_devices !== undefined && input.expected_devices !== deviceIds.length) {
      throw new ApiError(
        'device_count_changed',
        `the scope has ${deviceIds.length} devices now, not the ${input.expected_devices} expected_devices confirmed; look again and confirm the new count`,
      );
    }
    return startRollout(
      tx,
      { organizationId, input, merkmal: null, action: null, optionen: null, deviceAction, actor },
      { device_action: auditDetailsOf(deviceAction.type, deviceAction.parameters) },
      deviceIds,
      pollIntervalSeconds,
    );
  });
}

/** The rollout with every ring's figures; 404 when there is none with that id. */
export async function getRollout(
  db: Db,
  id: string,
  pollIntervalSeconds: number,
  /** The reader: a script's text only for one that sees scripts (none given: it is left out). */
  caller?: Caller,
): Promise<RolloutType> {
  const row = await repo.getRollout(db, id);
  if (row === null) throw notFound('rollout', id);
  return serialize(db, row, pollIntervalSeconds, caller !== undefined && seesScripts(caller));
}

/** A page of the organization's rollouts, newest first, as every collection (`items`, `next_cursor`). */
export async function listRollouts(
  db: Db,
  organizationId: string,
  query: { status?: RolloutStatus | undefined; cursor?: string | undefined; limit?: number | undefined },
  pollIntervalSeconds: number,
  caller?: Caller,
): Promise<{ items: RolloutType[]; next_cursor: string | null }> {
  const limit = query.limit ?? 100;
  const full = caller !== undefined && seesScripts(caller);
  await requireOrganization(db, organizationId);
  const rows = await repo.listRollouts(db, organizationId, query.status, decodeCursor(query.cursor), limit);
  const page = toPage(rows, limit, (row) => row);
  const items = [];
  for (const row of page.items) items.push(await serialize(db, row, pollIntervalSeconds, full));
  return { items, next_cursor: page.next_cursor };
}

function encodeDeviceKey(row: repo.RolloutDeviceRow): string {
  return Buffer.from(JSON.stringify([row.ring, row.serial, row.device_id])).toString('base64url');
}

/**
 * The key a cursor of `encodeDeviceKey` holds, or null without one. A forged or damaged one
 * (or one of another list) is a 400: it must round-trip exactly, with a ring of 0–9, a
 * serial as the devices table allows one and a UUID, so nothing reaches SQL that
 * PostgreSQL would refuse.
 */
function decodeDeviceKey(cursor: string | undefined): repo.RolloutDeviceKey | null {
  if (cursor === undefined) return null;
  try {
    const parts = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[];
    const [ring, serial, id] = parts;
    if (
      parts.length !== 3 ||
      !Number.isInteger(ring) ||
      (ring as number) < 0 ||
      (ring as number) > 9 ||
      typeof serial !== 'string' ||
      serial.length < 1 ||
      serial.length > 128 ||
      serial.includes('\u0000') ||
      typeof id !== 'string' ||
      !isUuid(id) ||
      Buffer.from(JSON.stringify(parts)).toString('base64url') !== cursor
    ) {
      throw new Error('not a cursor of this list');
    }
    return { ring: ring as number, serial, deviceId: id.toLowerCase() };
  } catch {
    throw new ApiError('invalid_request', 'cursor is not valid', {
      details: [{ path: ['cursor'], message: 'not a cursor of this list' }],
    });
  }
}

/**
 * A page of the rollout's devices by ring, serial and id (`GET /rollouts/{id}/devices`,
 * and the portal's list of a ring's devices): each with its ring, its convergence on the
 * rollout's Merkmal (by the rule the ring figures count with), its last report of it and
 * whether it is stale. 404 for no such rollout; 400 for a ring the rollout does not have.
 */
export async function listRolloutDevices(
  db: Db,
  id: string,
  query: {
    ring?: number | undefined;
    convergence?: Convergence | undefined;
    cursor?: string | undefined;
    limit?: number | undefined;
  },
  pollIntervalSeconds: number,
): Promise<{ items: RolloutDeviceType[]; next_cursor: string | null }> {
  const limit = query.limit ?? 100;
  const after = decodeDeviceKey(query.cursor);
  const row = await repo.getRollout(db, id);
  if (row === null) throw notFound('rollout', id);
  if (query.ring !== undefined && query.ring >= row.rings.length) {
    throw new ApiError('invalid_request', `rollout ${id} has rings 0 to ${row.rings.length - 1}`, {
      details: [{ path: ['ring'], message: `not a ring of this rollout (0 to ${row.rings.length - 1})` }],
    });
  }
  const filter = { ring: query.ring, convergence: query.convergence };
  const rows = await repo.listRolloutDevices(db, id, pollIntervalSeconds, filter, after, limit);
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    items: page.map((r) => ({
      device_id: r.device_id,
      serial_number: r.serial,
      hostname: r.hostname,
      ring: r.ring,
      convergence: r.convergence,
      reported:
        r.reported_event === null
          ? null
          : { event: r.reported_event, at: r.reported_at!.toISOString(), detail: r.reported_detail ?? null },
      stale: r.status === 'stale',
    })),
    next_cursor: rows.length > limit && last ? encodeDeviceKey(last) : null,
  };
}

/**
 * A transition an admin makes, on the rollout's row locked for the rest of the
 * transaction, so it and the judge take turns. 404 for no such rollout, 409
 * `rollout_not_active` for a completed or aborted one.
 */
async function transition(
  db: Db,
  id: string,
  pollIntervalSeconds: number,
  move: (tx: Db, row: repo.RolloutRow) => Promise<boolean>,
): Promise<{ rollout: RolloutType; audit: AuditEntry }> {
  return transaction(db, async (tx) => {
    const row = await repo.getRollout(tx, id, true);
    if (row === null) throw notFound('rollout', id);
    if (row.status === 'completed' || row.status === 'aborted') {
      throw new ApiError(
        'rollout_not_active',
        `Rollout ${id} is ${row.status}; only a running or paused rollout can change`,
      );
    }
    const changed = await move(tx, row);
    const now = changed ? (await repo.getRollout(tx, id))! : row;
    return {
      rollout: await serialize(tx, now, pollIntervalSeconds),
      audit: {
        organizationId: row.organization_id,
        targetType: 'rollout',
        targetId: id,
        details:
          row.device_action === null
            ? { merkmal: row.merkmal, from: row.status, to: now.status }
            : { device_action: { type: row.device_action.type }, from: row.status, to: now.status },
      },
    };
  });
}

/** Pauses a running rollout (reason `manual`): no further ring opens. A paused one is answered as it is. */
export function pauseRollout(db: Db, id: string, _caller: Caller, pollIntervalSeconds: number) {
  return transition(db, id, pollIntervalSeconds, async (tx, row) => {
    if (row.status !== 'running') return false;
    await repo.setStatus(tx, id, 'paused', 'manual');
    await emitRolloutWebhook(tx, 'rollout.paused', id);
    return true;
  });
}

/**
 * Resumes a paused rollout: judging goes on at once. After an automatic pause, the open
 * ring's failures so far are accepted (the admin looked at them), so only new ones count.
 * A running one is answered as it is.
 */
export function resumeRollout(db: Db, id: string, _caller: Caller, pollIntervalSeconds: number) {
  return transition(db, id, pollIntervalSeconds, async (tx, row) => {
    if (row.status !== 'paused') return false;
    if (row.paused_reason === 'failure_ratio') {
      const figures = await ringFigures(tx, id, pollIntervalSeconds);
      const open = figures.find((f) => f.ring === row.current_ring);
      if (open) await repo.acceptFailures(tx, id, open.ring, open.failed);
    }
    await repo.setStatus(tx, id, 'running');
    await scheduleJudge(tx, id, { kind: 'soon' });
    return true;
  });
}

/**
 * Aborts a running or paused rollout: every device of an opened ring gets its previous
 * state back at its next check-in (with its event), and nothing is written at the scope.
 */
export function abortRollout(db: Db, id: string, caller: Caller, pollIntervalSeconds: number) {
  return transition(db, id, pollIntervalSeconds, async (tx, row) => {
    // A device action that has not started is canceled; one under way runs to its end.
    if (row.device_action !== null) await cancelRolloutActions(tx, id);
    else await releaseDevices(tx, { id, organizationId: row.organization_id, merkmal: row.merkmal! }, actorOf(caller));
    await repo.setStatus(tx, id, 'aborted');
    await emitRolloutWebhook(tx, 'rollout.aborted', id);
    return true;
  });
}
