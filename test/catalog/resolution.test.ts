/** Unit tests of the pure override resolution (api/catalog/README.md), row by row of the vote table. */
import { describe, expect, it } from 'vitest';
import {
  resolveCatalog,
  type GroupOverride,
  type OrgUnitOverride,
  type Override,
  type OverrideState,
  type ResolutionInput,
  type RolloutChange,
  withRolloutChanges,
} from '../../api/catalog/resolution.ts';

const M = 'libreoffice';

function input(partial: Partial<ResolutionInput> & { inWorkspace?: boolean } = {}): ResolutionInput {
  return {
    catalog: partial.catalog ?? [{ merkmal: M, inWorkspace: partial.inWorkspace ?? false }],
    orgUnitOverrides: partial.orgUnitOverrides ?? [],
    groupOverrides: partial.groupOverrides ?? [],
    deviceOverrides: partial.deviceOverrides ?? [],
  };
}

const oe = (depth: number, state: OverrideState, optionen = {}, merkmal = M): OrgUnitOverride => ({
  merkmal,
  state,
  optionen,
  orgUnitId: `oe-${depth}`,
  depth,
});

let groupSeq = 0;
const group = (
  state: OverrideState,
  updatedAt = 1,
  optionen = {},
  groupId = `g-${String(++groupSeq).padStart(4, '0')}`,
  merkmal = M,
): GroupOverride => ({ merkmal, state, optionen, groupId, updatedAt });

const device = (state: OverrideState, optionen = {}, merkmal = M): Override => ({ merkmal, state, optionen });

const votes = (present: number, absent: number) => [
  ...Array.from({ length: present }, (_, i) => group('present', i + 1)),
  ...Array.from({ length: absent }, (_, i) => group('absent', i + 1)),
];

function one(i: ResolutionInput) {
  const [r] = resolveCatalog(i);
  return r!;
}

describe('workspace default (step 1)', () => {
  it('is present for a workspace Merkmal and absent otherwise, origin workspace, optionen {}', () => {
    expect(one(input({ inWorkspace: true }))).toEqual({
      merkmal: M,
      state: 'present',
      origin: 'workspace',
      optionen: {},
    });
    expect(one(input({ inWorkspace: false }))).toEqual({
      merkmal: M,
      state: 'absent',
      origin: 'workspace',
      optionen: {},
    });
  });
});

describe('org-unit chain (step 2)', () => {
  it('the nearest unit with an override decides, whatever the order of the rows', () => {
    const chain = [oe(3, 'absent', { far: true }), oe(1, 'present', { near: true }), oe(2, 'absent')];
    expect(one(input({ orgUnitOverrides: chain }))).toEqual({
      merkmal: M,
      state: 'present',
      origin: 'oe',
      optionen: { near: true },
    });
  });

  it("an override on the device's own unit (depth 0) beats its ancestors", () => {
    expect(one(input({ inWorkspace: true, orgUnitOverrides: [oe(5, 'present'), oe(0, 'absent')] }))).toMatchObject({
      state: 'absent',
      origin: 'oe',
    });
  });

  it('follows a deep chain: only the nearest of 200 levels counts', () => {
    const chain = Array.from({ length: 200 }, (_, d) =>
      oe(d + 10, d % 2 === 0 ? 'present' : 'absent', { depth: d + 10 }),
    );
    expect(one(input({ orgUnitOverrides: chain }))).toEqual({
      merkmal: M,
      state: 'present',
      origin: 'oe',
      optionen: { depth: 10 },
    });
  });

  it('an org unit may confirm the workspace default and still be the origin', () => {
    expect(one(input({ inWorkspace: true, orgUnitOverrides: [oe(2, 'present')] }))).toMatchObject({
      state: 'present',
      origin: 'oe',
    });
  });
});

describe("groups (step 3): the contract's vote table", () => {
  it('absent (workspace), groups 1:0 -> present, gruppe', () => {
    expect(one(input({ groupOverrides: votes(1, 0) }))).toMatchObject({ state: 'present', origin: 'gruppe' });
  });

  it('present (oe), groups 1:1 -> present, oe', () => {
    expect(one(input({ orgUnitOverrides: [oe(0, 'present', { von: 'oe' })], groupOverrides: votes(1, 1) }))).toEqual({
      merkmal: M,
      state: 'present',
      origin: 'oe',
      optionen: { von: 'oe' },
    });
  });

  it('absent (oe), groups 2:1 -> present, gruppe', () => {
    expect(
      one(input({ inWorkspace: true, orgUnitOverrides: [oe(1, 'absent')], groupOverrides: votes(2, 1) })),
    ).toMatchObject({ state: 'present', origin: 'gruppe' });
  });

  it('present (workspace), groups 0:2 -> absent, gruppe', () => {
    expect(one(input({ inWorkspace: true, groupOverrides: votes(0, 2) }))).toMatchObject({
      state: 'absent',
      origin: 'gruppe',
    });
  });

  it('any inherited, any votes: the device override, geraet', () => {
    for (const inherited of [[], [oe(0, 'present')], [oe(3, 'absent')]]) {
      for (const [p, a] of [
        [0, 0],
        [1, 0],
        [0, 1],
        [3, 1],
        [1, 3],
        [2, 2],
      ] as const) {
        for (const d of ['present', 'absent'] as const) {
          const r = one(
            input({
              inWorkspace: p > a,
              orgUnitOverrides: inherited,
              groupOverrides: votes(p, a),
              deviceOverrides: [device(d, { d })],
            }),
          );
          expect(r).toEqual({ merkmal: M, state: d, origin: 'geraet', optionen: { d } });
        }
      }
    }
  });
});

describe('groups: ties and majorities beyond the table', () => {
  it("a single group overrides its org units (the tie goes to the groups' own majority)", () => {
    expect(one(input({ orgUnitOverrides: [oe(0, 'present')], groupOverrides: votes(0, 1) }))).toMatchObject({
      state: 'absent',
      origin: 'gruppe',
    });
  });

  it('evenly split groups (2:2) leave the inherited result with its own origin', () => {
    expect(one(input({ groupOverrides: votes(2, 2) }))).toMatchObject({ state: 'absent', origin: 'workspace' });
    expect(one(input({ inWorkspace: true, groupOverrides: votes(2, 2) }))).toMatchObject({
      state: 'present',
      origin: 'workspace',
    });
    expect(
      one(input({ orgUnitOverrides: [oe(4, 'absent')], inWorkspace: true, groupOverrides: votes(2, 2) })),
    ).toMatchObject({ state: 'absent', origin: 'oe' });
  });

  it('a group majority agreeing with the inherited state still has origin gruppe', () => {
    expect(one(input({ inWorkspace: true, groupOverrides: votes(2, 0) }))).toMatchObject({
      state: 'present',
      origin: 'gruppe',
    });
    expect(one(input({ orgUnitOverrides: [oe(0, 'absent')], groupOverrides: votes(1, 3) }))).toMatchObject({
      state: 'absent',
      origin: 'gruppe',
    });
  });

  it("matches the literal vote count (inherited = one more vote, ties to the groups' majority) for every small case", () => {
    for (let p = 0; p <= 5; p++) {
      for (let a = 0; a <= 5; a++) {
        for (const inherited of ['present', 'absent'] as const) {
          const r = one(input({ orgUnitOverrides: [oe(0, inherited)], groupOverrides: votes(p, a) }));
          const yes = p + (inherited === 'present' ? 1 : 0);
          const no = a + (inherited === 'absent' ? 1 : 0);
          const expected = yes > no ? 'present' : no > yes ? 'absent' : p > a ? 'present' : 'absent';
          expect(r.state, `${inherited} with ${p}:${a}`).toBe(expected);
          expect(r.origin, `${inherited} with ${p}:${a}`).toBe(p !== a ? 'gruppe' : 'oe');
        }
      }
    }
  });
});

describe('optionen', () => {
  it("come from the winning groups' most recently changed override", () => {
    const r = one(
      input({
        groupOverrides: [
          group('present', 100, { v: 'old' }),
          group('present', 300, { v: 'newest' }),
          group('absent', 400, { v: 'loser, even newer' }),
          group('present', 200, { v: 'middle' }),
        ],
      }),
    );
    expect(r).toEqual({ merkmal: M, state: 'present', origin: 'gruppe', optionen: { v: 'newest' } });
  });

  it('a tie in the change time goes to the smallest group id', () => {
    const r = one(
      input({
        groupOverrides: [group('absent', 7, { g: 'b' }, 'bbbb'), group('absent', 7, { g: 'a' }, 'aaaa')],
        inWorkspace: true,
      }),
    );
    expect(r.optionen).toEqual({ g: 'a' });
  });

  it('come from the deciding org unit, or the device override', () => {
    expect(
      one(input({ orgUnitOverrides: [oe(1, 'present', { oe: 1 }), oe(2, 'present', { oe: 2 })] })).optionen,
    ).toEqual({ oe: 1 });
    expect(
      one(input({ groupOverrides: votes(1, 0), deviceOverrides: [device('present', { dev: true })] })).optionen,
    ).toEqual({ dev: true });
  });

  it('are {} when a split group vote falls back to the workspace default', () => {
    expect(
      one(input({ groupOverrides: [group('present', 1, { x: 1 }), group('absent', 2, { y: 2 })] })).optionen,
    ).toEqual({});
  });
});

describe('resolveCatalog over several Merkmale', () => {
  it('keeps the catalog order, resolves each Merkmal on its own rows and ignores overrides of other Merkmale', () => {
    const result = resolveCatalog({
      catalog: [
        { merkmal: 'firefox', inWorkspace: true },
        { merkmal: 'gastsitzung', inWorkspace: false },
        { merkmal: 'libreoffice', inWorkspace: false },
        { merkmal: 'qgis', inWorkspace: false },
      ],
      orgUnitOverrides: [oe(0, 'present', {}, 'gastsitzung'), oe(0, 'present', {}, 'basis')],
      groupOverrides: [group('absent', 1, {}, 'g1', 'firefox'), group('present', 1, {}, 'g1', 'libreoffice')],
      deviceOverrides: [device('present', { a: 1 }, 'qgis'), device('absent', {}, 'desktop')],
    });
    expect(result).toEqual([
      { merkmal: 'firefox', state: 'absent', origin: 'gruppe', optionen: {} },
      { merkmal: 'gastsitzung', state: 'present', origin: 'oe', optionen: {} },
      { merkmal: 'libreoffice', state: 'present', origin: 'gruppe', optionen: {} },
      { merkmal: 'qgis', state: 'present', origin: 'geraet', optionen: { a: 1 } },
    ]);
  });

  it('returns nothing for an empty catalog', () => {
    expect(resolveCatalog(input({ catalog: [], deviceOverrides: [device('present')] }))).toEqual([]);
  });
});

describe('a rollout applied to the device (its change in place at its scope)', () => {
  const at = (scope: RolloutChange['scope'], scopeId: string, state: OverrideState | null, optionen = {}) => ({
    merkmal: M,
    scope,
    scopeId,
    override: state === null ? null : { merkmal: M, state, optionen },
    updatedAt: 10,
  });
  const place = {
    unitDepth: (id: string) => ({ 'oe-0': 0, 'oe-1': 1, 'oe-2': 2 })[id],
    inGroup: (id: string) => id === 'g-in',
  };
  const withChanges = (i: ResolutionInput, ...c: RolloutChange[]) => one(withRolloutChanges(i, c, place));

  it('replaces the override at its org unit, at that unit’s depth: a nearer unit still decides', () => {
    expect(
      withChanges(input({ orgUnitOverrides: [oe(1, 'absent')] }), at('org_unit', 'oe-1', 'present', { a: 1 })),
    ).toEqual({
      merkmal: M,
      state: 'present',
      origin: 'oe',
      optionen: { a: 1 },
    });
    expect(
      withChanges(input({ orgUnitOverrides: [oe(0, 'absent'), oe(2, 'absent')] }), at('org_unit', 'oe-2', 'present'))
        .state,
    ).toBe('absent');
  });

  it('an unset at its unit falls back to what is above it or the workspace', () => {
    expect(
      withChanges(input({ inWorkspace: true, orgUnitOverrides: [oe(0, 'absent')] }), at('org_unit', 'oe-0', null)),
    ).toEqual({
      merkmal: M,
      state: 'present',
      origin: 'workspace',
      optionen: {},
    });
  });

  it("votes as its group's override, most recent for optionen; a device override still wins", () => {
    const i = input({ groupOverrides: [group('absent', 1, {}, 'g-in')] });
    expect(withChanges(i, at('group', 'g-in', 'present', { b: 2 }))).toMatchObject({
      state: 'present',
      origin: 'gruppe',
      optionen: { b: 2 },
    });
    expect(withChanges({ ...i, deviceOverrides: [device('absent')] }, at('group', 'g-in', 'present')).origin).toBe(
      'geraet',
    );
  });

  it('changes nothing for a device that left its scope', () => {
    const i = input({ orgUnitOverrides: [oe(0, 'absent')], groupOverrides: [group('absent', 1, {}, 'g-out')] });
    expect(withChanges(i, at('org_unit', 'oe-elsewhere', 'present'), at('group', 'g-out', 'present'))).toEqual(one(i));
  });
});
