/**
 * SQL of org units: one tree per organization. The tree's rules (protected "Neue Geräte",
 * no cycles, only empty units are deleted, no mixing of organizations) are checked here
 * under the organization's write lock, so concurrent moves and deletes cannot break them.
 */
import type { Actor } from '../access/declaration.ts';
import type { RecordEffectiveState } from '../access/effective_state.ts';
import { afterCursor } from '../db/keyset.ts';
import { type Db, isPgError, pgError, transaction } from '../db/client.ts';
import { ApiError, notFound } from '../http/errors.ts';
import { iso } from '../http/openapi.ts';
import type { Cursor } from '../http/pagination.ts';
import { requireOrganization } from '../organizations/repo.ts';
import { lockOrganization } from './lock.ts';
import type { OrgUnitCreateInput, OrgUnitPatchInput, OrgUnitType } from './schemas.ts';

export interface OrgUnitRow {
  id: string;
  organization_id: string;
  parent_id: string | null;
  name: string;
  protected: boolean;
  archive_stale_after_days: number | null;
  created_at: Date;
}

/**
 * A unit with its device counts, as every answer carries it: `devices` filed directly in
 * it, `devices_total` in its subtree (it and every unit below it), archived devices not
 * counted (as the device list, whose `oe_id` filter is the subtree, counts them).
 */
export type CountedOrgUnit = OrgUnitRow & DeviceCounts;

export interface DeviceCounts {
  devices: number;
  devices_total: number;
}

export function serializeOrgUnit(row: CountedOrgUnit): OrgUnitType {
  return { ...row, created_at: iso(row.created_at) };
}

async function getOrgUnit(db: Db, id: string): Promise<OrgUnitRow | null> {
  const [row] = await db<OrgUnitRow[]>`
    select id, organization_id, parent_id, name, protected, archive_stale_after_days, created_at
    from org_units where id = ${id}`;
  return row ?? null;
}

export async function requireOrgUnit(db: Db, id: string): Promise<OrgUnitRow> {
  const row = await getOrgUnit(db, id);
  if (!row) throw notFound('org unit', id);
  return row;
}

/**
 * An org unit named in a body, checked to belong to `organizationId`: unknown 404,
 * another organization's 422 `organization_mismatch`.
 */
export async function requireOrgUnitOf(db: Db, id: string, organizationId: string, field: string): Promise<OrgUnitRow> {
  const row = await getOrgUnit(db, id);
  if (!row) throw new ApiError('not_found', `org unit ${id} (${field}) not found`);
  if (row.organization_id !== organizationId) {
    throw new ApiError('organization_mismatch', `org unit ${id} (${field}) belongs to another organization`);
  }
  return row;
}

/** The organization's units, the whole tree flat, in creation order. */
export async function listOrgUnits(
  db: Db,
  organizationId: string,
  cursor: Cursor | null,
  limit: number,
): Promise<OrgUnitRow[]> {
  return db<OrgUnitRow[]>`
    select id, organization_id, parent_id, name, protected, archive_stale_after_days, created_at
    from org_units
    where organization_id = ${organizationId} and ${afterCursor(db, cursor)}
    order by created_at, id
    limit ${limit + 1}`;
}

/**
 * The ids of the unit and of every unit below it (what an `oe_id` filter selects), the
 * unit first. `union` (not `union all`) ends the walk even on a corrupt, cyclic tree.
 */
export async function orgUnitSubtree(db: Db, id: string): Promise<string[]> {
  const rows = await db<{ id: string }[]>`
    with recursive sub (id, depth) as (
      select id, 0 from org_units where id = ${id}
      union
      select u.id, s.depth + 1 from org_units u join sub s on u.parent_id = s.id where s.depth < 1000
    )
    select id from sub group by id order by min(depth), id`;
  return rows.map((r) => r.id);
}

/**
 * The device counts (`DeviceCounts`) of the organization's units `ids` (all of them when
 * null), in one statement: the live devices per unit from the fleet rows' index
 * (`device_fleet_scope`: one row per device that is not archived, written in the
 * transaction of every change of a device), summed up the tree over the unit's subtree.
 */
export async function countDevicesOfUnits(
  db: Db,
  organizationId: string,
  ids: readonly string[] | null,
): Promise<Map<string, DeviceCounts>> {
  const rows = await db<({ id: string } & DeviceCounts)[]>`
    with recursive below (root, id, depth) as (
      select u.id, u.id, 0 from org_units u
      where u.organization_id = ${organizationId}
        and (${ids === null} or u.id = any(${(ids ?? []) as string[]}::uuid[]))
      union
      select b.root, u.id, b.depth + 1 from org_units u join below b on u.parent_id = b.id where b.depth < 1000
    ),
    direct as (
      select f.oe_id, count(*)::int as n from device_fleet f
      where f.organization_id = ${organizationId} and f.oe_id in (select id from below)
      group by f.oe_id
    )
    select b.root as id,
           coalesce(sum(d.n) filter (where b.id = b.root), 0)::int as devices,
           coalesce(sum(d.n), 0)::int as devices_total
    from (select distinct root, id from below) b left join direct d on d.oe_id = b.id
    group by b.root`;
  return new Map(rows.map(({ id, ...counts }) => [id, counts]));
}

/** The rows with their device counts (`countDevicesOfUnits`), in their order. */
export async function withDeviceCounts(db: Db, rows: OrgUnitRow[]): Promise<CountedOrgUnit[]> {
  if (rows.length === 0) return [];
  const counts = await countDevicesOfUnits(
    db,
    rows[0]!.organization_id,
    rows.map((r) => r.id),
  );
  return rows.map((r) => ({ ...r, ...(counts.get(r.id) ?? { devices: 0, devices_total: 0 }) }));
}

export async function createOrgUnit(sql: Db, organizationId: string, input: OrgUnitCreateInput): Promise<OrgUnitRow> {
  return transaction(sql, async (tx) => {
    await requireOrganization(tx, organizationId);
    await lockOrganization(tx, organizationId);
    const parentId = input.parent_id ?? null;
    if (parentId !== null) await requireOrgUnitOf(tx, parentId, organizationId, 'parent_id');
    try {
      const [row] = await tx<OrgUnitRow[]>`
        insert into org_units (organization_id, parent_id, name, protected, archive_stale_after_days)
        values (${organizationId}, ${parentId}, ${input.name}, false, ${input.archive_stale_after_days ?? null})
        returning id, organization_id, parent_id, name, protected, archive_stale_after_days, created_at`;
      return row!;
    } catch (err) {
      throw nameTakenOr(err, input.name);
    }
  });
}

/**
 * An org unit's name is unique among its siblings (the top-level units of an organization
 * are one sibling set), case-insensitively ("GIS" and "gis" look like one entry in the
 * tree); the unique index `org_units_sibling_name_key` holds it for creates, renames and
 * moves alike.
 */
function nameTakenOr(err: unknown, name: string): unknown {
  if (isPgError(err, pgError.uniqueViolation) && err.constraint_name === 'org_units_sibling_name_key') {
    return new ApiError(
      'name_taken',
      `a unit named "${name}" already exists at that place in the tree (names ignore case)`,
    );
  }
  return err;
}

/**
 * Renames and/or moves a unit, and/or sets its archiving of stale devices. A move writes an
 * event for each device of its subtree and Merkmal whose effective state or `optionen` it
 * changes (`record`, the catalog's).
 */
export async function updateOrgUnit(
  sql: Db,
  id: string,
  patch: OrgUnitPatchInput,
  actor: Actor,
  record: RecordEffectiveState,
): Promise<OrgUnitRow> {
  return transaction(sql, async (tx) => {
    const found = await requireOrgUnit(tx, id);
    await lockOrganization(tx, found.organization_id);
    const unit = await requireOrgUnit(tx, id); // as it is now that we hold the lock
    const moving = patch.parent_id !== undefined;
    if (unit.protected && (patch.name !== undefined || moving)) {
      throw new ApiError(
        'protected_org_unit',
        `org unit ${id} ("${unit.name}") is protected: it cannot be renamed or moved`,
      );
    }
    if (moving && patch.parent_id !== null) {
      await requireOrgUnitOf(tx, patch.parent_id!, unit.organization_id, 'parent_id');
      if (await isSelfOrAncestor(tx, unit.id, patch.parent_id!)) {
        throw new ApiError(
          'org_unit_cycle',
          `org unit ${patch.parent_id} is ${patch.parent_id === id ? 'the unit itself' : 'a descendant of the unit'}: the move would make the unit its own ancestor`,
        );
      }
    }
    const columns = (['name', 'parent_id', 'archive_stale_after_days'] as const).filter((c) => patch[c] !== undefined);
    if (columns.length === 0) return unit;
    const update = async () => {
      const [row] = await tx<OrgUnitRow[]>`
        update org_units set ${tx(patch, ...columns)}
        where id = ${id}
        returning id, organization_id, parent_id, name, protected, archive_stale_after_days, created_at`;
      return row!;
    };
    try {
      if (!moving) return await update();
      const change = {
        organizationId: unit.organization_id,
        reach: { orgUnit: id },
        cause: 'move',
        sourceId: id,
        actor,
      } as const;
      return await record(tx, change, update);
    } catch (err) {
      throw nameTakenOr(err, patch.name ?? unit.name);
    }
  });
}

/** True when `unitId` is `candidate` or one of its ancestors (so `candidate` is in its subtree). */
async function isSelfOrAncestor(db: Db, unitId: string, candidate: string): Promise<boolean> {
  // `union` (not `union all`) ends the walk even on a corrupt, cyclic tree.
  const [row] = await db<{ cycle: boolean }[]>`
    with recursive ancestors (id, parent_id) as (
      select id, parent_id from org_units where id = ${candidate}
      union
      select p.id, p.parent_id from org_units p join ancestors a on p.id = a.parent_id
    )
    select exists (select 1 from ancestors where id = ${unitId}) as cycle`;
  return row!.cycle;
}

/**
 * Deletes an empty unit: no child units and no live devices. Archived devices do not keep a
 * unit alive (they are out of every list and cannot be moved by hand); they are moved to
 * the organization's "Neue Geräte". The unit's overrides go with it. Recorded like every
 * change that can alter effective state (`record`, the catalog's), though with no live
 * device under the unit none changes.
 */
export async function deleteOrgUnit(
  sql: Db,
  id: string,
  actor: Actor,
  record: RecordEffectiveState,
): Promise<OrgUnitRow> {
  try {
    return await transaction(sql, async (tx) => {
      const found = await requireOrgUnit(tx, id);
      await lockOrganization(tx, found.organization_id);
      const unit = await requireOrgUnit(tx, id);
      if (unit.protected)
        throw new ApiError('protected_org_unit', `org unit ${id} ("${unit.name}") is protected: it cannot be deleted`);
      const [usage] = await tx<{ children: number; devices: number }[]>`
        select (select count(*)::int from org_units where parent_id = ${id}) as children,
               (select count(*)::int from devices where oe_id = ${id} and archived_at is null) as devices`;
      if (usage!.children > 0 || usage!.devices > 0) {
        throw new ApiError(
          'org_unit_not_empty',
          `org unit ${id} still has ${usage!.children} child unit(s) and ${usage!.devices} device(s)`,
        );
      }
      const change = {
        organizationId: unit.organization_id,
        reach: { orgUnit: id },
        cause: 'delete',
        sourceId: id,
        actor,
      } as const;
      await record(tx, change, async () => {
        await tx`
          update devices set oe_id = (
            select ou.id from org_units ou where ou.organization_id = ${unit.organization_id} and ou.protected)
          where oe_id = ${id} and archived_at is not null`;
        await tx`delete from org_units where id = ${id}`;
      });
      return unit;
    });
  } catch (err) {
    // A device moved in by a transaction that does not take the lock.
    if (isPgError(err, pgError.foreignKeyViolation))
      throw new ApiError('org_unit_not_empty', `org unit ${id} still has devices`);
    throw err;
  }
}
