/**
 * RFC 8785, the JSON Canonicalization Scheme: one text for one JSON value, so a hash of it
 * means the same on the device (its agent writes the same rule in Python) and here. Object
 * keys sorted by their UTF-16 code units, no whitespace, strings escaped as ECMAScript's
 * JSON.stringify escapes them (only `"`, `\` and the controls below U+0020; everything
 * else as its own UTF-8), numbers in ECMAScript's shortest form (`1e+21`, `-0` as `0`).
 */

/** The canonical text of a JSON value (what JSON.parse gives: no undefined, functions or non-finite numbers). */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value === 'boolean') return String(value);
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError('a JSON number must be finite');
    return JSON.stringify(value);
  }
  if (typeof value === 'string') {
    if (!(value as string & { isWellFormed(): boolean }).isWellFormed())
      throw new TypeError('a JSON string must not hold a lone surrogate');
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object') {
    const object = value as Record<string, unknown>;
    // The default sort compares UTF-16 code units, as RFC 8785 §3.2.3 asks for keys.
    const keys = Object.keys(object)
      .filter((k) => object[k] !== undefined)
      .sort();
    return `{${keys.map((k) => `${canonicalJson(k)}:${canonicalJson(object[k])}`).join(',')}}`;
  }
  throw new TypeError(`not a JSON value: ${typeof value}`);
}

/**
 * Compares two strings by Unicode code points (what Python's `<` does on str), not by
 * UTF-16 code units: the two differ for characters beyond U+FFFF against U+E000–U+FFFF.
 */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.codePointAt(i)!;
    const y = b.codePointAt(i)!;
    if (x !== y) return x - y;
    if (x > 0xffff) i++;
  }
  return a.length - b.length;
}
