/**
 * Memoized reads of seed data (templates, blueprints, the order catalog): migrations write
 * it and no endpoint changes it, so the hot paths load each piece once per database client
 * instead of once per request. A failed load is not kept.
 */
import type { Db } from './client.ts';

export function seedDataCache<T>(load: (db: Db, key: string) => Promise<T>): (db: Db, key: string) => Promise<T> {
  // Keyed by the client: a test's database or a transaction never sees another's entries.
  const perClient = new WeakMap<object, Map<string, Promise<T>>>();
  return (db, key) => {
    let entries = perClient.get(db);
    if (!entries) perClient.set(db, (entries = new Map()));
    let entry = entries.get(key);
    if (!entry) {
      entry = load(db, key);
      entries.set(key, entry);
      entry.catch(() => entries.delete(key));
    }
    return entry;
  };
}
