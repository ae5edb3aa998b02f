/**
 * The changes of the rollouts applied to a device (its row's `rollouts_text`), as the
 * resolution puts them in place. What a rollout changes (scope, Merkmal, action,
 * `optionen`) is fixed when it is created, so each is loaded once per database client and
 * kept; whether it applies to a device is the device row's business, read in the same
 * statement as the rest of its inputs.
 */
import type { Db } from '../db/client.ts';
import type { RolloutChange } from './resolution.ts';

/** Rollouts kept per database client; the least recently loaded one goes first. */
const MAX_ROLLOUTS = 10_000;

// Keyed by the client: a test's database or a transaction never sees another's entries.
const perClient = new WeakMap<object, Map<string, Promise<RolloutChange>>>();

interface RolloutRow {
  id: string;
  merkmal: string;
  scope: 'org_unit' | 'group';
  scope_id: string;
  action: 'select' | 'deselect' | 'unset';
  optionen: Record<string, unknown>;
  created_us: number | string;
}

/** The change a rollout row stands for. */
export function rolloutChangeOf(row: Omit<RolloutRow, 'id'>): RolloutChange {
  return {
    merkmal: row.merkmal,
    scope: row.scope,
    scopeId: row.scope_id,
    override:
      row.action === 'unset'
        ? null
        : { merkmal: row.merkmal, state: row.action === 'select' ? 'present' : 'absent', optionen: row.optionen },
    updatedAt: Number(row.created_us),
  };
}

/** The columns of `RolloutRow` for the rollout `r`. */
export function rolloutChangeColumns(db: Db) {
  return db`r.merkmal, r.scope, r.scope_id, r.action, r.optionen,
            (extract(epoch from r.created_at) * 1000000)::bigint as created_us`;
}

/** The changes of the rollouts in `idsText` (ids joined by commas; '' for none), in that order. */
export async function rolloutChanges(db: Db, idsText: string): Promise<RolloutChange[]> {
  if (idsText === '') return [];
  let entries = perClient.get(db);
  if (!entries) perClient.set(db, (entries = new Map()));
  const ids = idsText.split(',');
  const missing = ids.filter((id) => !entries.has(id));
  if (missing.length > 0) {
    const loading = db<RolloutRow[]>`
      select r.id, ${rolloutChangeColumns(db)} from rollouts r where r.id = any(${missing}::uuid[])`.then(
      (rows) => new Map(rows.map((r) => [r.id, rolloutChangeOf(r)])),
    );
    for (const id of missing) {
      const entry = loading.then((rows) => {
        const change = rows.get(id);
        if (change === undefined) throw new Error(`rollout ${id} does not exist`);
        return change;
      });
      entry.catch(() => entries.delete(id));
      entries.set(id, entry);
      if (entries.size > MAX_ROLLOUTS) entries.delete(entries.keys().next().value!);
    }
  }
  return Promise.all(ids.map((id) => entries.get(id) ?? rolloutChanges(db, id).then(([c]) => c!)));
}
