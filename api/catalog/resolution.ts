/**
 * The override resolution ("resolve_katalog_overrides", api/catalog/README.md): the one place the
 * rule lives. Pure: no I/O, no clock. The device catalog listing, the selection events and
 * the agent's check-in all feed it the rows they loaded and get the same answer.
 *
 * For one device and one catalog Merkmal:
 * 1. workspace default: `present` if the Merkmal is in the workspace, else `absent` (origin `workspace`);
 * 2. org-unit chain: the nearest org unit with an override decides (origin `oe`);
 * 3. groups: when the device's groups that override the Merkmal have a strict majority
 *    (present vs absent votes), it wins (origin `gruppe`); when they are evenly split or
 *    there are none, the result of 1–2 stands. This is the same as "the result of 1–2 is
 *    one more vote, the larger side wins, a tie goes to the groups' own majority";
 * 4. a device override always wins (origin `geraet`).
 *
 * `optionen` come from the override that decided: the device's, the deciding org unit's, or,
 * among the groups on the winning side, the one changed most recently (ties: the smallest
 * group id); `{}` for the workspace default.
 */

export type OverrideState = 'present' | 'absent';
type Origin = 'workspace' | 'oe' | 'gruppe' | 'geraet';
export type Optionen = Record<string, unknown>;

/** One sparse override row: no row for a Merkmal means "unset" (inherit). */
export interface Override {
  merkmal: string;
  state: OverrideState;
  optionen: Optionen;
}

export interface OrgUnitOverride extends Override {
  orgUnitId: string;
  /** Distance from the device's own org unit: 0 = its own unit, 1 = the parent, and so on. */
  depth: number;
}

export interface GroupOverride extends Override {
  groupId: string;
  /**
   * When the override last changed, as a number that only needs to order correctly
   * (the state loader passes microseconds since the epoch).
   */
  updatedAt: number;
}

export interface CatalogEntry {
  merkmal: string;
  /** True when the Merkmal is in the `workspace_merkmale` of the device's workspace. */
  inWorkspace: boolean;
}

export interface ResolutionInput {
  /**
   * The catalog Merkmale to resolve (im_auftragskatalog, with a blueprint for the device's
   * backend), in the order the result should have. Overrides of other Merkmale are ignored.
   */
  catalog: readonly CatalogEntry[];
  /** Overrides along the device's org-unit chain, any order (`depth` says which is nearest). */
  orgUnitOverrides: readonly OrgUnitOverride[];
  /** Overrides of every group the device is a member of. */
  groupOverrides: readonly GroupOverride[];
  /** The device's own overrides. */
  deviceOverrides: readonly Override[];
}

export interface ResolvedMerkmal {
  merkmal: string;
  state: OverrideState;
  origin: Origin;
  optionen: Optionen;
}

/** Resolves every Merkmal of `input.catalog`, in that order. */
export function resolveCatalog(input: ResolutionInput): ResolvedMerkmal[] {
  // Index once, so the cost is linear in the rows whatever the depth or the group count.
  const nearestOrgUnit = new Map<string, OrgUnitOverride>();
  for (const o of input.orgUnitOverrides) {
    const seen = nearestOrgUnit.get(o.merkmal);
    if (seen === undefined || o.depth < seen.depth) nearestOrgUnit.set(o.merkmal, o);
  }
  const groupsByMerkmal = new Map<string, GroupOverride[]>();
  for (const o of input.groupOverrides) {
    const list = groupsByMerkmal.get(o.merkmal);
    if (list === undefined) groupsByMerkmal.set(o.merkmal, [o]);
    else list.push(o);
  }
  const device = new Map<string, Override>();
  for (const o of input.deviceOverrides) device.set(o.merkmal, o);

  return input.catalog.map((entry) =>
    resolveOne(
      entry,
      nearestOrgUnit.get(entry.merkmal),
      groupsByMerkmal.get(entry.merkmal) ?? [],
      device.get(entry.merkmal),
    ),
  );
}

/**
 * One Merkmal, from the rows that concern it: the nearest org-unit override (if any),
 * the group overrides, the device override (if any).
 */
function resolveOne(
  entry: CatalogEntry,
  orgUnit: Override | undefined,
  groups: readonly GroupOverride[],
  device: Override | undefined,
): ResolvedMerkmal {
  const { merkmal } = entry;
  if (device !== undefined) return { merkmal, state: device.state, origin: 'geraet', optionen: device.optionen };

  let present = 0;
  let absent = 0;
  for (const g of groups) {
    if (g.state === 'present') present++;
    else absent++;
  }
  if (present !== absent) {
    const state: OverrideState = present > absent ? 'present' : 'absent';
    return { merkmal, state, origin: 'gruppe', optionen: mostRecent(groups, state).optionen };
  }

  if (orgUnit !== undefined) return { merkmal, state: orgUnit.state, origin: 'oe', optionen: orgUnit.optionen };
  return { merkmal, state: entry.inWorkspace ? 'present' : 'absent', origin: 'workspace', optionen: {} };
}

/**
 * A staged rollout's change as the resolution of a device in one of its open rings sees it
 * (api/rollouts/README.md): the selection the rollout will write at its scope when it
 * completes, put in place now for this device alone. `override` null is an unset.
 */
export interface RolloutChange {
  merkmal: string;
  scope: 'org_unit' | 'group';
  scopeId: string;
  override: Override | null;
  /** When the rollout was created, ordered as `GroupOverride.updatedAt` is. */
  updatedAt: number;
}

/** Where the device stands: its org-unit chain's depths and its groups. */
export interface DevicePlace {
  /** The depth of an org unit in the device's chain (0: its own), undefined when not in it. */
  unitDepth(orgUnitId: string): number | undefined;
  inGroup(groupId: string): boolean;
}

/**
 * The inputs with each rollout's change in place of the scope's own override of its
 * Merkmal, as if the change were written. A rollout whose scope the device has left
 * changes nothing: it moves the device only while the device is where it was aimed.
 */
export function withRolloutChanges(
  input: ResolutionInput,
  changes: readonly RolloutChange[],
  place: DevicePlace,
): ResolutionInput {
  let { orgUnitOverrides, groupOverrides } = input;
  for (const c of changes) {
    if (c.scope === 'org_unit') {
      const depth = place.unitDepth(c.scopeId);
      if (depth === undefined) continue;
      orgUnitOverrides = orgUnitOverrides.filter((o) => o.orgUnitId !== c.scopeId || o.merkmal !== c.merkmal);
      if (c.override !== null) orgUnitOverrides = [...orgUnitOverrides, { ...c.override, orgUnitId: c.scopeId, depth }];
    } else {
      if (!place.inGroup(c.scopeId)) continue;
      groupOverrides = groupOverrides.filter((o) => o.groupId !== c.scopeId || o.merkmal !== c.merkmal);
      if (c.override !== null)
        groupOverrides = [...groupOverrides, { ...c.override, groupId: c.scopeId, updatedAt: c.updatedAt }];
    }
  }
  return { ...input, orgUnitOverrides, groupOverrides };
}

/**
 * Whether two `optionen` say the same: equal JSON values, whatever the order of the keys
 * (the database's jsonb orders them its own way, a request in the order it was written).
 */
export function sameOptionen(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((v, i) => sameOptionen(v, b[i]));
  }
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  const keys = Object.keys(x);
  return keys.length === Object.keys(y).length && keys.every((k) => Object.hasOwn(y, k) && sameOptionen(x[k], y[k]));
}

/** The override of the given state changed last; ties go to the smallest group id. */
function mostRecent(groups: readonly GroupOverride[], state: OverrideState): GroupOverride {
  let best: GroupOverride | undefined;
  for (const g of groups) {
    if (g.state !== state) continue;
    if (
      best === undefined ||
      g.updatedAt > best.updatedAt ||
      (g.updatedAt === best.updatedAt && g.groupId < best.groupId)
    )
      best = g;
  }
  // Only called when `state` has a strict majority, so at least one override has it.
  return best!;
}

/** One step of the resolution as `GET /devices/{id}/catalog/{merkmal}/explain` shows it. */
type ExplainStep =
  | { step: 'workspace'; state: OverrideState }
  | { step: 'oe'; org_unit_id: string; name: string; state: OverrideState | null }
  | {
      step: 'gruppe';
      present: number;
      absent: number;
      groups: Array<{ group_id: string; name: string; state: OverrideState }>;
    }
  | { step: 'rollout'; rollout_id: string; ring: number; ring_open: boolean; state: OverrideState }
  | { step: 'geraet'; state: OverrideState | null };

/** An org unit of the device's chain, nearest first, with its override of the Merkmal if any. */
export interface ChainUnit {
  orgUnitId: string;
  name: string;
  override: Override | undefined;
}

/** A group of the device with an override of the Merkmal. */
export interface VotingGroup {
  name: string;
  override: GroupOverride;
}

export interface Explanation extends ResolvedMerkmal {
  steps: ExplainStep[];
}

/** A running or paused rollout of the Merkmal that holds the device: its ring, and its change. */
export interface HoldingRollout {
  id: string;
  ring: number;
  /** Whether the device's ring is open: the change is in place for it. */
  ringOpen: boolean;
  change: RolloutChange;
}

/**
 * The resolution of one Merkmal written out step by step (api/catalog/README.md, Explain). The decision is
 * taken from the steps by the same `resolveOne` every listing and check-in uses: the chain
 * step hands it the nearest unit with an override, the group step its votes, the device
 * step its override, so an explanation cannot tell a different story than the state.
 */
export function explainOne(
  entry: CatalogEntry,
  chain: readonly ChainUnit[],
  groups: readonly VotingGroup[],
  device: Override | undefined,
  rollout?: HoldingRollout,
): Explanation {
  const decide = (units: readonly ChainUnit[], votes: readonly GroupOverride[]) =>
    resolveOne(entry, units.find((u) => u.override !== undefined)?.override, votes, device);
  const votes = groups.map((g) => g.override);
  let decision = decide(chain, votes);
  let rolloutStep: ExplainStep[] = [];
  if (rollout !== undefined) {
    // The state with the rollout's change in place at its scope, as the device's resolution
    // puts it once its ring is open.
    const { change } = rollout;
    const changed =
      change.scope === 'org_unit'
        ? decide(
            chain.map((u) => (u.orgUnitId === change.scopeId ? { ...u, override: change.override ?? undefined } : u)),
            votes,
          )
        : decide(chain, [
            ...votes.filter((o) => o.groupId !== change.scopeId),
            ...(change.override === null
              ? []
              : [{ ...change.override, groupId: change.scopeId, updatedAt: change.updatedAt }]),
          ]);
    rolloutStep = [
      {
        step: 'rollout',
        rollout_id: rollout.id,
        ring: rollout.ring,
        ring_open: rollout.ringOpen,
        state: changed.state,
      },
    ];
    if (rollout.ringOpen) decision = changed;
  }
  const steps: ExplainStep[] = [
    { step: 'workspace', state: entry.inWorkspace ? 'present' : 'absent' },
    ...chain.map(
      (u): ExplainStep => ({ step: 'oe', org_unit_id: u.orgUnitId, name: u.name, state: u.override?.state ?? null }),
    ),
    {
      step: 'gruppe',
      present: groups.filter((g) => g.override.state === 'present').length,
      absent: groups.filter((g) => g.override.state === 'absent').length,
      groups: groups.map((g) => ({ group_id: g.override.groupId, name: g.name, state: g.override.state })),
    },
    ...rolloutStep,
    { step: 'geraet', state: device?.state ?? null },
  ];
  return { ...decision, steps };
}
