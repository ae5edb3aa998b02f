/**
 * Bearer credentials (api/README.md, Access). Who may call which route is declared per route
 * (api/access/declaration.ts) and enforced by the access middleware.
 */

/**
 * Reads a bearer credential; null when the header is missing or not a bearer. The scheme
 * name is case-insensitive (RFC 9110 §11.1): `bearer <token>` is the same credential.
 */
export function bearerToken(header: string | undefined): string | null {
  const match = header?.match(/^Bearer ([\x21-\x7e]{1,512})$/i);
  return match?.[1] ?? null;
}
