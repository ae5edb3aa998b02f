/**
 * The judge of a running rollout (api/rollouts/README.md, Judging): over the open ring's
 * devices that are live and not stale, it pauses the rollout when too many of those that
 * reported failed, opens the next ring once the soak has passed and enough reported, and
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
import { changeOf, openRing, releaseDevices } from './rings.ts';
import type * as repo from './repo.ts';
import { JUDGE_INTERVAL_SECONDS, scheduleJudge } from './schedule.ts';

export type JudgeOutcome = 'paused' | 'ring_opened' | 'completed' | 'aborted' | 'waiting' | 'not_running';

/** Below this many reports a ring is not paused for its failures (unless it has fewer devices). */
const MIN_REPORTS_TO_PAUSE = 5;

const system: Actor = { type: 'system' };

/** The rollout's row as the judge reads it: with the seconds since its current ring opened. */
interface RolloutRow extends Omit<repo.RolloutRow, 'paused_reason' | 'created_by' | 'created_at' | 'completed_at'> {
  /** Seconds since the current ring opened, by the transaction's clock. */
  soaked: number | null;
}

/** What the judge sees of a ring: its live devices, how many reported, the failures not accepted. */
interface RingVerdictInput {
  figures: Pick<RingFigures, 'converged' | 'pending' | 'failed' | 'accepted_failures'>;
  soaked: number;
  soakSeconds: number;
  maxFailureRatio: number;
  minReportedRatio: number;
}

/**
 * The rule, without I/O: `pause` when failures beyond the accepted ones are more than the
 * ratio allows of those that reported, once at least min(5, devices) reported; `pass` when
 * the soak has passed, enough reported and the failures are within the ratio (a ring
 * without live devices passes at once); else `wait`.
 */
export function ringVerdict(input: RingVerdictInput): 'pause' | 'pass' | 'wait' {
  const { converged, pending, failed, accepted_failures } = input.figures;
  const devices = converged + pending + failed;
  const reported = converged + failed;
  const failing = Math.max(0, failed - accepted_failures);
  const tooMany = reported > 0 && failing / reported > input.maxFailureRatio;
  if (failing > 0 && reported >= Math.min(MIN_REPORTS_TO_PAUSE, devices) && tooMany) return 'pause';
  if (devices === 0) return 'pass';
  if (input.soaked >= input.soakSeconds && reported / devices >= input.minReportedRatio && !tooMany) return 'pass';
  return 'wait';
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
      select r.id, r.organization_id, r.scope, r.scope_id, r.merkmal, r.action, r.optionen,
             r.rings::int[] as rings, r.max_failure_ratio, r.min_reported_ratio, r.soak_seconds, r.status,
             r.current_ring::int as current_ring,
             (select extract(epoch from now() - rr.opened_at)::float8 from rollout_rings rr
               where rr.rollout_id = r.id and rr.ring = r.current_ring) as soaked
      from rollouts r where r.id = ${rolloutId}
      for update of r`;
    if (rollout?.status !== 'running') return 'not_running';

    const ring = (await ringFigures(tx, rollout.id, options.pollIntervalSeconds)).find(
      (f) => f.ring === rollout.current_ring,
    );
    if (!ring) throw new Error(`rollout ${rollout.id} has no ring ${rollout.current_ring}`);
    const soaked = rollout.soaked ?? 0;
    const verdict = ringVerdict({
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
      await openRing(tx, refOf(rollout), next, system);
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

function refOf(rollout: RolloutRow) {
  return { id: rollout.id, organizationId: rollout.organization_id, merkmal: rollout.merkmal };
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

const selectionActions: Record<RolloutRow['action'], AuditAction> = {
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
  const change = changeOf(rollout.action, rollout.optionen);
  const scope = rollout.scope === 'org_unit' ? 'org-units' : 'groups';
  try {
    await changeOverride(db, scope, rollout.scope_id, rollout.merkmal, change, system);
  } catch (err) {
    if (err instanceof ApiError && err.code === 'not_found') return abortForLostScope(db, rollout, requestId);
    throw err;
  }
  await insertAuditEvent(db, {
    organizationId: rollout.organization_id,
    action: selectionActions[rollout.action],
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
