/**
 * Device actions (api/actions/README.md), shared by the API routes, the agent's calls and
 * the rollouts that queue them in rings: create, list, read, cancel; the agent's start and
 * result; expiry. Never a script's text or an output in an audit entry, an event, a
 * webhook or a log: the audit gets a script's SHA-256 and size.
 */
import { Buffer } from 'node:buffer';
import { actorOf, type Actor, type AuditEntry, type Caller } from '../access/declaration.ts';
import { deviceExists } from '../devices/lifecycle_repo.ts';
import { type Db, transaction } from '../db/client.ts';
import { hashSecret } from '../http/crypto.ts';
import { ApiError, notFound } from '../http/errors.ts';
import { invalidRequest } from '../http/openapi.ts';
import { decodeCursor, toPage } from '../http/pagination.ts';
import * as repo from './repo.ts';
import {
  ActionCreate,
  type ActionObject,
  type ActionResultBody,
  type ActionStatus,
  type ActionType,
  DEFAULT_EXPIRY_SECONDS,
  type DeliveredActionType,
  MAX_EXPIRY_SECONDS,
  MAX_OUTPUT_BYTES,
  MIN_EXPIRY_SECONDS,
  withDefaults,
} from './schemas.ts';

/** Whether the reader may see scripts and outputs: a `viewer` key never does. */
export function seesScripts(caller: Caller): boolean {
  return !(caller.type === 'api_key' && caller.role === 'viewer');
}

/** The Action object of a row; for a viewer `parameters.script` and `result.output` are null. */
function serializeAction(row: repo.ActionRow, full: boolean): ActionObject {
  const parameters = withDefaults(row.type, row.parameters);
  if (!full && row.type === 'script') parameters['script'] = null;
  return {
    id: row.id,
    organization_id: row.organization_id,
    device_id: row.device_id,
    type: row.type,
    parameters,
    status: row.status,
    created_by: row.created_by as ActionObject['created_by'],
    created_at: row.created_at.toISOString(),
    expires_at: row.expires_at.toISOString(),
    delivered_at: row.delivered_at?.toISOString() ?? null,
    started_at: row.started_at?.toISOString() ?? null,
    finished_at: row.finished_at?.toISOString() ?? null,
    result:
      row.result === null
        ? null
        : {
            exit_code: row.result.exit_code,
            output: full ? row.result.output : null,
            duration_ms: row.result.duration_ms,
            details: row.result.details ?? {},
          },
    rollout_id: row.rollout_id,
  };
}

/** What the audit log keeps of an action's parameters: a script as its SHA-256 and size, never its text. */
export function auditDetailsOf(type: ActionType, parameters: Record<string, unknown>): Record<string, unknown> {
  if (type !== 'script') return { type };
  const script = String(parameters['script'] ?? '');
  return { type, sha256: Buffer.from(hashSecret(script)).toString('hex'), size: Buffer.byteLength(script, 'utf8') };
}

/** Seconds from now to `expires_at` (default 7 days), 400 unless 60 s to 30 days ahead. */
function expiresIn(expiresAt: string | undefined): number {
  if (expiresAt === undefined) return DEFAULT_EXPIRY_SECONDS;
  const seconds = (Date.parse(expiresAt) - Date.now()) / 1000;
  if (!(seconds >= MIN_EXPIRY_SECONDS && seconds <= MAX_EXPIRY_SECONDS)) {
    throw invalidRequest('json', [
      { path: ['expires_at'], message: 'must be at least 60 seconds and at most 30 days ahead' },
    ]);
  }
  return seconds;
}

/** 409 for a device whose actions can no longer run. */
function requireManaged(device: repo.ActionDevice): void {
  if (device.archived_at !== null) {
    throw new ApiError('device_archived', `device ${device.id} is archived: it takes no actions`, { status: 409 });
  }
  if (device.deprovisioned_at !== null) {
    throw new ApiError(
      'device_deprovisioned',
      `device ${device.id} is deprovisioned: it takes no actions until an admin reprovisions it`,
      { status: 409 },
    );
  }
}

/**
 * Queues an action for the device (pending until its next check-in), its parameters with
 * every default filled in. `body` is checked here (400), so the portal passes its form's.
 */
export async function createAction(
  db: Db,
  deviceId: string,
  body: unknown,
  caller: Caller,
): Promise<{ action: ActionObject; audit: AuditEntry }> {
  const parsed = ActionCreate.safeParse(body);
  if (!parsed.success) throw invalidRequest('json', parsed.error.issues);
  const input = parsed.data;
  const expiresInSeconds = expiresIn(input.expires_at);
  const parameters = withDefaults(input.type, input.parameters ?? {});
  return transaction(db, async (tx) => {
    const device = await repo.lockDevice(tx, deviceId);
    if (device === null) throw notFound('device', deviceId);
    requireManaged(device);
    const row = await repo.insertAction(tx, deviceId, {
      organizationId: device.organization_id,
      type: input.type,
      parameters,
      createdBy: actorOf(caller),
      expiresInSeconds,
      rolloutId: null,
    });
    return {
      action: serializeAction(row, true),
      audit: {
        organizationId: device.organization_id,
        targetType: 'action',
        targetId: row.id,
        details: auditDetailsOf(row.type, row.parameters),
      },
    };
  });
}

/** A page of the device's actions, newest first; 404 for no such device. */
export async function listActions(
  db: Db,
  deviceId: string,
  query: { status?: ActionStatus | undefined; cursor?: string | undefined; limit?: number | undefined },
  caller: Caller,
): Promise<{ items: ActionObject[]; next_cursor: string | null }> {
  const limit = query.limit ?? 100;
  const cursor = decodeCursor(query.cursor);
  const [exists, rows] = await Promise.all([
    deviceExists(db, deviceId),
    repo.listActions(db, deviceId, query.status, cursor, limit),
  ]);
  if (!exists) throw notFound('device', deviceId);
  const full = seesScripts(caller);
  return toPage(rows, limit, (row) => serializeAction(row, full));
}

export async function getAction(db: Db, id: string, caller: Caller): Promise<ActionObject> {
  const row = await repo.getAction(db, id);
  if (row === null) throw notFound('action', id);
  return serializeAction(row, seesScripts(caller));
}

/** Pending or delivered → canceled; anything else (an overdue one is expired) 409 `action_not_cancelable`. */
export async function cancelAction(db: Db, id: string): Promise<{ action: ActionObject; audit: AuditEntry }> {
  const row = await repo.cancel(db, id);
  if (row === null) {
    const found = await repo.getAction(db, id);
    if (found === null) throw notFound('action', id);
    throw new ApiError(
      'action_not_cancelable',
      `action ${id} is ${found.status}; only a pending or delivered action can be canceled`,
    );
  }
  return {
    action: serializeAction(row, true),
    audit: { organizationId: row.organization_id, targetType: 'action', targetId: id, details: { type: row.type } },
  };
}

/** The 409 of an agent's call for an action in `status`, or null when the call may go on. */
function agentRefusal(id: string, status: ActionStatus, call: 'start' | 'result'): ApiError | null {
  if (status === 'succeeded' || status === 'failed') {
    return new ApiError('action_finished', `action ${id} is ${status}; it takes no more ${call}s`);
  }
  if (call === 'start') {
    if (status === 'canceled' || status === 'expired') {
      return new ApiError('action_not_pending', `action ${id} is ${status}; do not run it`);
    }
    return null;
  }
  if (status !== 'running') {
    return new ApiError('action_not_running', `action ${id} is ${status}; only a running action takes a result`);
  }
  return null;
}

/**
 * The agent starts one of its device's actions: pending or delivered → running; again for
 * one already running (a retry after a lost answer). An overdue one is written expired
 * (its webhook fires) and refused. 404 for an action of another device.
 */
export async function startAction(db: Db, deviceId: string, id: string): Promise<void> {
  const refusal = await transaction(db, async (tx) => {
    const row = await repo.lockDeviceAction(tx, deviceId, id);
    if (row === null) throw notFound('action', id);
    if (row.status === 'running') return null;
    const refused = agentRefusal(id, row.status, 'start');
    if (refused !== null) {
      // Overdue reads as expired: write it so (the webhook goes with it), then refuse.
      if (row.status === 'expired') await repo.expire(tx, id);
      return refused;
    }
    await repo.start(tx, id);
    return null;
  });
  if (refusal !== null) throw refusal;
}

/** The last `max` bytes of UTF-8 text, starting at a character. */
function lastBytes(text: string, max: number): string {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= max) return text;
  let start = bytes.length - max;
  while (start < bytes.length && (bytes[start]! & 0xc0) === 0x80) start++;
  return bytes.subarray(start).toString('utf8');
}

/**
 * The agent's one result of a running action: `succeeded` for exit code 0, else `failed`
 * (webhook `action.finished` by trigger). A second result is 409 `action_finished` and
 * changes nothing; one for an action not running 409 `action_not_running`.
 * Returns the action's rollout, whose judge may have news.
 */
export async function finishAction(
  db: Db,
  deviceId: string,
  id: string,
  body: ActionResultBody,
): Promise<{ rolloutId: string | null }> {
  return transaction(db, async (tx) => {
    const row = await repo.lockDeviceAction(tx, deviceId, id);
    if (row === null) throw notFound('action', id);
    const refused = agentRefusal(id, row.status, 'result');
    if (refused !== null) throw refused;
    await repo.finish(tx, id, body.exit_code === 0 ? 'succeeded' : 'failed', {
      exit_code: body.exit_code,
      output: lastBytes(body.output, MAX_OUTPUT_BYTES),
      duration_ms: body.duration_ms,
      details: (body.details ?? {}) as Record<string, unknown>,
    });
    return { rolloutId: row.rollout_id };
  });
}

/** An open action as the check-in's read returns it (`repo.openActionsColumn`). */
interface OpenAction {
  id: string;
  type: ActionType;
  parameters: Record<string, unknown>;
  status: 'pending' | 'delivered';
  expires_at: number;
}

/**
 * The check-in's `actions` from the read's column (null: the device has none), with every
 * default filled in; `pending`: those not yet delivered, which the answer delivers.
 */
export function checkinActions(column: string | null): { actions: DeliveredActionType[]; pending: string[] } {
  if (column === null) return { actions: [], pending: [] };
  const open = JSON.parse(column) as OpenAction[];
  return {
    actions: open.map((a) => ({
      id: a.id,
      type: a.type,
      parameters: withDefaults(a.type, a.parameters),
      expires_at: new Date(a.expires_at).toISOString(),
    })),
    pending: open.filter((a) => a.status === 'pending').map((a) => a.id),
  };
}

/** The answer carried these: pending → delivered. */
export async function markDelivered(db: Db, ids: string[]): Promise<void> {
  if (ids.length > 0) await repo.markDelivered(db, ids);
}

/** Marks overdue actions expired, a batch at a time; returns them with their rollouts. */
export async function expireDueActions(db: Db, batch = 1000): Promise<{ id: string; rollout_id: string | null }[]> {
  return repo.expireDue(db, batch);
}

/**
 * Queues a rollout's action for the devices of a ring that opened (those still managed),
 * each expiring 7 days later; returns how many were queued. The caller holds the rollout.
 */
export async function queueRolloutActions(
  db: Db,
  deviceIds: string[],
  input: {
    organizationId: string;
    rolloutId: string;
    type: ActionType;
    parameters: Record<string, unknown>;
    createdBy: Actor;
  },
): Promise<number> {
  if (deviceIds.length === 0) return 0;
  return repo.insertActions(db, deviceIds, {
    organizationId: input.organizationId,
    type: input.type,
    parameters: withDefaults(input.type, input.parameters),
    createdBy: input.createdBy,
    expiresInSeconds: DEFAULT_EXPIRY_SECONDS,
    rolloutId: input.rolloutId,
  });
}

/** An aborted rollout's actions that have not started are canceled. */
export async function cancelRolloutActions(db: Db, rolloutId: string): Promise<number> {
  return repo.cancelOfRollout(db, rolloutId);
}
