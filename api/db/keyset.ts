/**
 * The keyset condition of a page in SQL: rows after the cursor of `http/pagination.ts`
 * (created_at, id) in the list's order, or after any (key, id) of a list with several orders.
 */
import type { Cursor } from '../http/pagination.ts';
import type postgres from 'postgres';
import type { Db } from './client.ts';

/**
 * The keyset condition for a page: rows after the cursor in the list's order.
 * `alias` qualifies the columns when the query joins other tables.
 */
export function afterCursor(sql: Db, cursor: Cursor | null, order: 'asc' | 'desc' = 'asc', alias?: string) {
  if (cursor === null) return sql`true`;
  const createdAt = alias ? sql(`${alias}.created_at`) : sql('created_at');
  const id = alias ? sql(`${alias}.id`) : sql('id');
  return order === 'asc'
    ? sql`(${createdAt}, ${id}) > (${cursor.createdAt}, ${cursor.id})`
    : sql`(${createdAt}, ${id}) < (${cursor.createdAt}, ${cursor.id})`;
}

/** A piece of SQL: a column, an expression or a parameter. */
type Fragment = postgres.PendingQuery<postgres.Row[]>;

/**
 * The keyset condition of a list ordered by (`key`, `id`), where `key` may be null and null
 * counts as the lowest value: ascending is `key asc nulls first, id asc`, descending
 * `key desc nulls last, id desc`, so each order is the other reversed. `after` holds the
 * last row's key (as SQL, or null for a null key) and id.
 */
export function afterKey(
  sql: Db,
  key: Fragment,
  id: Fragment,
  after: { key: Fragment | null; id: string } | null,
  order: 'asc' | 'desc',
) {
  if (after === null) return sql`true`;
  if (after.key === null) {
    return order === 'asc'
      ? sql`((${key} is null and ${id} > ${after.id}) or ${key} is not null)`
      : sql`(${key} is null and ${id} < ${after.id})`;
  }
  return order === 'asc'
    ? sql`(${key}, ${id}) > (${after.key}, ${after.id})`
    : sql`((${key}, ${id}) < (${after.key}, ${after.id}) or ${key} is null)`;
}

/** The order clause that goes with `afterKey`. */
export function keyOrder(sql: Db, key: Fragment, id: Fragment, order: 'asc' | 'desc') {
  return order === 'asc' ? sql`${key} asc nulls first, ${id} asc` : sql`${key} desc nulls last, ${id} desc`;
}
