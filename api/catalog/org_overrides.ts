/**
 * The organization-level overrides of the order catalog, cached per organization: the
 * org-unit tree with each unit's overrides and each group's overrides. These change only
 * on admin writes, while every check-in needs them; so the check-in reads the
 * organization's `override_versions` counter in its one statement (the database's
 * triggers move it with every change of units, groups or their overrides, see
 * sql/migrations/20261121950000_override_versions.sql) and this cache answers from memory
 * when it holds data at least that new. Otherwise one query loads the organization's data
 * and its counter from the same snapshot.
 *
 * A hit may be newer than the check-in's snapshot (another request loaded a later
 * version): that only shows a change a moment early, never an older state.
 */
import type { Db } from '../db/client.ts';
import type { GroupOverride, OrgUnitOverride, Override } from './resolution.ts';

/** Org-unit chains longer than this are treated as corrupt data rather than followed forever. */
const MAX_ORG_UNIT_DEPTH = 1000;

/** Organizations kept per database client; the least recently loaded one goes first. */
const MAX_ORGANIZATIONS = 10_000;

interface OrgUnitEntry {
  parentId: string | null;
  overrides: Override[];
}

export interface OrgOverrides {
  version: number;
  units: Map<string, OrgUnitEntry>;
  groups: Map<string, GroupOverride[]>;
  /** The chain overrides of each unit asked for so far (the entry is immutable, so is this). */
  chains: Map<string, OrgUnitOverride[]>;
}

interface LoadedRow {
  version: number | string;
  units: Array<{ id: string; parentId: string | null; overrides: Override[] }>;
  groups: GroupOverride[];
}

async function load(db: Db, organizationId: string): Promise<OrgOverrides> {
  const [row] = await db<LoadedRow[]>`
    select
      coalesce((select version from override_versions where organization_id = ${organizationId}), 0) as version,
      (select coalesce(json_agg(json_build_object(
                'id', ou.id, 'parentId', ou.parent_id,
                'overrides', (select coalesce(json_agg(json_build_object(
                                       'merkmal', o.merkmal, 'state', o.state, 'optionen', o.optionen)), '[]')
                              from org_unit_merkmale o where o.org_unit_id = ou.id))), '[]')
         from org_units ou where ou.organization_id = ${organizationId}) as units,
      (select coalesce(json_agg(json_build_object(
                'merkmal', o.merkmal, 'state', o.state, 'optionen', o.optionen, 'groupId', o.group_id,
                'updatedAt', (extract(epoch from o.updated_at) * 1000000)::bigint)), '[]')
         from groups g join group_merkmale o on o.group_id = g.id
         where g.organization_id = ${organizationId}) as groups`;
  const units = new Map<string, OrgUnitEntry>();
  for (const u of row!.units) units.set(u.id, { parentId: u.parentId, overrides: u.overrides });
  const groups = new Map<string, GroupOverride[]>();
  for (const o of row!.groups) {
    const list = groups.get(o.groupId);
    if (list === undefined) groups.set(o.groupId, [o]);
    else list.push(o);
  }
  // int8 arrives as a string from a client without the int8 parser (api/db/client.ts has one).
  return { version: Number(row!.version), units, groups, chains: new Map() };
}

interface Entry {
  loading: Promise<OrgOverrides>;
  /** Set once loaded: the hot path then answers without awaiting anything. */
  loaded?: OrgOverrides;
}

// Keyed by the client: a test's database or a transaction never sees another's entries.
const perClient = new WeakMap<object, Map<string, Entry>>();

/**
 * The organization's overrides at `atLeast` (the counter the caller read) or newer. A load
 * in flight is shared by everyone who needs no newer version, so a change costs each
 * process one reload, not one per waiting check-in; a failed load is not kept.
 */
export async function orgOverrides(db: Db, organizationId: string, atLeast: number | string): Promise<OrgOverrides> {
  const needed = Number(atLeast);
  let entries = perClient.get(db);
  if (!entries) perClient.set(db, (entries = new Map()));
  for (;;) {
    const entry = entries.get(organizationId);
    if (entry === undefined) break;
    if (entry.loaded) {
      if (entry.loaded.version >= needed) return entry.loaded;
      break;
    }
    const value = await entry.loading.catch(() => undefined);
    if (value && value.version >= needed) return value;
    if (entries.get(organizationId) === entry) break; // no newer load started meanwhile
  }
  // No await between the check above and this: concurrent callers find this load and share it.
  // It starts after the caller's statement, so its snapshot (and counter) is at least as new.
  const entry: Entry = { loading: load(db, organizationId) };
  entries.delete(organizationId);
  entries.set(organizationId, entry);
  if (entries.size > MAX_ORGANIZATIONS) entries.delete(entries.keys().next().value!);
  entry.loading.then(
    (value) => void (entry.loaded = value),
    () => {
      if (entries.get(organizationId) === entry) entries.delete(organizationId);
    },
  );
  return entry.loading;
}

/** The overrides along the chain of org units from `orgUnitId` up to its root, with their depth. */
export function chainOverrides(org: OrgOverrides, orgUnitId: string): readonly OrgUnitOverride[] {
  let chain = org.chains.get(orgUnitId);
  if (chain === undefined) org.chains.set(orgUnitId, (chain = walkChain(org, orgUnitId)));
  return chain;
}

function walkChain(org: OrgOverrides, orgUnitId: string): OrgUnitOverride[] {
  const result: OrgUnitOverride[] = [];
  for (const [id, unit, depth] of upTheTree(org.units, orgUnitId)) {
    for (const o of unit.overrides) result.push({ ...o, orgUnitId: id, depth });
  }
  return result;
}

/**
 * The org units from `orgUnitId` up to its root, with their depth (0: the unit itself).
 * Stops at a unit the map lacks, and after MAX_ORG_UNIT_DEPTH steps (corrupt data).
 */
export function* upTheTree<T extends { parentId: string | null }>(
  units: ReadonlyMap<string, T>,
  orgUnitId: string,
): Generator<[id: string, unit: T, depth: number]> {
  let id: string | null = orgUnitId;
  for (let depth = 0; id !== null && depth <= MAX_ORG_UNIT_DEPTH; depth++) {
    const unit = units.get(id);
    if (unit === undefined) return;
    yield [id, unit, depth];
    id = unit.parentId;
  }
}

/** The overrides of the given groups. */
export function groupOverrides(org: OrgOverrides, groupIds: readonly string[]): GroupOverride[] {
  return groupIds.flatMap((id) => org.groups.get(id) ?? []);
}
