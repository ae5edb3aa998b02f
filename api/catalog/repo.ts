/**
 * Selections of the order catalog at the three scopes (device, org unit, group): select,
 * deselect and unset one Merkmal override, with the `selected` / `deselected` events.
 *
 * An org-unit or group change writes an event for each (non-archived) device whose
 * effective state it changes. That set is computed set-based inside the transaction, under
 * the organization's write lock: two queries load, for the one Merkmal, every affected
 * device's inputs (the org units of the organization with their override, and the devices
 * with their group and device overrides); the pure rule gives the state before and after
 * the change; one insert writes the events. No query per device.
 */
import type { Actor } from '../access/declaration.ts';
import { type Db, isPgError, pgError, transaction } from '../db/client.ts';
import { deviceArchived, effectiveTemplateOf } from '../devices/repo.ts';
import { ApiError, notFound } from '../http/errors.ts';
import { lockOrganization } from '../org_units/lock.ts';
import type { CatalogOverrideType } from './schemas.ts';
import { resolveOne, type GroupOverride, type Optionen, type Override, type OverrideState } from './resolution.ts';
import { upTheTree } from './org_overrides.ts';

export type Scope = 'devices' | 'org-units' | 'groups';

/** `origin` of the events a scope's selections write. */
const originOf: Record<Scope, 'geraet' | 'oe' | 'gruppe'> = { devices: 'geraet', 'org-units': 'oe', groups: 'gruppe' };

export type Change = { kind: 'set'; state: OverrideState; optionen: Optionen } | { kind: 'unset' };

interface Owner {
  organizationId: string;
  /** The device's backend (device scope only): the catalog it may select from. */
  backend: string | null;
}

/**
 * The owner of the scope. A device is read under a share lock of its row, for the rest of
 * the transaction: an archived device's selections change no more (409 `device_archived`),
 * and an archive racing this change waits for it or is seen here.
 */
async function requireOwner(db: Db, scope: Scope, id: string): Promise<Owner> {
  if (scope === 'devices') {
    const [row] = await db<{ organization_id: string; backend: string; archived: boolean }[]>`
      select d.organization_id, dt.backend, d.archived_at is not null as archived
      from devices d ${effectiveTemplateOf(db)}
      where d.id = ${id}
      for share of d`;
    if (!row) throw notFound('device', id);
    if (row.archived) throw deviceArchived(id, 'its catalog selections cannot be changed');
    return { organizationId: row.organization_id, backend: row.backend };
  }
  const [row] =
    scope === 'org-units'
      ? await db<{ organization_id: string }[]>`select organization_id from org_units where id = ${id}`
      : await db<{ organization_id: string }[]>`select organization_id from groups where id = ${id}`;
  if (!row) throw notFound(scope === 'org-units' ? 'org unit' : 'group', id);
  return { organizationId: row.organization_id, backend: null };
}

/**
 * 422 `unknown_merkmal` for a key that does not exist, `not_in_catalog` for a Merkmal that
 * is not selectable: `im_auftragskatalog` false, or no blueprint for the device's backend
 * (org units and groups span backends: a blueprint for any backend will do).
 */
async function requireCatalogMerkmal(db: Db, merkmal: string, backend: string | null): Promise<void> {
  const [row] = await db<{ im_auftragskatalog: boolean; has_blueprint: boolean }[]>`
    select m.im_auftragskatalog,
           exists (select 1 from blueprints b
                   where b.merkmal = m.key and (${backend}::text is null or b.backend = ${backend}::text)) as has_blueprint
    from merkmale m where m.key = ${merkmal}`;
  if (!row) throw new ApiError('unknown_merkmal', `Merkmal "${merkmal}" does not exist`);
  if (!row.im_auftragskatalog) throw new ApiError('not_in_catalog', `Merkmal "${merkmal}" is not in the order catalog`);
  if (!row.has_blueprint) {
    throw new ApiError(
      'not_in_catalog',
      backend === null
        ? `Merkmal "${merkmal}" has no blueprint for any backend`
        : `Merkmal "${merkmal}" has no blueprint for the device's backend "${backend}"`,
    );
  }
}

/** The overrides set at an org unit or a group, ordered by Merkmal key. */
export async function listOverrides(db: Db, scope: 'org-units' | 'groups', id: string): Promise<CatalogOverrideType[]> {
  await requireOwner(db, scope, id);
  return scope === 'org-units'
    ? db<
        CatalogOverrideType[]
      >`select merkmal, state, optionen from org_unit_merkmale where org_unit_id = ${id} order by merkmal`
    : db<
        CatalogOverrideType[]
      >`select merkmal, state, optionen from group_merkmale where group_id = ${id} order by merkmal`;
}

type ScopeOverride = { id: string; merkmal: string; state: OverrideState };

/** The overrides set at every org unit or every group of the organization, by Merkmal key. */
export async function listOrganizationOverrides(
  db: Db,
  scope: 'org-units' | 'groups',
  organizationId: string,
): Promise<ScopeOverride[]> {
  return scope === 'org-units'
    ? db<ScopeOverride[]>`
      select o.org_unit_id as id, o.merkmal, o.state from org_unit_merkmale o
      join org_units u on u.id = o.org_unit_id where u.organization_id = ${organizationId} order by o.merkmal`
    : db<ScopeOverride[]>`
      select o.group_id as id, o.merkmal, o.state from group_merkmale o
      join groups g on g.id = o.group_id where g.organization_id = ${organizationId} order by o.merkmal`;
}

/**
 * Sets (select / deselect) or removes (unset) the override of `merkmal` at a scope and
 * writes the events, which name the actor. Returns the override now set (null after an
 * unset) and the organization it belongs to.
 */
export async function changeOverride(
  sql: Db,
  scope: Scope,
  id: string,
  merkmal: string,
  change: Change,
  actor: Actor,
): Promise<{ override: CatalogOverrideType | null; organizationId: string }> {
  try {
    return await transaction(sql, async (tx) => {
      const owner = await requireOwner(tx, scope, id);
      await requireCatalogMerkmal(tx, merkmal, owner.backend);
      await lockOrganization(tx, owner.organizationId);

      const before = await loadAffected(tx, scope, id, owner.organizationId, merkmal);
      const written = await writeOverride(tx, scope, id, merkmal, change);
      const after = applyChange(before, scope, id, merkmal, written);

      const events: Array<{ deviceId: string; type: 'selected' | 'deselected' }> = [];
      for (const [deviceId, device] of before.devices) {
        if (!device.inCatalog) continue;
        const was = resolveFor(before, device, merkmal).state;
        const is = resolveFor(after, after.devices.get(deviceId)!, merkmal).state;
        // A selection on the device itself is always recorded; elsewhere only real changes.
        const direct = scope === 'devices' && change.kind === 'set';
        if (direct || was !== is) events.push({ deviceId, type: is === 'present' ? 'selected' : 'deselected' });
      }
      if (events.length > 0) {
        const payload =
          change.kind === 'set'
            ? { origin: originOf[scope], source_id: id, optionen: change.optionen, actor }
            : { origin: originOf[scope], source_id: id, unset: true, actor };
        await tx`
          insert into device_merkmal_events (device_id, merkmal, type, payload)
          select e.device_id, ${merkmal}, e.type, ${tx.json(payload as Parameters<typeof tx.json>[0])}::jsonb
          from unnest(${events.map((e) => e.deviceId)}::uuid[], ${events.map((e) => e.type)}::text[]) as e (device_id, type)`;
      }
      const override = written === null ? null : { merkmal, state: written.state, optionen: written.optionen };
      return { override, organizationId: owner.organizationId };
    });
  } catch (err) {
    // The owner was deleted between our read and the write.
    if (isPgError(err, pgError.foreignKeyViolation))
      throw notFound(scope === 'devices' ? 'device' : scope === 'org-units' ? 'org unit' : 'group', id);
    throw err;
  }
}

interface WrittenOverride extends Override {
  updatedAt: number;
}

async function writeOverride(
  db: Db,
  scope: Scope,
  id: string,
  merkmal: string,
  change: Change,
): Promise<WrittenOverride | null> {
  if (change.kind === 'unset') {
    if (scope === 'devices') await db`delete from device_merkmale where device_id = ${id} and merkmal = ${merkmal}`;
    else if (scope === 'org-units')
      await db`delete from org_unit_merkmale where org_unit_id = ${id} and merkmal = ${merkmal}`;
    else await db`delete from group_merkmale where group_id = ${id} and merkmal = ${merkmal}`;
    return null;
  }
  const { state, optionen } = change;
  const json = db.json(optionen as Parameters<typeof db.json>[0]);
  const [row] =
    scope === 'devices'
      ? await db<{ us: number }[]>`
        insert into device_merkmale (device_id, merkmal, state, optionen) values (${id}, ${merkmal}, ${state}, ${json})
        on conflict (device_id, merkmal) do update set state = excluded.state, optionen = excluded.optionen, updated_at = clock_timestamp()
        returning (extract(epoch from updated_at) * 1000000)::bigint as us`
      : scope === 'org-units'
        ? await db<{ us: number }[]>`
        insert into org_unit_merkmale (org_unit_id, merkmal, state, optionen) values (${id}, ${merkmal}, ${state}, ${json})
        on conflict (org_unit_id, merkmal) do update set state = excluded.state, optionen = excluded.optionen, updated_at = clock_timestamp()
        returning (extract(epoch from updated_at) * 1000000)::bigint as us`
        : await db<{ us: number }[]>`
        insert into group_merkmale (group_id, merkmal, state, optionen) values (${id}, ${merkmal}, ${state}, ${json})
        on conflict (group_id, merkmal) do update set state = excluded.state, optionen = excluded.optionen, updated_at = clock_timestamp()
        returning (extract(epoch from updated_at) * 1000000)::bigint as us`;
  return { merkmal, state, optionen, updatedAt: row!.us };
}

// ---------------------------------------------------------------------------------------
// The inputs of the rule for one Merkmal and every device a change can reach.

interface UnitNode {
  parentId: string | null;
  override: Override | undefined;
}

interface DeviceInputs {
  oeId: string;
  inCatalog: boolean;
  inWorkspace: boolean;
  device: Override | undefined;
  groups: GroupOverride[];
}

interface Affected {
  units: Map<string, UnitNode>;
  devices: Map<string, DeviceInputs>;
}

interface DeviceInputRow {
  id: string;
  oe_id: string;
  in_catalog: boolean;
  in_workspace: boolean;
  device_override: Override | null;
  group_overrides: GroupOverride[];
}

/**
 * Loads the org units of the organization (with their override of `merkmal`) and the
 * devices a change at the scope can reach: the device itself; the non-archived devices of
 * the unit's subtree; the group's non-archived members.
 */
async function loadAffected(
  db: Db,
  scope: Scope,
  id: string,
  organizationId: string,
  merkmal: string,
): Promise<Affected> {
  const unitRows = await db<
    { id: string; parent_id: string | null; state: OverrideState | null; optionen: Optionen | null }[]
  >`
    select ou.id, ou.parent_id, o.state, o.optionen
    from org_units ou
    left join org_unit_merkmale o on o.org_unit_id = ou.id and o.merkmal = ${merkmal}
    where ou.organization_id = ${organizationId}`;
  const units = new Map<string, UnitNode>();
  for (const u of unitRows) {
    units.set(u.id, {
      parentId: u.parent_id,
      override: u.state === null ? undefined : { merkmal, state: u.state, optionen: u.optionen ?? {} },
    });
  }

  const filter =
    scope === 'devices'
      ? db`d.id = ${id}`
      : scope === 'groups'
        ? db`d.archived_at is null and d.id in (select m.device_id from group_members m where m.group_id = ${id})`
        : db`d.archived_at is null and d.organization_id = ${organizationId} and d.oe_id = any(${subtree(units, id)}::uuid[])`;
  const rows = await db<DeviceInputRow[]>`
    select d.id, d.oe_id,
           exists (select 1 from blueprints b where b.merkmal = ${merkmal} and b.backend = dt.backend) as in_catalog,
           exists (select 1 from workspace_merkmale wm where wm.workspace = dt.workspace and wm.merkmal = ${merkmal}) as in_workspace,
           (select json_build_object('merkmal', o.merkmal, 'state', o.state, 'optionen', o.optionen)
              from device_merkmale o where o.device_id = d.id and o.merkmal = ${merkmal}) as device_override,
           (select coalesce(json_agg(json_build_object(
                     'merkmal', o.merkmal, 'state', o.state, 'optionen', o.optionen, 'groupId', o.group_id,
                     'updatedAt', (extract(epoch from o.updated_at) * 1000000)::bigint)), '[]')
              from group_members gm join group_merkmale o on o.group_id = gm.group_id and o.merkmal = ${merkmal}
              where gm.device_id = d.id) as group_overrides
    from devices d
    ${effectiveTemplateOf(db)}
    where ${filter}`;
  const devices = new Map<string, DeviceInputs>();
  for (const r of rows) {
    devices.set(r.id, {
      oeId: r.oe_id,
      inCatalog: r.in_catalog,
      inWorkspace: r.in_workspace,
      device: r.device_override ?? undefined,
      groups: r.group_overrides,
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

/** The same inputs with the written override in place of the old one. */
function applyChange(
  before: Affected,
  scope: Scope,
  id: string,
  merkmal: string,
  written: WrittenOverride | null,
): Affected {
  const override = written === null ? undefined : { merkmal, state: written.state, optionen: written.optionen };
  if (scope === 'org-units') {
    const units = new Map(before.units);
    const unit = units.get(id);
    if (unit) units.set(id, { ...unit, override });
    return { units, devices: before.devices };
  }
  const devices = new Map<string, DeviceInputs>();
  for (const [deviceId, d] of before.devices) {
    if (scope === 'devices') {
      devices.set(deviceId, deviceId === id ? { ...d, device: override } : d);
    } else {
      const groups = d.groups.filter((g) => g.groupId !== id);
      if (written !== null) groups.push({ ...written, groupId: id });
      devices.set(deviceId, { ...d, groups });
    }
  }
  return { units: before.units, devices };
}

/** The nearest override of the device's org-unit chain (walked in memory), then the rule. */
function resolveFor(inputs: Affected, device: DeviceInputs, merkmal: string) {
  let orgUnit: Override | undefined;
  for (const [, unit] of upTheTree(inputs.units, device.oeId)) {
    if (unit.override) {
      orgUnit = unit.override;
      break;
    }
  }
  return resolveOne({ merkmal, inWorkspace: device.inWorkspace }, orgUnit, device.groups, device.device);
}
