/**
 * The numbered entries a set's bitmap refers to (vulnerability_entry_lists), and the
 * bitmaps themselves. A list never changes once written, so each process keeps the few it
 * reads last, decoded; a read costs one small query for the bitmaps it needs.
 */
import type { Db } from '../db/client.ts';
import { URGENCIES, type Urgency } from './feed_parse.ts';

export interface EntryList {
  id: string;
  cves: string[];
  sources: string[];
  urgencies: Urgency[];
  /** null: no fix (`no_fix`). */
  fixed: Array<string | null>;
  /** Per entry, its urgency's rank (0 critical … 5 unimportant). */
  rank: Uint8Array;
  /** Per entry, 1 when it has no fix (`no_fix`), 0 when it has one (`fixed_available`). */
  noFix: Uint8Array;
  /** Per entry, the index of its CVE in `distinctCves`. */
  cveIndex: Int32Array;
  /** Per entry, 1 when its CVE has other entries here (other source packages). */
  shared: Uint8Array;
  distinctCves: string[];
}

/** Lists kept decoded: a feed version's few releases, and the previous version's during a rematch. */
const CACHED_LISTS = 32;
const cache = new Map<string, EntryList>();

function remember(list: EntryList): EntryList {
  cache.delete(list.id);
  cache.set(list.id, list);
  while (cache.size > CACHED_LISTS) cache.delete(cache.keys().next().value!);
  return list;
}

/** A list as the arrays it is stored as; its entries are in the order they are numbered. */
export function decodeList(row: {
  id: string;
  cves: string[];
  sources: string[];
  urgencies: string[];
  fixed_versions: Array<string | null>;
}): EntryList {
  const n = row.cves.length;
  const rank = new Uint8Array(n);
  const noFix = new Uint8Array(n);
  const cveIndex = new Int32Array(n);
  const distinctCves: string[] = [];
  const seen = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    rank[i] = URGENCIES.indexOf(row.urgencies[i] as Urgency);
    noFix[i] = row.fixed_versions[i] === null ? 1 : 0;
    const cve = row.cves[i]!;
    let index = seen.get(cve);
    if (index === undefined) {
      index = distinctCves.push(cve) - 1;
      seen.set(cve, index);
    }
    cveIndex[i] = index;
  }
  const perCve = new Int32Array(distinctCves.length);
  for (let i = 0; i < n; i++) perCve[cveIndex[i]!]!++;
  const shared = new Uint8Array(n);
  for (let i = 0; i < n; i++) shared[i] = perCve[cveIndex[i]!]! > 1 ? 1 : 0;
  return remember({
    id: row.id,
    cves: row.cves,
    sources: row.sources,
    urgencies: row.urgencies as Urgency[],
    fixed: row.fixed_versions,
    rank,
    noFix,
    cveIndex,
    shared,
    distinctCves,
  });
}

/** The lists of these ids, decoded (from memory when read before). */
export async function entryLists(db: Db, ids: Iterable<string>): Promise<Map<string, EntryList>> {
  const found = new Map<string, EntryList>();
  const missing: string[] = [];
  for (const id of new Set(ids)) {
    const known = cache.get(id);
    if (known) found.set(id, known);
    else missing.push(id);
  }
  if (missing.length > 0) {
    const rows = await db<
      Array<{
        id: string;
        cves: string[];
        sources: string[];
        urgencies: string[];
        fixed_versions: Array<string | null>;
      }>
    >`select id, cves, sources, urgencies, fixed_versions from vulnerability_entry_lists where id = any(${missing}::uuid[])`;
    for (const row of rows) found.set(row.id, decodeList(row));
  }
  return found;
}

/**
 * Bitmaps (rows naming their list) and the lists they need. A list goes once no set refers
 * to it: when a rematch replaced a row between the two reads, the rows are read again.
 */
export async function readWithLists<R extends { list_id: string | null }>(
  db: Db,
  read: () => Promise<R[]>,
): Promise<{ rows: R[]; lists: Map<string, EntryList> }> {
  for (let attempt = 1; ; attempt++) {
    const rows = await read();
    const ids = rows.flatMap((r) => (r.list_id === null ? [] : [r.list_id]));
    const lists = await entryLists(db, ids);
    if (ids.every((id) => lists.has(id))) return { rows, lists };
    if (attempt === 3) throw new Error('the security data changed during three reads in a row');
  }
}

/** Bitmaps kept: a fleet's few hundred sets, a few KiB each. */
const CACHED_BITMAP_BYTES = 64 * 1024 * 1024;
const bitmapCache = new Map<string, Uint8Array>();
let cachedBitmapBytes = 0;

/**
 * The bitmaps of these sets as matched against these lists (a set's bitmap for one list
 * never changes), from memory when read before; null when one is no longer stored (its
 * set was matched again meanwhile).
 */
export async function setBitmaps(
  db: Db,
  pairs: ReadonlyArray<{ package_set_id: number; list_id: string }>,
): Promise<Map<string, Uint8Array> | null> {
  const found = new Map<string, Uint8Array>();
  const missing: Array<{ package_set_id: number; list_id: string }> = [];
  for (const pair of pairs) {
    const key = bitmapKey(pair);
    const known = bitmapCache.get(key);
    if (known) {
      bitmapCache.delete(key);
      bitmapCache.set(key, known);
      found.set(key, known);
    } else {
      missing.push(pair);
    }
  }
  if (missing.length > 0) {
    const rows = await db<Array<{ package_set_id: number; list_id: string; affected: Uint8Array }>>`
      select m.package_set_id, m.list_id, m.affected
        from unnest(${missing.map((p) => p.package_set_id)}::bigint[], ${missing.map((p) => p.list_id)}::uuid[]) as x (s, l)
        join vulnerability_matched_sets m on m.package_set_id = x.s and m.list_id = x.l`;
    for (const row of rows) {
      const key = bitmapKey(row);
      found.set(key, row.affected);
      bitmapCache.set(key, row.affected);
      cachedBitmapBytes += row.affected.byteLength;
    }
    while (cachedBitmapBytes > CACHED_BITMAP_BYTES) {
      const [oldest, bitmap] = bitmapCache.entries().next().value!;
      bitmapCache.delete(oldest);
      cachedBitmapBytes -= bitmap.byteLength;
    }
  }
  return pairs.every((p) => found.has(bitmapKey(p))) ? found : null;
}

export function bitmapKey(pair: { package_set_id: number; list_id: string }): string {
  return `${pair.list_id}:${pair.package_set_id}`;
}

/** An empty bitmap for `entries` entries. */
export function newBitmap(entries: number): Uint8Array {
  return new Uint8Array(Math.ceil(entries / 8));
}

export function setBit(bitmap: Uint8Array, n: number): void {
  bitmap[n >> 3]! |= 1 << (n & 7);
}

/** Calls `fn` with each set bit's number, ascending. */
export function forEachBit(bitmap: Uint8Array, fn: (n: number) => void): void {
  for (let byte = 0; byte < bitmap.length; byte++) {
    let bits = bitmap[byte]!;
    while (bits !== 0) {
      const lowest = bits & -bits;
      fn(byte * 8 + 31 - Math.clz32(lowest));
      bits ^= lowest;
    }
  }
}
