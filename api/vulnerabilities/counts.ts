/**
 * How many of an organization's devices each CVE affects: one rule for the stored counts
 * (recounted after a match) and the reads scoped to an org unit or a group. The devices
 * are counted per (package set, release) first (a fleet has a few hundred), then each
 * set's bitmap adds its devices to the CVEs it has.
 */
import type postgres from 'postgres';
import type { Db } from '../db/client.ts';
import { bitmapKey, type EntryList, entryLists, setBitmaps } from './entry_lists.ts';
import { URGENCIES, type Urgency } from './feed_parse.ts';

/** The devices of one (package set, release) in the scope, and what affects that set. */
export interface SetOfDevices {
  list: EntryList;
  affected: Uint8Array;
  devices: number;
}

export interface CveCount {
  cve: string;
  /** The worst urgency of its rows on the devices counted. */
  urgency: Urgency;
  /** Its source packages on those devices, sorted. */
  sources: string[];
  devices_affected: number;
  devices_fix_available: number;
  devices_no_fix: number;
}

/**
 * The (set, release) pairs of the organization's devices that are not archived and meet
 * `scope` (an expression over `d`, the devices), with their device counts and bitmaps:
 * from the devices' own rows (`inventory_set_id`, `inventory_release`, copied from their
 * inventories). Pairs not matched yet affect nothing.
 */
export async function devicesPerSet(
  db: Db,
  organizationId: string,
  scope: postgres.PendingQuery<postgres.Row[]> = db`true`,
): Promise<SetOfDevices[]> {
  for (let attempt = 1; ; attempt++) {
    const rows = await db<Array<{ package_set_id: number; list_id: string; n: number }>>`
      with sets as materialized (
        select d.inventory_set_id as package_set_id, d.inventory_release as release, count(*)::int as n
          from devices d
         where d.organization_id = ${organizationId} and d.archived_at is null and d.inventory_set_id is not null
           and ${scope}
         group by d.inventory_set_id, d.inventory_release
      )
      select m.package_set_id, m.list_id, s.n
        from sets s join vulnerability_matched_sets m on m.package_set_id = s.package_set_id and m.release = s.release`;
    const lists = await entryLists(
      db,
      rows.map((r) => r.list_id),
    );
    const bitmaps = await setBitmaps(db, rows);
    if (bitmaps && rows.every((r) => lists.has(r.list_id))) {
      return rows.map((r) => ({ list: lists.get(r.list_id)!, affected: bitmaps.get(bitmapKey(r))!, devices: r.n }));
    }
    // A set was matched again between the reads (its old list may be gone): read anew.
    if (attempt === 3) throw new Error('the security data changed during three reads in a row');
  }
}

/**
 * Per CVE: devices affected, with a fix available, without a fix; a device counts once
 * per CVE however many of its source packages it hits. Only CVEs affecting a device, in
 * CVE order.
 */
export function countCves(sets: readonly SetOfDevices[]): CveCount[] {
  // CVEs numbered across the lists involved (one per release and feed version): the
  // first list's as they are, the others' translated.
  const lists = [...new Set(sets.map((s) => s.list))];
  const cves: string[] = [...(lists[0]?.distinctCves ?? [])];
  const translations = new Map<EntryList, Int32Array>();
  if (lists[0]) translations.set(lists[0], Int32Array.from(cves.keys()));
  if (lists.length > 1) {
    const numbers = new Map(cves.map((cve, i) => [cve, i]));
    for (const list of lists.slice(1)) {
      const translation = new Int32Array(list.distinctCves.length);
      list.distinctCves.forEach((cve, i) => {
        let n = numbers.get(cve);
        if (n === undefined) {
          n = cves.push(cve) - 1;
          numbers.set(cve, n);
        }
        translation[i] = n;
      });
      translations.set(list, translation);
    }
  }
  const affected = new Float64Array(cves.length);
  const fix = new Float64Array(cves.length);
  const noFix = new Float64Array(cves.length);
  const rank = new Uint8Array(cves.length).fill(URGENCIES.length);
  const sources: Array<string[] | undefined> = [];
  // Per list and entry, the devices of the sets it affects. An entry whose CVE has no other
  // entry in its list needs no more: its devices are the CVE's there.
  const weights = new Map<EntryList, Float64Array>();
  // A CVE of several source packages: the last set (its number + 1) that counted it, so
  // that a device counts once per CVE.
  const counted = new Int32Array(cves.length);
  const countedFix = new Int32Array(cves.length);
  const countedNoFix = new Int32Array(cves.length);

  sets.forEach(({ list, affected: bitmap, devices }, k) => {
    if (devices <= 0) return;
    let weight = weights.get(list);
    if (!weight) weights.set(list, (weight = new Float64Array(list.cves.length)));
    const { shared } = list;
    const translation = translations.get(list)!;
    const bytes = Math.min(bitmap.length, Math.ceil(list.cves.length / 8));
    for (let byte = 0; byte < bytes; byte += 4) {
      // Four bytes at a time (bit n of the word is bit n % 8 of byte n / 8, as stored).
      let bits =
        (bitmap[byte]! | (bitmap[byte + 1]! << 8) | (bitmap[byte + 2]! << 16) | (bitmap[byte + 3]! << 24)) >>> 0;
      while (bits !== 0) {
        const lowest = bits & -bits;
        bits = (bits ^ lowest) >>> 0;
        const e = byte * 8 + 31 - Math.clz32(lowest);
        weight[e]! += devices;
        if (shared[e] === 0) continue;
        const c = translation[list.cveIndex[e]!]!;
        const mark = k + 1;
        if (counted[c] !== mark) {
          counted[c] = mark;
          affected[c]! += devices;
        }
        if (list.noFix[e] === 1) {
          if (countedNoFix[c] !== mark) {
            countedNoFix[c] = mark;
            noFix[c]! += devices;
          }
        } else if (countedFix[c] !== mark) {
          countedFix[c] = mark;
          fix[c]! += devices;
        }
      }
    }
  });

  for (const [list, weight] of weights) {
    const translation = translations.get(list)!;
    for (let e = 0; e < weight.length; e++) {
      const devices = weight[e]!;
      if (devices === 0) continue;
      const c = translation[list.cveIndex[e]!]!;
      if (list.shared[e] === 0) {
        affected[c]! += devices;
        if (list.noFix[e] === 1) noFix[c]! += devices;
        else fix[c]! += devices;
      }
      if (list.rank[e]! < rank[c]!) rank[c] = list.rank[e]!;
      const names = (sources[c] ??= []);
      if (!names.includes(list.sources[e]!)) names.push(list.sources[e]!);
    }
  }
  const counts: CveCount[] = [];
  for (let c = 0; c < cves.length; c++) {
    if (affected[c] === 0) continue;
    counts.push({
      cve: cves[c]!,
      urgency: URGENCIES[rank[c]!]!,
      sources: sources[c]!.sort(),
      devices_affected: affected[c]!,
      devices_fix_available: fix[c]!,
      devices_no_fix: noFix[c]!,
    });
  }
  // Already in order when one list is involved (its entries are sorted by CVE): a linear pass then.
  return counts.sort((a, b) => (a.cve < b.cve ? -1 : a.cve > b.cve ? 1 : 0));
}
