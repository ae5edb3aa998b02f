/**
 * The two security feeds read into one shape: per (CVE, source package, release) whether a
 * release is affected, from which version, up to which fix, at which urgency. Linear in
 * the input: every record is read once and nothing is searched.
 */

export const URGENCIES = ['critical', 'high', 'medium', 'low', 'unknown', 'unimportant'] as const;
export type Urgency = (typeof URGENCIES)[number];

export type FeedName = 'debian' | 'ubuntu';

export interface FeedEntry {
  cve: string;
  source: string;
  release: string;
  /** Affected from this version on; null: every version. */
  introduced: string | null;
  /** null: no fix yet. */
  fixed: string | null;
  urgency: Urgency;
}

/** What a feed said: the entries that can affect a device, and how many it named in all. */
export interface ParsedFeed {
  entries: FeedEntry[];
  /** Every (CVE, source, release) read, those that say "never affected" included. */
  count: number;
}

const CVE = /^CVE-\d{4}-\d{4,}$/;

function object(value: unknown): Record<string, unknown> | null {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : null;
}

function text(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}

/**
 * Debian's urgency: `unimportant` and `end-of-life` (no security support) are unimportant,
 * `not yet assigned` unknown; the tracker marks a derived urgency with `*`, dropped here.
 */
function debianUrgency(raw: unknown): Urgency {
  const urgency = (text(raw) ?? '').replace(/\*+$/, '').trim();
  if (urgency === 'unimportant' || urgency === 'end-of-life') return 'unimportant';
  if (urgency === 'critical' || urgency === 'high' || urgency === 'medium' || urgency === 'low') return urgency;
  return 'unknown';
}

/** A version of the data: starts with a digit (an epoch or upstream); `<unfixed>` and the like are none. */
function version(raw: unknown): string | null {
  const v = text(raw)?.trim();
  return v && /^[0-9]/.test(v) ? v : null;
}

/**
 * The Debian Security Tracker's JSON: source package → CVE → `releases` → codename →
 * `{ status, fixed_version?, urgency, nodsa?, nodsa_reason? }`. A `fixed_version` of `0`
 * means never affected; `<ignored>` / `<postponed>` / `nodsa` entries (the security team
 * will not fix them in a DSA) count as unimportant. Entries of other ids than CVEs (the
 * tracker's TEMP-… placeholders) are not read: their names change.
 */
export function parseDebianTracker(json: string): ParsedFeed {
  const root = object(JSON.parse(json));
  if (!root) throw new Error('the Debian tracker data is not a JSON object of source packages');
  const entries: FeedEntry[] = [];
  let count = 0;
  for (const [source, cves] of Object.entries(root)) {
    const byCve = object(cves);
    if (!byCve) continue;
    for (const [cve, record] of Object.entries(byCve)) {
      if (!CVE.test(cve)) continue;
      const releases = object(object(record)?.releases);
      if (!releases) continue;
      for (const [release, raw] of Object.entries(releases)) {
        const r = object(raw);
        if (!r) continue;
        count++;
        const fixedText = text(r.fixed_version);
        if (fixedText === '0') continue;
        const marked = [fixedText, text(r.nodsa_reason), text(r.urgency)].some(
          (v) => v !== null && /<?\b(ignored|postponed)\b>?/.test(v),
        );
        const urgency = r.nodsa !== undefined || marked ? 'unimportant' : debianUrgency(r.urgency);
        const fixed = r.status === 'resolved' || fixedText !== null ? version(fixedText) : null;
        // Resolved without a version of its own says nothing a device can be compared with.
        if (r.status === 'resolved' && fixed === null) continue;
        entries.push({ cve, source, release, introduced: null, fixed, urgency });
      }
    }
  }
  return { entries, count };
}

/** Ubuntu's priority: `negligible` is unimportant; `untriaged` or none, unknown. */
function ubuntuUrgency(raw: unknown): Urgency {
  const p = text(raw);
  if (p === 'negligible') return 'unimportant';
  if (p === 'critical' || p === 'high' || p === 'medium' || p === 'low') return p;
  return 'unknown';
}

/** `Ubuntu:24.04:LTS`, `Ubuntu:25.04`: the release is VERSION_ID. Pro and FIPS streams are not the archive's. */
const UBUNTU_ECOSYSTEM = /^Ubuntu:(\d+\.\d+)(?::LTS)?$/;

/**
 * One OSV record of Ubuntu's (a CVE): one `affected` entry per release and source package;
 * a range with a `fixed` event has a fix, one with only `introduced` none. Records that are
 * not CVEs (USN notices repeat the CVEs' data) are skipped. A CVE record's id is the CVE
 * (`CVE-2024-0727`), or since OSV schema 1.7 the CVE behind `UBUNTU-`.
 */
export function parseUbuntuOsv(record: unknown, into: FeedEntry[], seen: Set<string>): number {
  const r = object(record);
  const cve = text(r?.id)?.replace(/^UBUNTU-(?=CVE-)/, '');
  if (!r || !cve || !CVE.test(cve) || !Array.isArray(r.affected)) return 0;
  let count = 0;
  for (const raw of r.affected) {
    const affected = object(raw);
    const pkg = object(affected?.package);
    const release = UBUNTU_ECOSYSTEM.exec(text(pkg?.ecosystem) ?? '')?.[1];
    const source = text(pkg?.name);
    if (!affected || !release || !source) continue;
    const key = `${cve}\u0000${source}\u0000${release}`;
    if (seen.has(key)) continue;
    seen.add(key);
    count++;
    let introduced: string | null = null;
    let fixed: string | null = null;
    let ranged = false;
    for (const range of Array.isArray(affected.ranges) ? affected.ranges : []) {
      const events = object(range)?.events;
      if (!Array.isArray(events) || ranged) continue;
      ranged = true;
      for (const event of events) {
        const e = object(event);
        if (e?.introduced !== undefined) introduced = version(e.introduced);
        if (e?.fixed !== undefined) fixed = version(e.fixed);
      }
    }
    if (!ranged || fixed === '0') continue;
    const urgency = ubuntuUrgency(object(affected.ecosystem_specific)?.ubuntu_priority);
    into.push({ cve, source, release, introduced: introduced === '0' ? null : introduced, fixed, urgency });
  }
  return count;
}
