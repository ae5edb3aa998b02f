/**
 * The effective state before and after a change, for every device the change can reach, and
 * the `selected` / `deselected` events for the devices and Merkmale where it differs (in
 * state or in `optionen`). Set-based, inside the change's transaction, under the
 * organization's write lock: two queries load the inputs of the rule (the organization's
 * org units with their overrides; the reached devices with their catalog, their own and
 * their groups' overrides), the pure rule of `resolution.ts` gives each state, and one
 * insert writes the events. No query per device.
 *
 * Selections (repo.ts) load before the change and put the written override in place in
 * memory; moves, memberships and deletions (`recordEffectiveChange`) load again after it.
 */
import type { RecordEffectiveState, Reach } from '../access/effective_state.ts';
import type { Db } from '../db/client.ts';
import { effectiveTemplateOf } from '../devices/repo.ts';
import { lockOrganization } from '../org_units/lock.ts';
import { upTheTree } from './org_overrides.ts';
import {
  resolveCatalog,
  sameOptionen,
  type CatalogEntry,
  type GroupOverride,
  type OrgUnitOverride,
  type Override,
  type ResolvedMerkmal,
  type RolloutChange,
  withRolloutChanges,
} from './resolution.ts';
import { rolloutChanges } from './rollout_changes.ts';

interface UnitNode {
  parentId: string | null;
  overrides: Override[];
}

export interface DeviceInputs {
  oeId: string;
  /** The catalog of the device's backend (only the one Merkmal when loaded for one). */
  catalog: CatalogEntry[];
  device: Override[];
  groups: GroupOverride[];
  /** The device's groups, with overrides or not (where a group's rollout reaches). */
  groupIds: string[];
  /** The changes of the rollouts applied to the device. */
  rollouts: RolloutChange[];
}

export interface Affected {
  units: Map<string, UnitNode>;
  devices: Map<string, DeviceInputs>;
}

interface DeviceInputRow {
  id: string;
  oe_id: string;
  catalog: CatalogEntry[];
  device_overrides: Override[];
  group_overrides: GroupOverride[];
  group_ids: string;
  rollouts: string;
}

/**
 * Loads the org units of the organization with their overrides and the devices `reach`
 * names: one device (archived or not); the non-archived members of a group or devices of
 * an org unit's subtree; or the devices of a list of ids (the same set again, after a
 * change). With `merkmal`, only that Merkmal's catalog entry and overrides.
 */
export async function loadAffected(
  db: Db,
  organizationId: string,
  reach: Reach | { ids: string[] },
  merkmal: string | null,
): Promise<Affected> {
  const unitRows = await db<{ id: string; parent_id: string | null; overrides: Override[] }[]>`
    select ou.id, ou.parent_id,
           (select coalesce(json_agg(json_build_object('merkmal', o.merkmal, 'state', o.state, 'optionen', o.optionen)), '[]')
              from org_unit_merkmale o
              where o.org_unit_id = ou.id and (${merkmal}::text is null or o.merkmal = ${merkmal}::text)) as overrides
    from org_units ou
    where ou.organization_id = ${organizationId}`;
  const units = new Map<string, UnitNode>();
  for (const u of unitRows) units.set(u.id, { parentId: u.parent_id, overrides: u.overrides });

  const filter =
    'ids' in reach
      ? db`d.id = any(${reach.ids}::uuid[])`
      : 'device' in reach
        ? db`d.id = ${reach.device}`
        : 'group' in reach
          ? db`d.archived_at is null and d.id in (select m.device_id from group_members m where m.group_id = ${reach.group})`
          : db`d.archived_at is null and d.organization_id = ${organizationId} and d.oe_id = any(${subtree(units, reach.orgUnit)}::uuid[])`;
  const rows = await db<DeviceInputRow[]>`
    select d.id, d.oe_id,
           (select coalesce(json_agg(json_build_object(
                     'merkmal', m.key,
                     'inWorkspace', exists (select 1 from workspace_merkmale wm
                                            where wm.workspace = dt.workspace and wm.merkmal = m.key)) order by m.key), '[]')
              from blueprints b join merkmale m on m.key = b.merkmal and m.im_auftragskatalog
              where b.backend = dt.backend and (${merkmal}::text is null or m.key = ${merkmal}::text)) as catalog,
           (select coalesce(json_agg(json_build_object('merkmal', o.merkmal, 'state', o.state, 'optionen', o.optionen)), '[]')
              from device_merkmale o
              where o.device_id = d.id and (${merkmal}::text is null or o.merkmal = ${merkmal}::text)) as device_overrides,
           (select coalesce(json_agg(json_build_object(
                     'merkmal', o.merkmal, 'state', o.state, 'optionen', o.optionen, 'groupId', o.group_id,
                     'updatedAt', (extract(epoch from o.updated_at) * 1000000)::bigint)), '[]')
              from group_members gm
              join group_merkmale o on o.group_id = gm.group_id and (${merkmal}::text is null or o.merkmal = ${merkmal}::text)
              where gm.device_id = d.id) as group_overrides,
           d.group_ids_text as group_ids, d.rollouts_text as rollouts
    from devices d
    ${effectiveTemplateOf(db)}
    where ${filter}`;
  // Every rollout applied to any of the devices, in one query.
  const rolloutIds = [...new Set(rows.flatMap((r) => (r.rollouts === '' ? [] : r.rollouts.split(','))))];
  const changes = new Map((await rolloutChanges(db, rolloutIds.join(','))).map((c, i) => [rolloutIds[i]!, c]));
  const devices = new Map<string, DeviceInputs>();
  for (const r of rows) {
    devices.set(r.id, {
      oeId: r.oe_id,
      catalog: r.catalog,
      device: r.device_overrides,
      groups: r.group_overrides,
      groupIds: r.group_ids === '' ? [] : r.group_ids.split(','),
      rollouts: r.rollouts === '' ? [] : r.rollouts.split(',').map((id) => changes.get(id)!),
    });
  }
  return { units, devices };
}

/** The ids of `rootId` and all its descendants. */
function subtree(units: Map<string, UnitNode>, rootId: string): string[] {
  const children = new Map<string, string[]>();
  for (const [id, u] of units) {
    if (u.parentId === null) continue;
    const list = children.get(u.parentId);
    if (list) list.push(id);
    else children.set(u.parentId, [id]);
  }
  const out = new Set<string>([rootId]);
  const stack = [rootId];
  while (stack.length > 0) {
    for (const child of children.get(stack.pop()!) ?? []) {
      if (!out.has(child)) {
        out.add(child);
        stack.push(child);
      }
    }
  }
  return [...out];
}

/** The device's loaded catalog, resolved by the rule; its org-unit chain is walked in memory. */
function resolveDevice(inputs: Affected, device: DeviceInputs): ResolvedMerkmal[] {
  const chain: OrgUnitOverride[] = [];
  const depths = new Map<string, number>();
  for (const [orgUnitId, unit, depth] of upTheTree(inputs.units, device.oeId)) {
    depths.set(orgUnitId, depth);
    for (const o of unit.overrides) chain.push({ ...o, orgUnitId, depth });
  }
  const input = {
    catalog: device.catalog,
    orgUnitOverrides: chain,
    groupOverrides: device.groups,
    deviceOverrides: device.device,
  };
  if (device.rollouts.length === 0) return resolveCatalog(input);
  return resolveCatalog(
    withRolloutChanges(input, device.rollouts, {
      unitDepth: (id) => depths.get(id),
      inGroup: (id) => device.groupIds.includes(id),
    }),
  );
}

export interface EffectiveChange {
  deviceId: string;
  /** The new decision: its state names the event, `selected` or `deselected`. */
  now: ResolvedMerkmal;
}

/**
 * The devices and Merkmale whose state or `optionen` differ between `before` and `after`.
 * `always`: a device whose every loaded Merkmal counts as changed (a selection on the
 * device itself is recorded even when it repeats the state).
 */
export function effectiveChanges(before: Affected, after: Affected, always?: string): EffectiveChange[] {
  const changes: EffectiveChange[] = [];
  for (const [deviceId, was] of before.devices) {
    const is = after.devices.get(deviceId);
    if (is === undefined) continue;
    const old = new Map(resolveDevice(before, was).map((r) => [r.merkmal, r]));
    for (const now of resolveDevice(after, is)) {
      const then = old.get(now.merkmal);
      const changed = then === undefined || then.state !== now.state || !sameOptionen(then.optionen, now.optionen);
      if (changed || deviceId === always) changes.push({ deviceId, now });
    }
  }
  return changes;
}

/** One insert of the events of `changes`, each with the payload `payloadOf` gives it. */
export async function writeEvents(
  db: Db,
  changes: readonly EffectiveChange[],
  payloadOf: (change: EffectiveChange) => Record<string, unknown>,
): Promise<void> {
  if (changes.length === 0) return;
  await db`
    insert into device_merkmal_events (device_id, merkmal, type, payload)
    select e.device_id, e.merkmal, e.type, e.payload::jsonb
    from unnest(
      ${changes.map((c) => c.deviceId)}::uuid[],
      ${changes.map((c) => c.now.merkmal)}::text[],
      ${changes.map((c) => (c.now.state === 'present' ? 'selected' : 'deselected'))}::text[],
      ${changes.map((c) => JSON.stringify(payloadOf(c)))}::text[]
    ) as e (device_id, merkmal, type, payload)`;
}

/**
 * The catalog's implementation of the port the features below it are handed: the reached
 * devices' state before `write` and after it, and an event for each difference, whose
 * payload names the cause, the source, the actor and the new decision's `origin` and
 * `optionen`.
 */
export const recordEffectiveChange: RecordEffectiveState = async (tx, change, write) => {
  await lockOrganization(tx, change.organizationId);
  const before = await loadAffected(tx, change.organizationId, change.reach, null);
  const result = await write();
  if (before.devices.size > 0) {
    const after = await loadAffected(tx, change.organizationId, { ids: [...before.devices.keys()] }, null);
    await writeEvents(tx, effectiveChanges(before, after), ({ now }) => ({
      cause: change.cause,
      source_id: change.sourceId,
      origin: now.origin,
      optionen: now.optionen,
      actor: change.actor,
    }));
  }
  return result;
};
