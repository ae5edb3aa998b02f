/**
 * The benchmark's fleet, seeded with set-based SQL in one transaction: organizations with
 * the protected "Neue Geräte" and an org-unit tree four levels deep (3 → 9 → 27 → 54 units),
 * a dozen groups each, devices mostly in leaf units with mixed templates, up to three group
 * memberships per device, overrides at every level (org units, groups, devices), hardware.
 */
import { Buffer } from 'node:buffer';
import { createHash } from 'node:crypto';
import type { Sql } from '../../api/db/client.ts';

/** The inventory hash every seeded device holds (SHA-256 of a fixed text), and its hex as check-ins send it. */
export const BENCH_INVENTORY_HASH = createHash('sha256').update('bench inventory').digest('hex');
const BENCH_INVENTORY_HASH_BYTES = Buffer.from(BENCH_INVENTORY_HASH, 'hex');

const TEMPLATES = [
  '6d1f4c2a-3b5e-4f70-9a1d-0c2e8b7a5d01', // Debian Standard
  '6d1f4c2a-3b5e-4f70-9a1d-0c2e8b7a5d02', // Ubuntu Standard
  '6d1f4c2a-3b5e-4f70-9a1d-0c2e8b7a5d03', // Debian Verschlüsselt
];

/**
 * Seeds the fleet: `secrets.length` devices spread over the organizations, each holding the
 * agent secret at its index (stored as SHA-256, as bootstrap stores it). Returns row counts.
 */
export async function seedFleet(
  sql: Sql,
  secrets: string[],
  options: { organizations: number },
): Promise<Record<string, number>> {
  await sql.begin(async (tx) => {
    await tx`create temporary table bench_orgs (id uuid, idx int) on commit drop`;
    await tx`create temporary table bench_units (id uuid, organization_id uuid, level int) on commit drop`;
    await tx`
      with org as (
        insert into organizations (name, kontakt_name, kontakt_email)
        select format('Bench-Organisation %s', g), format('Kontakt %s', g), format('it%s@example.org', g)
        from generate_series(1, ${options.organizations}) g
        returning id
      )
      insert into bench_orgs select id, (row_number() over (order by id) - 1)::int from org`;
    // Level 0: the protected "Neue Geräte". The tree: 3 top-level units per organization
    // (created beside "Neue Geräte", one per organization), then 9, 27 and 54 below them.
    await tx`
      with ou as (
        insert into org_units (organization_id, name, protected)
        select id, 'Neue Geräte', true from bench_orgs
        returning id, organization_id
      )
      insert into bench_units select id, organization_id, 0 from ou`;
    for (const [level, fanout] of [
      [1, 3],
      [2, 3],
      [3, 3],
      [4, 2],
    ] as const) {
      await tx`
        with ou as (
          insert into org_units (organization_id, parent_id, name)
          select p.organization_id, ${level === 1 ? tx`null::uuid` : tx`p.id`}, format('Ebene %s Einheit %s', ${level}::int, i)
          from bench_units p, generate_series(1, ${fanout}) i
          where p.level = ${level - 1}
          returning id, organization_id
        )
        insert into bench_units select id, organization_id, ${level}::int from ou`;
    }
    await tx`
      insert into groups (organization_id, name)
      select o.id, format('Gruppe %s', i) from bench_orgs o, generate_series(1, 12) i`;

    // Devices: 80 % in a leaf unit, 10 % higher up the tree, 10 % still in "Neue Geräte";
    // templates mixed (a quarter never resolved: the default-template rule applies).
    const chunk = 25_000;
    for (let start = 0; start < secrets.length; start += chunk) {
      const part = secrets.slice(start, start + chunk);
      await tx`
        with org as (
          select o.id, o.idx,
                 array_agg(u.id) filter (where u.level = 4) as leaves,
                 array_agg(u.id) filter (where u.level between 1 and 3) as inner_units,
                 (array_agg(u.id) filter (where u.level = 0))[1] as default_oe
          from bench_orgs o join bench_units u on u.organization_id = o.id
          group by o.id, o.idx
        ), s as (
          select secret, (n + ${start})::int as n, random() as r
          from unnest(${part}::text[]) with ordinality as t (secret, n)
        )
        insert into devices (organization_id, serial, hostname, oe_id, template_id,
                             agent_secret_hash, agent_secret_issued_at, created_at, inventory_hash)
        select org.id, format('BENCH-%s', lpad(s.n::text, 7, '0')), format('pc-%s', s.n),
               case when s.r < 0.8 then org.leaves[1 + ((s.n::int8 * 7919) % cardinality(org.leaves))::int]
                    when s.r < 0.9 then org.inner_units[1 + ((s.n::int8 * 104729) % cardinality(org.inner_units))::int]
                    else org.default_oe end,
               (${TEMPLATES}::uuid[] || null::uuid)[1 + s.n % 4],
               sha256(convert_to(s.secret, 'UTF8')), now(), now_ms(), ${BENCH_INVENTORY_HASH_BYTES}
        from s join org on org.idx = s.n % ${options.organizations}`;
    }
    // Group memberships: up to three groups per device (about 1.5 on average).
    await tx`
      insert into group_members (group_id, device_id, organization_id)
      select og.ids[1 + abs(hashtext(d.id::text || k)) % cardinality(og.ids)], d.id, d.organization_id
      from devices d
      join (select organization_id, array_agg(id order by id) as ids from groups group by organization_id) og
        on og.organization_id = d.organization_id
      cross join generate_series(1, 3) k
      where abs(hashtext(d.id::text || 'm' || k)) % 2 = 0
      on conflict do nothing`;
    // Overrides at every level, each catalog Merkmal with its own chance.
    const catalog = tx`(select key from merkmale where im_auftragskatalog)`;
    await tx`
      insert into org_unit_merkmale (org_unit_id, merkmal, state, optionen)
      select u.id, m.key, case when random() < 0.5 then 'present' else 'absent' end,
             case when random() < 0.3 then jsonb_build_object('ebene', u.level) else '{}' end
      from bench_units u cross join ${catalog} m
      where random() < 0.3`;
    await tx`
      insert into group_merkmale (group_id, merkmal, state, optionen)
      select g.id, m.key, case when random() < 0.5 then 'present' else 'absent' end,
             case when random() < 0.3 then jsonb_build_object('gruppe', g.name) else '{}' end
      from groups g join bench_orgs o on o.id = g.organization_id cross join ${catalog} m
      where random() < 0.4`;
    await tx`
      insert into device_merkmale (device_id, merkmal, state, optionen)
      select d.id, m.key, case when random() < 0.5 then 'present' else 'absent' end,
             case when random() < 0.5 then '{"lizenz": "L-1"}'::jsonb else '{}' end
      from devices d cross join ${catalog} m
      where random() < 0.02`;
    // Hardware as bootstrap reported it.
    await tx`
      insert into device_hardware (device_id, hardware)
      select id, jsonb_build_object('cpu', 'Intel Core i5-8365U', 'memory_mb', 16384, 'serial', serial,
                                    'disks', jsonb_build_array(jsonb_build_object('model', 'SAMSUNG MZVLB512', 'size_gb', 512)))
      from devices`;
    // A fleet that has checked in before: each device's heartbeat row (made with it) with a time in it.
    await tx`update device_heartbeats set at = now()`;
  });
  // The triggers wrote most device rows a second time, with the texts of their groups and
  // overrides, and every heartbeat row once more with its time: both are rewritten
  // compactly, as tables written once would be.
  await sql`vacuum full devices, device_heartbeats`;
  // Vacuumed and analyzed now, so autovacuum does not work through the fresh rows (and its
  // CPU count as the check-ins') while the bench measures; the checkpoint likewise.
  await sql`vacuum analyze`;
  await sql`checkpoint`;
  const [counts] = await sql<Array<Record<string, number>>>`
    select (select count(*) from organizations)::int as organizations,
           (select count(*) from org_units)::int as org_units,
           (select count(*) from groups)::int as groups,
           (select count(*) from devices)::int as devices,
           (select count(*) from group_members)::int as group_members,
           (select count(*) from org_unit_merkmale)::int as org_unit_overrides,
           (select count(*) from group_merkmale)::int as group_overrides,
           (select count(*) from device_merkmale)::int as device_overrides,
           (select max(depth) from (
              with recursive chain (id, depth) as (
                select id, 1 from org_units where parent_id is null
                union all select ou.id, chain.depth + 1 from chain join org_units ou on ou.parent_id = chain.id)
              select depth from chain) t)::int as org_unit_depth`;
  return counts!;
}

/**
 * Loads a table and its indexes into shared buffers (pg_prewarm, as much as they hold): the
 * state of a server that has run for a while. Returns the MiB loaded.
 */
export async function prewarmTable(sql: Sql, table: string): Promise<number> {
  const [row] = await sql<Array<{ blocks: number }>>`
    select coalesce(sum(pg_prewarm(c.oid)), 0)::int8 as blocks
    from pg_class c
    where c.oid = ${table}::regclass
       or c.oid in (select indexrelid from pg_index where indrelid = ${table}::regclass)`;
  return Math.round((row!.blocks * 8) / 1024);
}
