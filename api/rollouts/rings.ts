/**
 * The devices a rollout changes and its rings (api/rollouts/README.md): which devices a
 * change at an org unit or a group alters, their stable places in the rings, and a ring's
 * opening and the release of every applied device, each with the `selected` /
 * `deselected` events of the devices whose effective state it changes.
 *
 * A ring opens by marking its devices `applied`: a trigger writes the rollout's id into
 * each device row's `rollouts_text`, which the check-in stamps its ETag with and resolves
 * through (api/catalog/rollout_changes.ts), so only those devices see the change.
 */
import type { Actor } from '../access/declaration.ts';
import { applyChange, type Change } from '../catalog/repo.ts';
import { effectiveChanges, loadAffected, writeEvents } from '../catalog/effective_changes.ts';
import type { Db } from '../db/client.ts';
import { lockOrganization } from '../org_units/lock.ts';
import { queueRolloutActions } from '../actions/service.ts';
import type { ActionType } from '../actions/schemas.ts';

export type RolloutScope = 'org_unit' | 'group';

/** What a rollout's action writes at its scope when it completes. */
export function changeOf(action: 'select' | 'deselect' | 'unset', optionen: Record<string, unknown>): Change {
  return action === 'unset'
    ? { kind: 'unset' }
    : { kind: 'set', state: action === 'select' ? 'present' : 'absent', optionen };
}

/**
 * The devices of the scope (an org unit's subtree, a group's members) whose effective
 * state or `optionen` of `merkmal` the change would alter, not archived or deprovisioned,
 * ordered by id. Reads only: the portal shows the count before an admin confirms, and a
 * rollout takes them as its devices.
 */
export async function devicesAltered(
  db: Db,
  organizationId: string,
  scope: RolloutScope,
  scopeId: string,
  merkmal: string,
  change: Change,
): Promise<string[]> {
  const before = await loadAffected(
    db,
    organizationId,
    scope === 'org_unit' ? { orgUnit: scopeId } : { group: scopeId },
    merkmal,
  );
  const written =
    change.kind === 'unset' ? null : { merkmal, state: change.state, optionen: change.optionen, updatedAt: Infinity };
  const after = applyChange(before, scope === 'org_unit' ? 'org-units' : 'groups', scopeId, merkmal, written);
  const ids = [...new Set(effectiveChanges(before, after).map((c) => c.deviceId))];
  const live = await db<{ id: string }[]>`
    select id from devices where id = any(${ids}::uuid[]) and deprovisioned_at is null and archived_at is null
    order by id`;
  return live.map((r) => r.id);
}

/**
 * Puts each device in its ring: a stable hash of rollout and device id, a point in
 * [0, 100), falls in ring k when `rings[k-1] <= point < rings[k]` (cumulative percentages),
 * so ring k holds about `rings[k] - rings[k-1]` percent, whatever order the devices came in.
 * Also writes each ring's size.
 */
export async function assignRings(db: Db, rolloutId: string, rings: readonly number[], deviceIds: string[]) {
  await db`
    insert into rollout_devices (rollout_id, device_id, ring)
    select ${rolloutId}, x.id,
           (select count(*) from unnest(${rings as number[]}::int[]) p where p <= h.point)
    from unnest(${deviceIds}::uuid[]) as x (id)
    cross join lateral (
      select ('x' || substr(md5(${rolloutId}::text || x.id::text), 1, 8))::bit(32)::bigint * 100.0 / 4294967296 as point
    ) h`;
  await db`
    insert into rollout_rings (rollout_id, ring, percent, devices)
    select ${rolloutId}, r.i - 1, r.percent,
           (select count(*) from rollout_devices d where d.rollout_id = ${rolloutId} and d.ring = r.i - 1)
    from unnest(${rings as number[]}::int[]) with ordinality as r (percent, i)`;
}

interface RolloutRef {
  id: string;
  organizationId: string;
  merkmal: string;
}

/**
 * Marks devices of the rollout applied or not, with the events of the devices whose state
 * it changes. Device rows are locked before the organization, as every change of a
 * device's state does (a selection on a device locks its row first).
 */
async function setApplied(
  db: Db,
  rollout: RolloutRef,
  deviceIds: string[],
  applied: boolean,
  actor: Actor,
): Promise<number> {
  if (deviceIds.length === 0) return 0;
  await db`select 1 from devices where id = any(${deviceIds}::uuid[]) order by id for no key update`;
  await lockOrganization(db, rollout.organizationId);
  const reach = { ids: deviceIds };
  const before = await loadAffected(db, rollout.organizationId, reach, rollout.merkmal);
  await db`
    update rollout_devices set applied = ${applied}
    where rollout_id = ${rollout.id} and device_id = any(${deviceIds}::uuid[]) and applied <> ${applied}`;
  const after = await loadAffected(db, rollout.organizationId, reach, rollout.merkmal);
  const changes = effectiveChanges(before, after);
  await writeEvents(db, changes, ({ now }) => ({
    cause: 'rollout',
    source_id: rollout.id,
    origin: now.origin,
    optionen: now.optionen,
    actor,
  }));
  return changes.length;
}

/**
 * Opens ring `ring`: its devices that are not archived or deprovisioned get the change at
 * their next check-in. Records when it opened and makes it the rollout's current ring.
 */
export async function openRing(db: Db, rollout: RolloutRef, ring: number, actor: Actor): Promise<void> {
  const ids = await db<{ device_id: string }[]>`
    select rd.device_id from rollout_devices rd join devices d on d.id = rd.device_id
    where rd.rollout_id = ${rollout.id} and rd.ring = ${ring} and d.archived_at is null and d.deprovisioned_at is null
    order by rd.device_id`;
  await setApplied(
    db,
    rollout,
    ids.map((r) => r.device_id),
    true,
    actor,
  );
  await db`update rollout_rings set opened_at = now() where rollout_id = ${rollout.id} and ring = ${ring}`;
  await db`update rollouts set current_ring = ${ring} where id = ${rollout.id}`;
}

/**
 * Takes the rollout's change away from every device it was applied to. After an abort
 * each gets its previous state back (with its event); after completion the scope's own
 * override says the same, so nothing changes and no event is written.
 */
export async function releaseDevices(db: Db, rollout: RolloutRef, actor: Actor): Promise<void> {
  const ids = await db<{ device_id: string }[]>`
    select device_id from rollout_devices where rollout_id = ${rollout.id} and applied order by device_id`;
  await setApplied(
    db,
    rollout,
    ids.map((r) => r.device_id),
    false,
    actor,
  );
}

/**
 * The devices of the scope (an org unit's subtree, a group's members) that are not
 * archived or deprovisioned, ordered by id: a rollout of a device action takes them all,
 * whether or not they are online, since an action waits for its device.
 */
export async function devicesOfScope(
  db: Db,
  organizationId: string,
  scope: RolloutScope,
  scopeId: string,
): Promise<string[]> {
  const rows =
    scope === 'org_unit'
      ? await db<{ id: string }[]>`
          with recursive sub (id) as (
            select id from org_units where id = ${scopeId} and organization_id = ${organizationId}
            union all
            select u.id from org_units u join sub on u.parent_id = sub.id
          )
          select d.id from devices d
          where d.oe_id in (select id from sub) and d.deprovisioned_at is null and d.archived_at is null
          order by d.id`
      : await db<{ id: string }[]>`
          select d.id from group_members m join devices d on d.id = m.device_id
          where m.group_id = ${scopeId} and m.organization_id = ${organizationId}
            and d.deprovisioned_at is null and d.archived_at is null
          order by d.id`;
  return rows.map((r) => r.id);
}

/** What a ring's opening needs of its rollout: its change of a Merkmal, or its device action. */
export interface RolloutOpening extends Omit<RolloutRef, 'merkmal'> {
  merkmal: string | null;
  deviceAction: { type: ActionType; parameters: Record<string, unknown> } | null;
  /** Who asked for the rollout: its device actions are theirs. */
  createdBy: Actor;
}

/**
 * Opens ring `ring` of either kind: a Merkmal's change is applied to its devices (with
 * their events); a device action is queued for each of its devices still managed, with
 * the rollout's id. Records when it opened and makes it the rollout's current ring.
 */
export async function openRingOf(db: Db, rollout: RolloutOpening, ring: number, actor: Actor): Promise<void> {
  if (rollout.deviceAction === null) {
    await openRing(
      db,
      { id: rollout.id, organizationId: rollout.organizationId, merkmal: rollout.merkmal! },
      ring,
      actor,
    );
    return;
  }
  const ids = await db<{ device_id: string }[]>`
    select rd.device_id from rollout_devices rd join devices d on d.id = rd.device_id
    where rd.rollout_id = ${rollout.id} and rd.ring = ${ring} and d.archived_at is null and d.deprovisioned_at is null
    order by rd.device_id
    for no key update of d`;
  await queueRolloutActions(
    db,
    ids.map((r) => r.device_id),
    {
      organizationId: rollout.organizationId,
      rolloutId: rollout.id,
      type: rollout.deviceAction.type,
      parameters: rollout.deviceAction.parameters,
      createdBy: rollout.createdBy,
    },
  );
  await db`update rollout_rings set opened_at = now() where rollout_id = ${rollout.id} and ring = ${ring}`;
  await db`update rollouts set current_ring = ${ring} where id = ${rollout.id}`;
}
