/**
 * Debian version ordering as `dpkg --compare-versions` has it (deb-version(7)): the epoch as
 * a number, then the upstream version and the revision, each compared in alternating runs
 * of non-digits (letters before other characters, `~` before everything, even the end)
 * and digits (as numbers). A missing revision is the empty one, equal to `0`.
 */

interface Parsed {
  epoch: number;
  upstream: string;
  revision: string;
}

function parse(version: string): Parsed {
  const v = version.trim();
  const colon = v.indexOf(':');
  const epoch = colon > 0 ? Number.parseInt(v.slice(0, colon), 10) || 0 : 0;
  const rest = colon >= 0 ? v.slice(colon + 1) : v;
  const hyphen = rest.lastIndexOf('-');
  return hyphen >= 0
    ? { epoch, upstream: rest.slice(0, hyphen), revision: rest.slice(hyphen + 1) }
    : { epoch, upstream: rest, revision: '' };
}

const TILDE = 0x7e;

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

function isLetter(c: number): boolean {
  return (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
}

/** The weight of a character in a non-digit run; the end of the string (NaN) weighs 0. */
function weight(c: number): number {
  if (Number.isNaN(c) || isDigit(c)) return 0;
  if (isLetter(c)) return c;
  if (c === TILDE) return -1;
  return c + 256;
}

function compareRuns(a: string, b: string): number {
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    while ((i < a.length && !isDigit(a.charCodeAt(i))) || (j < b.length && !isDigit(b.charCodeAt(j)))) {
      const wa = weight(a.charCodeAt(i));
      const wb = weight(b.charCodeAt(j));
      if (wa !== wb) return wa - wb;
      i++;
      j++;
    }
    while (a.charCodeAt(i) === 0x30) i++;
    while (b.charCodeAt(j) === 0x30) j++;
    let first = 0;
    while (isDigit(a.charCodeAt(i)) && isDigit(b.charCodeAt(j))) {
      if (first === 0) first = a.charCodeAt(i) - b.charCodeAt(j);
      i++;
      j++;
    }
    if (isDigit(a.charCodeAt(i))) return 1;
    if (isDigit(b.charCodeAt(j))) return -1;
    if (first !== 0) return first;
  }
  return 0;
}

/** Negative when a sorts before b, 0 when dpkg holds them equal, positive after. */
export function compareDebianVersions(a: string, b: string): number {
  const pa = parse(a);
  const pb = parse(b);
  if (pa.epoch !== pb.epoch) return pa.epoch < pb.epoch ? -1 : 1;
  const upstream = compareRuns(pa.upstream, pb.upstream);
  if (upstream !== 0) return Math.sign(upstream);
  return Math.sign(compareRuns(pa.revision, pb.revision));
}
