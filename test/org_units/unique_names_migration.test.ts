/**
 * The migration that makes group and org unit names unique renames the duplicates it
 * finds first. The test database is already past it, so the test drops the two unique
 * indexes and the name key function inside a transaction, writes duplicates, runs the
 * migration's own up section (read from its file) and checks the names, then rolls
 * everything back.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';

const ctx = useTestApp();

const file = new URL('../../sql/migrations/20261126050000_unique_names.sql', import.meta.url);
const up = readFileSync(file, 'utf8').split('-- migrate:down')[0]!.replace('-- migrate:up', '');

class Rollback extends Error {}

describe('migration 20261126050000_unique_names', () => {
  it('renames duplicates with a free suffix, the oldest (or the protected unit) keeping its name', async () => {
    const org = await createOrganization(ctx);
    const other = await createOrganization(ctx);
    const seen: Record<string, string> = {};
    await ctx.sql
      .begin(async (tx) => {
        await tx`drop index groups_name_key`;
        await tx`drop index org_units_sibling_name_key`;
        await tx`drop function fleet_name_key(text)`;
        const t = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));
        const group = async (key: string, organizationId: string, name: string, at: number) => {
          const [row] = await tx<{ id: string }[]>`
            insert into groups (organization_id, name, created_at) values (${organizationId}, ${name}, ${t(at)})
            returning id`;
          seen[key] = row!.id;
        };
        const unit = async (key: string, name: string, parent: string | null, at: number) => {
          const [row] = await tx<{ id: string }[]>`
            insert into org_units (organization_id, parent_id, name, created_at)
            values (${org.id}, ${parent}, ${name}, ${t(at)}) returning id`;
          seen[key] = row!.id;
        };
        await group('g3', org.id, 'gis', 3);
        await group('g1', org.id, 'GIS', 1);
        await group('g2', org.id, 'GIS (2)', 2);
        await group('g4', org.id, 'Gis', 4);
        await group('ä1', org.id, 'Ärzte', 5);
        await group('ä2', org.id, 'ÄRZTE', 6);
        await group('o1', other.id, 'GIS', 7);

        await unit('nord', 'Nord', null, 1);
        await unit('n1', 'GIS', seen.nord!, 2);
        await unit('n2', 'gis', seen.nord!, 3);
        await unit('top', 'GIS', null, 4);
        // Older than the protected unit, and still the one that yields.
        await unit('neu', 'NEUE GERÄTE', null, -3600);

        await tx.unsafe(up);

        const groups = await tx<
          { id: string; name: string }[]
        >`select id, name from groups where id = any(${Object.values(seen)})`;
        const units = await tx<
          { id: string; name: string }[]
        >`select id, name from org_units where id = any(${Object.values(seen)})`;
        const name = new Map([...groups, ...units].map((r) => [r.id, r.name]));
        const by = (key: string) => name.get(seen[key]!);
        expect([by('g1'), by('g2'), by('g3'), by('g4')]).toEqual(['GIS', 'GIS (2)', 'gis (3)', 'Gis (4)']);
        expect([by('ä1'), by('ä2'), by('o1')]).toEqual(['Ärzte', 'ÄRZTE (2)', 'GIS']);
        expect([by('n1'), by('n2'), by('top'), by('neu')]).toEqual(['GIS', 'gis (2)', 'GIS', 'NEUE GERÄTE (2)']);
        const [protectedUnit] = await tx<{ name: string }[]>`
          select name from org_units where organization_id = ${org.id} and protected`;
        expect(protectedUnit!.name).toBe('Neue Geräte');
        // The indexes are back and hold.
        await expect(tx`insert into groups (organization_id, name) values (${org.id}, ${'gIs'})`).rejects.toMatchObject(
          {
            code: '23505',
            constraint_name: 'groups_name_key',
          },
        );
        throw new Rollback();
      })
      .catch((err) => {
        if (!(err instanceof Rollback)) throw err;
      });
    expect(
      await ctx.sql`select indexname from pg_indexes where indexname in ('groups_name_key', 'org_units_sibling_name_key')`,
    ).toHaveLength(2);
  });
});
