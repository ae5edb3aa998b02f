/**
 * Org units as every select of the portal offers them: by path ("Schulen / Grundschule Nord /
 * Computerraum 1"), in tree order, so two units of the same name under different parents
 * are told apart.
 */

interface Unit {
  id: string;
  parent_id: string | null;
  name: string;
}

export interface UnitChoice<U extends Unit = Unit> {
  unit: U;
  path: string;
  depth: number;
}

/** The separator between the names of a path. */
const PATH_SEPARATOR = ' / ';

/** The units in tree order (depth-first, siblings by name), each with its path and depth. */
export function unitChoices<U extends Unit>(units: readonly U[]): UnitChoice<U>[] {
  const children = new Map<string | null, U[]>();
  for (const u of units) children.set(u.parent_id, [...(children.get(u.parent_id) ?? []), u]);
  const out: UnitChoice<U>[] = [];
  const walk = (parent: string | null, names: string[]) => {
    for (const u of (children.get(parent) ?? []).sort((a, b) => a.name.localeCompare(b.name, 'de'))) {
      const path = [...names, u.name];
      out.push({ unit: u, path: path.join(PATH_SEPARATOR), depth: names.length });
      // The tree has no cycles (a move refuses them); the bound only keeps a broken row from looping.
      if (path.length <= 100) walk(u.id, path);
    }
  };
  walk(null, []);
  return out;
}

/** Each unit's path by id. */
export function unitPaths(units: readonly Unit[]): Map<string, string> {
  return new Map(unitChoices(units).map((c) => [c.unit.id, c.path]));
}

/** The unit and every unit below it: where a unit cannot move to. */
export function subtreeOf(units: readonly Unit[], id: string): Set<string> {
  const children = new Map<string, string[]>();
  for (const u of units)
    if (u.parent_id !== null) children.set(u.parent_id, [...(children.get(u.parent_id) ?? []), u.id]);
  const below = new Set([id]);
  const queue = [id];
  for (let next = queue.pop(); next !== undefined; next = queue.pop()) {
    for (const child of children.get(next) ?? []) {
      if (!below.has(child)) {
        below.add(child);
        queue.push(child);
      }
    }
  }
  return below;
}
