/**
 * The keyset condition of a page in SQL: rows after the cursor of `http/pagination.ts`
 * (created_at, id) in the list's order.
 */
import type { Cursor } from '../http/pagination.ts';
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
