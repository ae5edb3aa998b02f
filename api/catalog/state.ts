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

interface StateRow {
  found: boolean;
  catalog: Array<CatalogEntry & { name: string; kategorie: string }>;
  org_units: OrgUnitOverride[];
  groups: GroupOverride[];
  device: Override[];
}

/**
 * The resolved catalog of a device, ordered by Merkmal key; null when the device does not
 * exist. Archived and deprovisioned devices resolve like any other.
 */
export async function loadCatalogStates(db: Db, deviceId: string): Promise<CatalogState[] | null> {
  if (!uuidPattern.test(deviceId)) return null; // names no device; not worth a query (nor a cast error)
  const [row] = await db<StateRow[]>`
    with recursive dev as (
      select d.id, d.oe_id, dt.backend, dt.workspace
      from devices d
      join device_templates dt on dt.device_id = d.id
      where d.id = ${deviceId}
    ), chain (id, parent_id, depth) as (
      select ou.id, ou.parent_id, 0
      from dev join org_units ou on ou.id = dev.oe_id
      union all
      select ou.id, ou.parent_id, chain.depth + 1
      from chain join org_units ou on ou.id = chain.parent_id
      where chain.depth < ${MAX_ORG_UNIT_DEPTH}
    )
    select
      exists (select 1 from dev) as found,
      (select coalesce(json_agg(json_build_object(
                'merkmal', m.key, 'name', m.name, 'kategorie', m.kategorie,
                'inWorkspace', wm.merkmal is not null) order by m.key), '[]')
         from dev
         join blueprints b on b.backend = dev.backend
         join merkmale m on m.key = b.merkmal and m.im_auftragskatalog
         left join workspace_merkmale wm on wm.workspace = dev.workspace and wm.merkmal = m.key) as catalog,
      (select coalesce(json_agg(json_build_object(
                'merkmal', o.merkmal, 'state', o.state, 'optionen', o.optionen,
                'orgUnitId', chain.id, 'depth', chain.depth)), '[]')
         from chain join org_unit_merkmale o on o.org_unit_id = chain.id) as org_units,
      (select coalesce(json_agg(json_build_object(
                'merkmal', o.merkmal, 'state', o.state, 'optionen', o.optionen, 'groupId', o.group_id,
                'updatedAt', (extract(epoch from o.updated_at) * 1000000)::bigint)), '[]')
         from group_members gm join group_merkmale o on o.group_id = gm.group_id
         where gm.device_id = ${deviceId}) as groups,
      (select coalesce(json_agg(json_build_object('merkmal', o.merkmal, 'state', o.state, 'optionen', o.optionen)), '[]')
         from device_merkmale o
         where o.device_id = ${deviceId}) as device`;
  if (!row || !row.found) return null;

  const resolved = resolveCatalog({
    catalog: row.catalog,
    orgUnitOverrides: row.org_units,
    groupOverrides: row.groups,
    deviceOverrides: row.device,
  });
  return resolved.map((r, i) => ({ ...r, name: row.catalog[i]!.name, kategorie: row.catalog[i]!.kategorie }));
}
