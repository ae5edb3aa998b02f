/** SQL of templates. */
import { afterCursor } from '../db/keyset.ts';
import type { Db } from '../db/client.ts';
import type { Cursor } from '../http/pagination.ts';
import type { TemplateType } from './schemas.ts';

export interface TemplateRow extends TemplateType {
  created_at: Date;
}

export async function listTemplates(db: Db, cursor: Cursor | null, limit: number): Promise<TemplateRow[]> {
  return db<TemplateRow[]>`
    select id, name, backend, workspace, partitioning, installation, is_default, created_at
    from templates
    where ${afterCursor(db, cursor)}
    order by created_at, id
    limit ${limit + 1}`;
}

export async function getTemplate(db: Db, id: string): Promise<TemplateRow | null> {
  const [row] = await db<TemplateRow[]>`
    select id, name, backend, workspace, partitioning, installation, is_default, created_at
    from templates where id = ${id}`;
  return row ?? null;
}

/** The default template of the preferred backend: what an unassigned device gets. */
export async function getPreferredDefaultTemplate(db: Db): Promise<TemplateRow> {
  const [row] = await db<TemplateRow[]>`
    select t.id, t.name, t.backend, t.workspace, t.partitioning, t.installation, t.is_default, t.created_at
    from templates t join backends b on b.key = t.backend
    where b.preferred and t.is_default`;
  if (!row) throw new Error('seed data missing: no default template of the preferred backend');
  return row;
}

export function serializeTemplate(row: TemplateRow): TemplateType {
  const { id, name, backend, workspace, partitioning, installation, is_default } = row;
  return { id, name, backend, workspace, partitioning, installation, is_default };
}
