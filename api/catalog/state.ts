/**
 * The effective order state of every catalog Merkmal of one device: what
 * `GET /devices/{id}/catalog` lists and what the agent's check-in returns as `auftraege`.
 *
 * Hot path (the check-in calls it thousands of times a second): ONE query gathers the
 * catalog of the device's backend with the workspace defaults, the overrides along the
 * org-unit chain (recursive CTE, however deep), of all the device's groups and of the
 * device itself; the rule is then applied in TypeScript by the pure `resolveCatalog`.
 * Every lookup is an index probe: devices and org_units by primary key, group_members by
 * `group_members_device`, the three override tables by their (owner, merkmal) primary keys.
 */
import type { Db } from '../db/client.ts';
import { seedDataCache } from '../db/seed_cache.ts';
import {
  resolveCatalog,
  type CatalogEntry,
  type GroupOverride,
  type OrgUnitOverride,
  type Override,
  type ResolvedMerkmal,
} from './resolution.ts';

export interface CatalogState extends ResolvedMerkmal {
  name: string;
  kategorie: string;
}

/** Org-unit chains longer than this are treated as corrupt data rather than followed forever. */
export const MAX_ORG_UNIT_DEPTH = 1000;

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A catalog Merkmal of a backend, with its workspace default. */
export interface CatalogMerkmal extends CatalogEntry {
  name: string;
  kategorie: string;
}

/**
 * The catalog of a backend and workspace (key `backend/workspace`): every Merkmal with
 * im_auftragskatalog and a blueprint for the backend, whether the workspace has it by
 * default, ordered by key. Seed data, so loaded once per client.
 */
const catalogOf = seedDataCache(async (db, key): Promise<CatalogMerkmal[]> => {
  const [backend, workspace] = key.split('/');
  return db<CatalogMerkmal[]>`
    select m.key as merkmal, m.name, m.kategorie, wm.merkmal is not null as "inWorkspace"
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

/** The row the state columns produce; `resolveStateRow` turns it into the resolved catalog. */
export interface StateRow {
  /** The device's assigned template, null when none was resolved yet. */
  template_id: string | null;
  org_units: OrgUnitOverride[];
  groups: GroupOverride[];
  device: Override[];
}

/**
 * The CTE that walks the org-unit chain of the device in a CTE named `dev` (columns `id`,
 * `oe_id`, `template_id`), for a query that begins `with recursive`. Every step
 * is a lateral primary-key probe (`limit 1`), so PostgreSQL cannot pick a plan that scans
 * `org_units`, even with a generic plan of the prepared statement.
 */
export function orgUnitChainCte(db: Db) {
  return db`
    chain (id, parent_id, depth) as (
      select ou.id, ou.parent_id, 0
      from dev cross join lateral (select id, parent_id from org_units where id = dev.oe_id limit 1) ou
      union all
      select ou.id, ou.parent_id, chain.depth + 1
      from chain cross join lateral (select id, parent_id from org_units where id = chain.parent_id limit 1) ou
      where chain.depth < ${MAX_ORG_UNIT_DEPTH}
    )`;
}

/**
 * The select-list columns (`template_id`, `org_units`, `groups`, `device`) that gather
 * what the resolution needs for the device in `dev`, given the `chain` CTE. The template's
 * backend and workspace and the catalog are seed data and come from caches. The override
 * lookups are lateral probes of the (owner, merkmal) primary keys (`offset 0` keeps the
 * planner from flattening them into scans).
 */
export function stateColumns(db: Db) {
  return db`
    (select template_id from dev) as template_id,
    (select coalesce(json_agg(json_build_object(
              'merkmal', o.merkmal, 'state', o.state, 'optionen', o.optionen,
              'orgUnitId', chain.id, 'depth', chain.depth)), '[]')
       from chain cross join lateral (
         select merkmal, state, optionen from org_unit_merkmale where org_unit_id = chain.id offset 0) o) as org_units,
    (select coalesce(json_agg(json_build_object(
              'merkmal', o.merkmal, 'state', o.state, 'optionen', o.optionen, 'groupId', gm.group_id,
              'updatedAt', (extract(epoch from o.updated_at) * 1000000)::bigint)), '[]')
       from dev
       cross join lateral (select group_id from group_members where device_id = dev.id offset 0) gm
       cross join lateral (
         select merkmal, state, optionen, updated_at from group_merkmale where group_id = gm.group_id offset 0) o) as groups,
    (select coalesce(json_agg(json_build_object('merkmal', o.merkmal, 'state', o.state, 'optionen', o.optionen)), '[]')
       from dev cross join lateral (
         select merkmal, state, optionen from device_merkmale where device_id = dev.id offset 0) o) as device`;
}

/**
 * Applies the rule to what `stateColumns` gathered, over the catalog of the device's
 * backend; also returns the device's effective template, which decided that catalog.
 */
export async function resolveStateRow(db: Db, row: StateRow): Promise<{ template: EffectiveTemplate; states: CatalogState[] }> {
  const template = await effectiveTemplate(db, row.template_id ?? '');
  const catalog = await catalogOf(db, `${template.backend}/${template.workspace}`);
  const resolved = resolveCatalog({
    catalog,
    orgUnitOverrides: row.org_units,
    groupOverrides: row.groups,
    deviceOverrides: row.device,
  });
  const states = resolved.map((r, i) => ({ ...r, name: catalog[i]!.name, kategorie: catalog[i]!.kategorie }));
  return { template, states };
}

/**
 * The resolved catalog of a device, ordered by Merkmal key; null when the device does not
 * exist. Archived and deprovisioned devices resolve like any other. One round trip.
 */
export async function loadCatalogStates(db: Db, deviceId: string): Promise<CatalogState[] | null> {
  if (!uuidPattern.test(deviceId)) return null; // names no device; not worth a query (nor a cast error)
  const [row] = await db<Array<StateRow & { found: boolean }>>`
    with recursive dev as (
      select id, oe_id, template_id from devices where id = ${deviceId}
    ), ${orgUnitChainCte(db)}
    select exists (select 1 from dev) as found, ${stateColumns(db)}`;
  if (!row || !row.found) return null;
  return (await resolveStateRow(db, row)).states;
}
