/**
 * Collections (api/README.md, Collections): `{ items, next_cursor }`, `?limit=` 1–500 (default 100) and an
 * opaque `?cursor=`. Lists are ordered by (created_at, id) so the keyset is stable; the
 * cursor carries the last row's key. Lists with a write-order sequence (device events)
 * page on that instead: encodeSeqCursor / decodeSeqCursor.
 */
import { Buffer } from 'node:buffer';
import { z } from '@hono/zod-openapi';
import { ApiError } from './errors.ts';
import { isUuid } from './uuid.ts';

/**
 * `?limit=` as plain decimal digits only: a number coercion would also take `0x10`, `1e2`,
 * ` 5` or `Infinity`. Anything else stays a string, and the number schema refuses it (400).
 */
const decimalDigits = (value: unknown) => (typeof value === 'string' && /^[0-9]+$/.test(value) ? Number(value) : value);

export const PageQuery = z.object({
  limit: z.preprocess(decimalDigits, z.number().int().min(1).max(500).default(100)).openapi({
    type: 'integer',
    minimum: 1,
    maximum: 500,
    default: 100,
    description: 'Page size, 1–500, in decimal digits.',
    example: 100,
  }),
  cursor: z.string().max(200).optional().openapi({ description: 'The `next_cursor` of the previous page.' }),
});

export function collectionOf<T extends z.ZodType>(item: T, name: string, description?: string) {
  return z
    .object({ items: z.array(item), next_cursor: z.string().nullable() })
    .openapi(name, description === undefined ? {} : { description });
}

/**
 * A page of a short list read whole (seed data, or one row per catalog Merkmal at most),
 * in the order `sortKey` gives (compared part by part, as strings). The cursor carries the
 * last item's sort key, so a page goes on after it even when items came or went meanwhile.
 */
export function pageOfList<T>(
  items: readonly T[],
  sortKey: (item: T) => string[],
  limit: number,
  cursor: string | undefined,
): { items: T[]; next_cursor: string | null } {
  const keyed = items.map((item) => ({ item, key: sortKey(item) }));
  keyed.sort((a, b) => compareKeys(a.key, b.key));
  const after = decodeKeyCursor(cursor, keyed[0]?.key.length ?? 0);
  const rest = after === null ? keyed : keyed.filter(({ key }) => compareKeys(key, after) > 0);
  const page = rest.slice(0, limit);
  const last = page[page.length - 1];
  return {
    items: page.map(({ item }) => item),
    next_cursor: rest.length > limit && last ? Buffer.from(JSON.stringify(last.key)).toString('base64url') : null,
  };
}

function compareKeys(a: readonly string[], b: readonly string[]): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    if (a[i]! !== b[i]!) return a[i]! < b[i]! ? -1 : 1;
  }
  return a.length - b.length;
}

/** A cursor of `pageOfList`: exactly what it writes (a JSON array of short strings), else 400. */
function decodeKeyCursor(cursor: string | undefined, parts: number): string[] | null {
  if (cursor === undefined) return null;
  try {
    const key = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    const valid =
      Array.isArray(key) &&
      (parts === 0 || key.length === parts) &&
      key.length > 0 &&
      key.every((part) => typeof part === 'string' && part.length <= 200) &&
      Buffer.from(JSON.stringify(key)).toString('base64url') === cursor;
    if (!valid) throw new Error('not a cursor of this list');
    return key as string[];
  } catch {
    throw new ApiError('invalid_request', 'cursor is not valid', {
      details: [{ path: ['cursor'], message: 'not a cursor of this list' }],
    });
  }
}

export interface Cursor {
  createdAt: Date;
  id: string;
}

function encodeCursor(row: { created_at: Date; id: string }): string {
  return Buffer.from(JSON.stringify([row.created_at.toISOString(), row.id])).toString('base64url');
}

/** The exact form encodeCursor writes; a year of 0001–9999 also keeps PostgreSQL in range. */
const cursorTime = /^(?!0000)\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/**
 * A forged or damaged cursor is a 400, never a 500: the id must be a UUID and the time
 * exactly what encodeCursor writes (it round-trips), so nothing reaches SQL that
 * PostgreSQL would refuse.
 */
export function decodeCursor(cursor: string | undefined): Cursor | null {
  if (cursor === undefined) return null;
  try {
    const [t, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[];
    if (typeof t !== 'string' || !cursorTime.test(t)) throw new Error('bad time');
    const createdAt = new Date(t);
    if (Number.isNaN(createdAt.getTime()) || createdAt.toISOString() !== t) throw new Error('bad time');
    if (typeof id !== 'string' || !isUuid(id)) throw new Error('bad id');
    return { createdAt, id: id.toLowerCase() };
  } catch {
    throw new ApiError('invalid_request', 'cursor is not valid', {
      details: [{ path: ['cursor'], message: 'not a cursor of this list' }],
    });
  }
}

/** Turns `limit + 1` fetched rows into a page; `cursorOf` writes the last row's key (default: created_at, id). */
export function toPage<Row extends { created_at: Date; id: string }, Item>(
  rows: Row[],
  limit: number,
  serialize: (row: Row) => Item,
  cursorOf: (row: Row) => string = encodeCursor,
): { items: Item[]; next_cursor: string | null } {
  const pageRows = rows.slice(0, limit);
  const last = pageRows[pageRows.length - 1];
  return {
    items: pageRows.map(serialize),
    next_cursor: rows.length > limit && last ? cursorOf(last) : null,
  };
}

/** The cursor of a list ordered by a bigint sequence: the last row's value. */
export function encodeSeqCursor(seq: number): string {
  return Buffer.from(`s${seq}`).toString('base64url');
}

/** What encodeSeqCursor writes: a positive integer without sign, leading zeros or exponent. */
const seqCursorText = /^s[1-9]\d{0,15}$/;

/**
 * The sequence value of a cursor of encodeSeqCursor, or null without one. Anything else,
 * the (created_at, id) cursors of other lists included, is a 400: only an exact round trip
 * of a safe integer is taken, so nothing reaches SQL that PostgreSQL would refuse.
 */
export function decodeSeqCursor(cursor: string | undefined): number | null {
  if (cursor === undefined) return null;
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const seq = seqCursorText.test(text) ? Number(text.slice(1)) : Number.NaN;
  if (!Number.isSafeInteger(seq) || encodeSeqCursor(seq) !== cursor) {
    throw new ApiError('invalid_request', 'cursor is not valid', {
      details: [{ path: ['cursor'], message: 'not a cursor of this list' }],
    });
  }
  return seq;
}
