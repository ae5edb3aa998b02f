/**
 * Selections of the order catalog at the three scopes (device, org unit, group): select,
 * deselect and unset one Merkmal override, with the `selected` / `deselected` events.
 *
 * An org-unit or group change writes an event for each (non-archived) device whose
 * effective state or `optionen` it changes, computed set-based by effective_changes.ts for
 * the one Merkmal: its inputs loaded before the change, the written override put in their
 * place in memory, the rule applied to both.
 */
import type { Actor } from '../access/declaration.ts';
import { type Db, isPgError, pgError, transaction } from '../db/client.ts';
import { deviceArchived, effectiveTemplateOf } from '../devices/repo.ts';
import { ApiError, notFound } from '../http/errors.ts';
import { lockOrganization } from '../org_units/lock.ts';
import type { CatalogOverrideType } from './schemas.ts';
import { type Affected, type DeviceInputs, effectiveChanges, loadAffected, writeEvents } from './effective_changes.ts';
import type { Optionen, Override, OverrideState } from './resolution.ts';

export type Scope = 'devices' | 'org-units' | 'groups';

/** `origin` and `cause` of the events a scope's selections write. */
const originOf: Record<Scope, 'geraet' | 'oe' | 'gruppe'> = { devices: 'geraet', 'org-units': 'oe', groups: 'gruppe' };
const causeOf: Record<Scope, 'device' | 'oe' | 'gruppe'> = { devices: 'device', 'org-units': 'oe', groups: 'gruppe' };

export type Change = { kind: 'set'; state: OverrideState; optionen: Optionen } | { kind: 'unset' };

interface Owner {
  organizationId: string;
  /** The device's backend (device scope only): the catalog it may select from. */
  backend: string | null;
}

/**
 * The owner of the scope. A device is read under a lock of its row, for the rest of the
 * transaction: an archived device's selections change no more (409 `device_archived`),
 * and an archive racing this change waits for it or is seen here. Locked for update, not
 * share, before the organization's lock: the override's trigger rewrites the row, so two
 * changes of one device that both held it shared would each wait for the other.
 */
async function requireOwner(db: Db, scope: Scope, id: string): Promise<Owner> {
  if (scope === 'devices') {
    const [row] = await db<{ organization_id: string; backend: string; archived: boolean }[]>`
      select d.organization_id, dt.backend, d.archived_at is not null as archived
      from devices d ${effectiveTemplateOf(db)}
      where d.id = ${id}
      for no key update of d`;
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
export async function requireCatalogMerkmal(db: Db, merkmal: string, backend: string | null): Promise<void> {
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
      if (scope !== 'devices') await requireNoRollout(tx, id, merkmal);

      const reach = scope === 'devices' ? { device: id } : scope === 'groups' ? { group: id } : { orgUnit: id };
      const before = await loadAffected(tx, owner.organizationId, reach, merkmal);
      const written = await writeOverride(tx, scope, id, merkmal, change);
      const after = applyChange(before, scope, id, merkmal, written);
      // A selection on the device itself is always recorded; elsewhere only real changes.
      const always = scope === 'devices' && change.kind === 'set' ? id : undefined;
      const payload =
        change.kind === 'set'
          ? { cause: causeOf[scope], origin: originOf[scope], source_id: id, optionen: change.optionen, actor }
          : { cause: causeOf[scope], origin: originOf[scope], source_id: id, unset: true, actor };
      await writeEvents(tx, effectiveChanges(before, after, always), () => payload);
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

/**
 * 409 `rollout_in_progress` while a running or paused rollout holds the Merkmal at this org
 * unit or group: its rings decide there until it completes or is aborted. Read under the
 * organization's lock, which a rollout's creation takes too.
 */
export async function requireNoRollout(db: Db, scopeId: string, merkmal: string): Promise<void> {
  const [held] = await db<{ id: string }[]>`
    select id from rollouts where scope_id = ${scopeId} and merkmal = ${merkmal} and status in ('running', 'paused')`;
  if (held) {
    throw new ApiError(
      'rollout_in_progress',
      `Rollout ${held.id} is changing "${merkmal}" here; pause and abort it, or wait until it completes`,
    );
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

/** The same inputs with the written override of `merkmal` in place of the old one. */
export function applyChange(
  before: Affected,
  scope: Scope,
  id: string,
  merkmal: string,
  written: WrittenOverride | null,
): Affected {
  const override = written === null ? [] : [{ merkmal, state: written.state, optionen: written.optionen }];
  if (scope === 'org-units') {
    const units = new Map(before.units);
    const unit = units.get(id);
    if (unit)
      units.set(id, { ...unit, overrides: [...unit.overrides.filter((o) => o.merkmal !== merkmal), ...override] });
    return { units, devices: before.devices };
  }
  const devices = new Map<string, DeviceInputs>();
  for (const [deviceId, d] of before.devices) {
    if (scope === 'devices') {
      devices.set(
        deviceId,
        deviceId === id ? { ...d, device: [...d.device.filter((o) => o.merkmal !== merkmal), ...override] } : d,
      );
    } else {
      const groups = d.groups.filter((g) => g.groupId !== id || g.merkmal !== merkmal);
      if (written !== null) groups.push({ ...written, groupId: id });
      devices.set(deviceId, { ...d, groups });
    }
  }
  return { units: before.units, devices };
}
