/**
 * The judge of a running rollout (api/rollouts/README.md, Judging): over the open ring's
 * devices that are live and not stale, it pauses the rollout when too many of those that
 * reported failed, opens the next ring once the soak has passed and enough reported (on
 * evidence, never on silence: a ring without a live device waits), and
 * after the last ring writes the change at the scope as a selection would and completes.
 *
 * One transaction with the rollout's row locked `for update`: two workers judging the same
 * rollout at once judge one after the other, and the second finds what the first did (the
 * ring already open, the rollout already paused), so a ring opens once and a pause is made
 * once.
 */
import { insertAuditEvent } from '../access/audit_events.ts';
import type { Actor, AuditAction } from '../access/declaration.ts';
import { changeOverride } from '../catalog/repo.ts';
import { type Db, transaction } from '../db/client.ts';
import { ApiError } from '../http/errors.ts';
import { type RingFigures, ringFigures } from './figures.ts';
import { auditBySystem, emitRolloutWebhook } from './notify.ts';
import { changeOf, openRingOf, releaseDevices, type RolloutOpening } from './rings.ts';
import type * as repo from './repo.ts';
import { JUDGE_INTERVAL_SECONDS, scheduleJudge } from './schedule.ts';

export type JudgeOutcome = 'paused' | 'ring_opened' | 'completed' | 'aborted' | 'waiting' | 'not_running';

/** A ring passes only once at least min(5, its live devices) reported; as many must report before a pause. */
const MIN_REPORTS = 5;

const system: Actor = { type: 'system' };

/** The rollout's row as the judge reads it. */
type RolloutRow = Omit<repo.RolloutRow, 'paused_reason' | 'created_at' | 'completed_at'>;

/**
 * What the current ring still waits for before the next may open, the first unmet of:
 * `no_live_devices` (none of its devices is live), `soak` (until `until`), `reports`.
 * `reported`: its live devices that reported since the change reached them; `needed`: the
 * reports it takes in all, max(min(5, live), ⌈min_reported_ratio × live⌉).
 */
export interface WaitingFor {
  reason: 'no_live_devices' | 'soak' | 'reports';
  until?: string;
  reported: number;
  needed: number;
}

/** What the judge sees of a ring: its devices, its live devices' figures, the failures not accepted, its soak. */
interface RingVerdictInput {
  figures: Pick<RingFigures, 'members' | 'converged' | 'pending' | 'failed' | 'accepted_failures' | 'opened_at'>;
  /** Seconds since the ring opened. */
  soaked: number;
  soakSeconds: number;
  maxFailureRatio: number;
  minReportedRatio: number;
}

/**
 * The rule, without I/O, and its one place (the judge acts on `verdict`, the Rollout object
 * shows `waitingFor`). A ring passes on evidence, never on silence:
 * - `pause` when failures beyond the accepted ones are more than the ratio allows of those
 *   that reported, once at least min(5, live) reported;
 * - `pass` at once for an empty ring (none of its devices is still managed); else when it
 *   has a live device, the soak has passed and `needed` of its live devices reported;
 * - else `wait`, for what `waitingFor` names. A ring none of whose devices is live waits.
 */
export function ringVerdict(input: RingVerdictInput): {
  verdict: 'pause' | 'pass' | 'wait';
  waitingFor: WaitingFor | null;
} {
  const { members, converged, pending, failed, accepted_failures } = input.figures;
  const live = converged + pending + failed;
  const reported = converged + failed;
  // Ratios such as 0.7 × 10 are 7.000000000000001 in floating point: not a report more.
  const needed = Math.max(Math.min(MIN_REPORTS, live), Math.ceil(input.minReportedRatio * live - 1e-9));
  const waitingFor = members === 0 ? null : firstUnmet(input, live, reported, needed);
  const failing = Math.max(0, failed - accepted_failures);
  const tooMany = reported > 0 && failing / reported > input.maxFailureRatio;
  if (failing > 0 && reported >= Math.min(MIN_REPORTS, live) && tooMany) return { verdict: 'pause', waitingFor };
  // Past every condition the failures are within the ratio: with `needed` reported, too many would have paused.
  return waitingFor === null ? { verdict: 'pass', waitingFor } : { verdict: 'wait', waitingFor };
}

/** The first condition of the next ring a ring with devices does not meet, or null. */
function firstUnmet(input: RingVerdictInput, live: number, reported: number, needed: number): WaitingFor | null {
  if (live === 0) return { reason: 'no_live_devices', reported, needed };
  if (input.soaked < input.soakSeconds) {
    const opened = input.figures.opened_at === null ? Date.now() : new Date(input.figures.opened_at).getTime();
    return { reason: 'soak', until: new Date(opened + input.soakSeconds * 1000).toISOString(), reported, needed };
  }
  if (reported < needed) return { reason: 'reports', reported, needed };
  return null;
}

/**
 * Judges the rollout once; returns what it did. Only a running rollout is judged. While it
 * still runs afterwards the next look is queued, at most JUDGE_INTERVAL_SECONDS away and
 * sooner when the soak ends sooner.
 */
export async function judgeRollout(
  db: Db,
  rolloutId: string,
  options: { pollIntervalSeconds: number; requestId: string },
): Promise<JudgeOutcome> {
  return transaction(db, async (tx) => {
    const [rollout] = await tx<RolloutRow[]>`
      select r.id, r.organization_id, r.scope, r.scope_id, r.merkmal, r.action, r.optionen, r.device_action,
             r.created_by, r.rings::int[] as rings, r.max_failure_ratio, r.min_reported_ratio, r.soak_seconds, r.status,
             r.current_ring::int as current_ring
      from rollouts r where r.id = ${rolloutId}
      for update of r`;
    if (rollout?.status !== 'running') return 'not_running';

    const ring = (await ringFigures(tx, rollout.id, options.pollIntervalSeconds)).find(
      (f) => f.ring === rollout.current_ring,
    );
    if (!ring) throw new Error(`rollout ${rollout.id} has no ring ${rollout.current_ring}`);
    const soaked = ring.soaked ?? 0;
    const { verdict } = ringVerdict({
      figures: ring,
      soaked,
      soakSeconds: rollout.soak_seconds,
      maxFailureRatio: rollout.max_failure_ratio,
      minReportedRatio: rollout.min_reported_ratio,
    });

    if (verdict === 'pause') {
      await pause(tx, rollout, ring, options.requestId);
      return 'paused';
    }
    if (verdict === 'wait') {
      await scheduleJudge(tx, rollout.id, { kind: 'next', inSeconds: untilSoaked(rollout.soak_seconds, soaked) });
      return 'waiting';
    }
    const next = rollout.current_ring + 1;
    if (next < rollout.rings.length) {
      await openRingOf(tx, openingOf(rollout), next, system);
      await emitRolloutWebhook(tx, 'rollout.ring_opened', rollout.id, { ring: next });
      await scheduleJudge(tx, rollout.id, { kind: 'next', inSeconds: untilSoaked(rollout.soak_seconds, 0) });
      return 'ring_opened';
    }
    return complete(tx, rollout, options.requestId);
  });
}

function untilSoaked(soakSeconds: number, soaked: number): number {
  return Math.min(JUDGE_INTERVAL_SECONDS, Math.max(0, soakSeconds - soaked));
}

/** A rollout of a Merkmal's change (never of a device action), as its rings see it. */
function refOf(rollout: RolloutRow) {
  return { id: rollout.id, organizationId: rollout.organization_id, merkmal: rollout.merkmal! };
}

function openingOf(rollout: RolloutRow): RolloutOpening {
  return {
    id: rollout.id,
    organizationId: rollout.organization_id,
    merkmal: rollout.merkmal,
    deviceAction: rollout.device_action,
    createdBy: rollout.created_by,
  };
}

async function pause(db: Db, rollout: RolloutRow, ring: RingFigures, requestId: string): Promise<void> {
  await db`update rollouts set status = 'paused', paused_reason = 'failure_ratio' where id = ${rollout.id}`;
  const figures = {
    ring: ring.ring,
    devices: ring.converged + ring.pending + ring.failed,
    converged: ring.converged,
    pending: ring.pending,
    failed: ring.failed,
    accepted_failures: ring.accepted_failures,
  };
  await auditBySystem(
    db,
    rollout.organization_id,
    'rollout.pause',
    rollout.id,
    { reason: 'failure_ratio', max_failure_ratio: rollout.max_failure_ratio, ...figures },
    requestId,
  );
  await emitRolloutWebhook(db, 'rollout.paused', rollout.id, figures);
}

const selectionActions: Record<NonNullable<RolloutRow['action']>, AuditAction> = {
  select: 'catalog.select',
  deselect: 'catalog.deselect',
  unset: 'catalog.unset',
};

/**
 * The last ring passed: the change is written at the scope as a selection writes it (its
 * events for the devices that do not have it yet, its audit row, by the system), then the
 * rollout lets go of its devices, which the scope now gives the same state (no events).
 * The rollout is completed first: a selection at a scope a running rollout holds is
 * refused. A scope deleted meanwhile aborts the rollout instead.
 */
async function complete(db: Db, rollout: RolloutRow, requestId: string): Promise<JudgeOutcome> {
  await db`update rollouts set status = 'completed', completed_at = now() where id = ${rollout.id}`;
  // A device action's rings hold nothing to write at the scope: every device had its action.
  if (rollout.device_action !== null) {
    await emitRolloutWebhook(db, 'rollout.completed', rollout.id);
    return 'completed';
  }
  const change = changeOf(rollout.action!, rollout.optionen!);
  const scope = rollout.scope === 'org_unit' ? 'org-units' : 'groups';
  try {
    await changeOverride(db, scope, rollout.scope_id, rollout.merkmal!, change, system);
  } catch (err) {
    if (err instanceof ApiError && err.code === 'not_found') return abortForLostScope(db, rollout, requestId);
    throw err;
  }
  await insertAuditEvent(db, {
    organizationId: rollout.organization_id,
    action: selectionActions[rollout.action!],
    caller: 'system',
    requestId,
    targetType: rollout.scope,
    targetId: rollout.scope_id,
    details:
      change.kind === 'set'
        ? { merkmal: rollout.merkmal, state: change.state, optionen: change.optionen }
        : { merkmal: rollout.merkmal },
  });
  await releaseDevices(db, refOf(rollout), system);
  await emitRolloutWebhook(db, 'rollout.completed', rollout.id);
  return 'completed';
}

/** The org unit or group was deleted: nothing can be written there, so every device gets its state back. */
async function abortForLostScope(db: Db, rollout: RolloutRow, requestId: string): Promise<JudgeOutcome> {
  await db`update rollouts set status = 'aborted', completed_at = null where id = ${rollout.id}`;
  await releaseDevices(db, refOf(rollout), system);
  await auditBySystem(
    db,
    rollout.organization_id,
    'rollout.abort',
    rollout.id,
    {
      reason: 'scope_deleted',
      message: `the ${rollout.scope === 'org_unit' ? 'org unit' : 'group'} ${rollout.scope_id} was deleted before the last ring passed; nothing was written there`,
    },
    requestId,
  );
  await emitRolloutWebhook(db, 'rollout.aborted', rollout.id, { reason: 'scope_deleted' });
  return 'aborted';
}
