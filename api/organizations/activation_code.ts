/**
 * The classic activation code: 100 random bits as 20 characters of
 * Crockford base32 in four groups of five, never a UUID, matched case-insensitively.
 */
const alphabet = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

export function generateActivationCode(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(13)); // 104 bits, 100 used
  let bits = 0n;
  for (const b of bytes) bits = (bits << 8n) | BigInt(b);
  let chars = '';
  for (let i = 0; i < 20; i++) {
    chars += alphabet[Number(bits & 31n)];
    bits >>= 5n;
  }
  return chars.match(/.{5}/g)!.join('-');
}

/**
 * The stored form of what a person typed: upper case, grouped with dashes, with
 * Crockford's look-alikes (O→0, I and L→1) folded. Null when it cannot be a code.
 */
export function normalizeActivationCode(input: string): string | null {
  const chars = input.toUpperCase().replace(/[\s-]/g, '').replace(/O/g, '0').replace(/[IL]/g, '1');
  if (!/^[0-9A-HJKMNP-TV-Z]{20}$/.test(chars)) return null;
  return chars.match(/.{5}/g)!.join('-');
}
