/**
 * Where webhooks may point: a receiver on the internet, never the service's
 * own network, unless the operator allows it. The URL is checked when a webhook is created
 * (its scheme, and its host when that is an address) and every address its host resolves
 * to is checked again at each delivery (jobs/webhooks/post.ts), so a DNS name that later
 * answers with a private address is refused too. Plain string work: it runs on Deno as well.
 */

import type { WebhookNetworkPolicy } from '../config.ts';

/** Why the URL may not be subscribed, or null when it may. */
export function webhookUrlProblem(raw: string, policy: WebhookNetworkPolicy): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'must be an absolute URL';
  }
  if (url.username !== '' || url.password !== '') return 'must not carry credentials (they would show in every list)';
  if (url.hash !== '') return 'must not have a fragment';
  const host = url.hostname;
  const loopback = isLoopbackHost(host);
  if (url.protocol === 'http:') {
    if (!policy.allowHttp) return 'must use https';
    if (!loopback) return 'may use http only for a loopback host (WEBHOOK_ALLOW_HTTP); use https';
  } else if (url.protocol !== 'https:') {
    return 'must use https';
  }
  if (!policy.allowPrivate && (loopback || isPrivateAddress(host))) {
    return 'must not point at a private, loopback or link-local address (WEBHOOK_ALLOW_PRIVATE)';
  }
  return null;
}

/** The IP version of an address literal (IPv6 with or without brackets), or null for a host name. */
export function addressFamily(host: string): 4 | 6 | null {
  if (parseIPv4(host) !== null) return 4;
  return parseIPv6(host) !== null ? 6 : null;
}

function isLoopbackHost(host: string): boolean {
  const name = host.toLowerCase().replace(/\.$/, '');
  if (name === 'localhost' || name.endsWith('.localhost')) return true;
  const v4 = parseIPv4(name);
  if (v4 !== null) return v4[0] === 127;
  const v6 = parseIPv6(name);
  return v6 !== null && isV6Loopback(v6);
}

/**
 * True for an address no public receiver has: unspecified, loopback, private (RFC 1918,
 * unique local), carrier-grade NAT, link-local, benchmarking, multicast and reserved, and
 * every IPv6 form that embeds such an IPv4 address (IPv4-mapped, IPv4-compatible,
 * IPv4-translated, NAT64, 6to4, Teredo): a relay or translator would carry the request
 * to it. Not an address: false.
 */
export function isPrivateAddress(address: string): boolean {
  const v4 = parseIPv4(address);
  if (v4 !== null) return isPrivateV4(v4);
  const v6 = parseIPv6(address);
  if (v6 === null) return false;
  const embedded = embeddedV4(v6);
  if (embedded.length > 0) return embedded.some(isPrivateV4);
  return (
    (v6[0] === 0x64 && v6[1] === 0xff9b && v6[2] === 1) || // 64:ff9b:1::/48 local-use NAT64 (RFC 8215)
    v6.every((g) => g === 0) || // ::
    isV6Loopback(v6) ||
    (v6[0]! & 0xfe00) === 0xfc00 || // fc00::/7 unique local
    (v6[0]! & 0xffc0) === 0xfe80 || // fe80::/10 link-local
    (v6[0]! & 0xffc0) === 0xfec0 || // fec0::/10 site-local (deprecated)
    (v6[0]! & 0xff00) === 0xff00 || // multicast
    (v6[0] === 0x2001 && v6[1] === 0x0db8) // documentation
  );
}

function isPrivateV4([a, b]: number[]): boolean {
  return (
    a === 0 ||
    a === 10 ||
    a === 127 ||
    (a === 100 && b! >= 64 && b! <= 127) ||
    (a === 169 && b === 254) ||
    (a === 172 && b! >= 16 && b! <= 31) ||
    (a === 192 && b === 168) ||
    (a === 192 && b === 0) ||
    (a === 198 && (b === 18 || b === 19)) ||
    a! >= 224
  );
}

function isV6Loopback(g: number[]): boolean {
  return g.slice(0, 7).every((x) => x === 0) && g[7] === 1;
}

const v4Of = (hi: number, lo: number) => [hi >> 8, hi & 0xff, lo >> 8, lo & 0xff];

/**
 * The IPv4 addresses an IPv6 address embeds: ::ffff:a.b.c.d (mapped), ::a.b.c.d
 * (compatible), ::ffff:0:a.b.c.d (translated, RFC 2765), 64:ff9b::a.b.c.d (NAT64),
 * 2002:aabb:ccdd::/48 (6to4, RFC 3056), and 2001:0::/32 (Teredo, RFC 4380: the server's
 * address, and the client's with every bit inverted). None for any other address.
 */
function embeddedV4(g: number[]): number[][] {
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  if (zeros(0, 5) && g[5] === 0xffff) return [v4Of(g[6]!, g[7]!)];
  if (zeros(0, 6) && (g[6] !== 0 || g[7]! > 1)) return [v4Of(g[6]!, g[7]!)];
  if (zeros(0, 4) && g[4] === 0xffff && g[5] === 0) return [v4Of(g[6]!, g[7]!)];
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) return [v4Of(g[6]!, g[7]!)];
  if (g[0] === 0x2002) return [v4Of(g[1]!, g[2]!)];
  if (g[0] === 0x2001 && g[1] === 0) return [v4Of(g[2]!, g[3]!), v4Of(g[6]! ^ 0xffff, g[7]! ^ 0xffff)];
  return [];
}

function parseIPv4(text: string): number[] | null {
  const parts = text.split('.');
  if (parts.length !== 4 || !parts.every((p) => /^\d{1,3}$/.test(p))) return null;
  const bytes = parts.map(Number);
  return bytes.every((b) => b <= 255) ? bytes : null;
}

/** Eight 16-bit groups of an IPv6 address (brackets and a zone id allowed), or null. */
function parseIPv6(text: string): number[] | null {
  let s = text.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  if (!s.includes(':')) return null;
  const tail: number[] = [];
  const dotted = s.match(/^(.*:)(\d+\.\d+\.\d+\.\d+)$/);
  if (dotted) {
    const v4 = parseIPv4(dotted[2]!);
    if (v4 === null) return null;
    tail.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!);
    s = dotted[1]!.endsWith('::') ? dotted[1]! : dotted[1]!.slice(0, -1);
  }
  const halves = s.split('::');
  if (halves.length > 2) return null;
  const groups = (part: string) => (part === '' ? [] : part.split(':'));
  const head = groups(halves[0]!);
  const rest = halves.length === 2 ? groups(halves[1]!) : [];
  if (![...head, ...rest].every((g) => /^[0-9a-f]{1,4}$/i.test(g))) return null;
  const known = head.length + rest.length + tail.length;
  if (halves.length === 1 ? known !== 8 : known > 7) return null;
  const fill = new Array<number>(8 - known).fill(0);
  return [...head.map((g) => parseInt(g, 16)), ...fill, ...rest.map((g) => parseInt(g, 16)), ...tail];
}
