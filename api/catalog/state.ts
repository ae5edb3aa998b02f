/**
 * The effective order state of every catalog Merkmal of one device: what
 * `GET /devices/{id}/catalog` lists and what the agent's check-in returns as `auftraege`.
 *
 * Hot path (the check-in calls it thousands of times a second): the device's own inputs
 * come from the columns of `deviceStateColumns` in the caller's one statement (its org
 * unit, its groups, its own overrides, and the organization's override counter); the
 * organization's org-unit tree and group overrides come from the versioned cache of
 * `org_overrides.ts`; the template and the catalog are seed data, cached too. The rule
 * is then applied by the pure `resolveCatalog`. Listing and check-in share all of this,
 * so they cannot disagree.
 */
import type { Db } from '../db/client.ts';
import { seedDataCache } from '../db/seed_cache.ts';
import { chainOverrides, groupOverrides, type OrgOverrides, orgOverrides, upTheTree } from './org_overrides.ts';
import {
  explainOne,
  resolveCatalog,
  withRolloutChanges,
  type CatalogEntry,
  type DevicePlace,
  type Explanation,
  type Override,
  type ResolvedMerkmal,
} from './resolution.ts';
import { rolloutChangeColumns, rolloutChangeOf, rolloutChanges } from './rollout_changes.ts';

export interface CatalogState extends ResolvedMerkmal {
  name: string;
  kategorie: string;
}

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A catalog Merkmal of a backend, with its workspace default and its role on that backend. */
export interface CatalogMerkmal extends CatalogEntry {
  name: string;
  kategorie: string;
  ansibleRole: string;
}

/**
 * The catalog of a backend and workspace (key `backend/workspace`): every Merkmal with
 * im_auftragskatalog and a blueprint for the backend, whether the workspace has it by
 * default, ordered by key. Seed data, so loaded once per client.
 */
const catalogOf = seedDataCache(async (db, key): Promise<CatalogMerkmal[]> => {
  const [backend, workspace] = key.split('/');
  return db<CatalogMerkmal[]>`
    select m.key as merkmal, m.name, m.kategorie, wm.merkmal is not null as "inWorkspace", b.ansible_role as "ansibleRole"
    from blueprints b
    join merkmale m on m.key = b.merkmal and m.im_auftragskatalog
    left join workspace_merkmale wm on wm.workspace = ${workspace!} and wm.merkmal = m.key
    where b.backend = ${backend!}
    order by m.key`;
});

/** A template's backend and workspace: what decides a device's catalog and blueprints. */
export interface EffectiveTemplate {
  id: string;
  backend: string;
  workspace: string;
}

/**
 * The template a device's `template_id` stands for (null: the default template of the
 * preferred backend, by the database's `effective_template_id`). Seed data: cached.
 */
const effectiveTemplate = seedDataCache(async (db, assigned): Promise<EffectiveTemplate> => {
  const [row] = await db<EffectiveTemplate[]>`
    select id, backend, workspace from templates
    where id = effective_template_id(${assigned === '' ? null : assigned}::uuid)`;
  if (!row) throw new Error(`no template for assignment ${assigned || '(none)'}`);
  return row;
});

/**
 * The row `deviceStateColumns` produce; `resolveStateRow` turns it into the resolved catalog.
 * The groups and the device's own overrides stay the texts the database keeps on the
 * device's row, in a fixed order: the check-in's key of its remembered ETag is a stamp of
 * them, and an unchanged check-in (304) never needs them parsed (`ownInputs` does that for the resolution).
 */
export interface StateRow {
  /** The device's assigned template, null when none was resolved yet. */
  template_id: string | null;
  oe_id: string;
  organization_id: string;
  /** The organization's `override_versions` counter, read in the same snapshot. */
  override_version: number | string;
  /** The ids of the device's groups, ordered and joined by commas ('' for none). */
  group_ids: string;
  /** The device's own overrides as a JSON array, ordered by Merkmal. */
  device: string;
  /** The ids of the rollouts applied to the device, ordered and joined by commas ('' for none). */
  rollouts: string;
}

/**
 * The select-list columns of `StateRow` for the device row `d` (columns of `devices`): the
 * device's own columns, its groups and overrides among them (triggers keep those texts from
 * `group_members` and `device_merkmale`: migration `20261125100000`), and one probe of the
 * small `override_versions`.
 */
export function deviceStateColumns(db: Db) {
  return db`
    d.template_id, d.oe_id, d.organization_id,
    coalesce((select v.version from override_versions v where v.organization_id = d.organization_id), 0) as override_version,
    d.group_ids_text as group_ids, d.own_overrides_text as device, d.rollouts_text as rollouts`;
}

/** The device's groups and own overrides, parsed from the row. */
function ownInputs(row: StateRow): { groupIds: string[]; overrides: Override[] } {
  return { groupIds: row.group_ids === '' ? [] : row.group_ids.split(','), overrides: JSON.parse(row.device) };
}

/**
 * Applies the rule to what `deviceStateColumns` gathered and the organization's cached
 * overrides, over the catalog of the device's backend (`resolved[i]` is `catalog[i]`);
 * also returns the device's effective template, which decided that catalog.
 */
export async function resolveStateRow(
  db: Db,
  row: StateRow,
): Promise<{ template: EffectiveTemplate; catalog: readonly CatalogMerkmal[]; resolved: ResolvedMerkmal[] }> {
  const template = await effectiveTemplate(db, row.template_id ?? '');
  const catalog = await catalogOf(db, `${template.backend}/${template.workspace}`);
  const org = await orgOverrides(db, row.organization_id, row.override_version);
  const own = ownInputs(row);
  const input = {
    catalog,
    orgUnitOverrides: chainOverrides(org, row.oe_id),
    groupOverrides: groupOverrides(org, own.groupIds),
    deviceOverrides: own.overrides,
  };
  const rollouts = await rolloutChanges(db, row.rollouts);
  const resolved = resolveCatalog(
    rollouts.length === 0 ? input : withRolloutChanges(input, rollouts, placeOf(org, row.oe_id, own.groupIds)),
  );
  return { template, catalog, resolved };
}

/** The device's place, for the rollouts applied to it. */
function placeOf(org: OrgOverrides, oeId: string, groupIds: readonly string[]): DevicePlace {
  return {
    unitDepth: (id) => {
      for (const [unitId, , depth] of upTheTree(org.units, oeId)) if (unitId === id) return depth;
      return undefined;
    },
    inGroup: (id) => groupIds.includes(id),
  };
}

/**
 * The resolved catalog of a device, ordered by Merkmal key; null when the device does not
 * exist. Archived and deprovisioned devices resolve like any other. One round trip, plus one
 * to load the organization's overrides when they changed since this client last loaded them.
 */
export async function loadCatalogStates(db: Db, deviceId: string): Promise<CatalogState[] | null> {
  if (!uuidPattern.test(deviceId)) return null; // names no device; not worth a query (nor a cast error)
  const [row] = await db<StateRow[]>`select ${deviceStateColumns(db)} from devices d where d.id = ${deviceId}`;
  if (!row) return null;
  const { catalog, resolved } = await resolveStateRow(db, row);
  return resolved.map((r, i) => ({ ...r, name: catalog[i]!.name, kategorie: catalog[i]!.kategorie }));
}

/**
 * Why one Merkmal of a device has its state (the explain route): the same row, the same cached
 * organization overrides and the same catalog as `loadCatalogStates`, plus the names of
 * the units and groups.
 */
export async function loadExplanation(
  db: Db,
  deviceId: string,
  merkmal: string,
): Promise<Explanation | 'no_device' | 'not_in_catalog'> {
  if (!uuidPattern.test(deviceId)) return 'no_device';
  const [row] = await db<StateRow[]>`select ${deviceStateColumns(db)} from devices d where d.id = ${deviceId}`;
  if (!row) return 'no_device';
  const template = await effectiveTemplate(db, row.template_id ?? '');
  const entry = (await catalogOf(db, `${template.backend}/${template.workspace}`)).find((m) => m.merkmal === merkmal);
  if (entry === undefined) return 'not_in_catalog';
  const org = await orgOverrides(db, row.organization_id, row.override_version);
  const own = ownInputs(row);
  const chain = [...upTheTree(org.units, row.oe_id)];
  const voting = groupOverrides(org, own.groupIds).filter((o) => o.merkmal === merkmal);
  const names = new Map(
    (
      await db<{ id: string; name: string }[]>`
        select id, name from org_units where id = any(${chain.map(([id]) => id)}::uuid[])
        union all
        select id, name from groups where id = any(${voting.map((o) => o.groupId)}::uuid[])`
    ).map((r) => [r.id, r.name]),
  );
  const [held] = await db<
    Array<{ id: string; ring: number; applied: boolean } & Parameters<typeof rolloutChangeOf>[0]>
  >`
    select r.id, rd.ring, rd.applied, ${rolloutChangeColumns(db)}
    from rollout_devices rd join rollouts r on r.id = rd.rollout_id
    where rd.device_id = ${deviceId} and r.merkmal = ${merkmal} and r.status in ('running', 'paused')`;
  const change = held && rolloutChangeOf(held);
  const inScope =
    change &&
    (change.scope === 'org_unit' ? chain.some(([id]) => id === change.scopeId) : own.groupIds.includes(change.scopeId));
  return explainOne(
    entry,
    chain.map(([id, unit]) => ({
      orgUnitId: id,
      name: names.get(id) ?? '',
      override: unit.overrides.find((o) => o.merkmal === merkmal),
    })),
    voting
      .map((o) => ({ name: names.get(o.groupId) ?? '', override: o }))
      .sort((a, b) => a.name.localeCompare(b.name) || a.override.groupId.localeCompare(b.override.groupId)),
    own.overrides.find((o) => o.merkmal === merkmal),
    inScope ? { id: held!.id, ring: held!.ring, ringOpen: held!.applied, change: change! } : undefined,
  );
}
