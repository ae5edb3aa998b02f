/**
 * One organization's fleet for the portal's and the fleet status's benchmarks, as
 * fleet_status.ts seeds it: 5 catalog Merkmale (the Debian default template's), a tree of
 * 50 org units, 20 groups, 95 % of the devices bootstrapped (a tenth of those stale),
 * desired-state changes for a third of the devices and reports for 90 % (3 % failed).
 */
import type { Sql } from '../../api/db/client.ts';

export async function seedOrganization(sql: Sql, devices: number): Promise<string> {
  const [org] = await sql<{ id: string }[]>`
    insert into organizations (name, kontakt_name, kontakt_email)
    values ('Bench-Organisation', 'Kontakt', 'it@example.org') returning id`;
  const orgId = org!.id;
  // 50 units: 5 at the top, 9 below each.
  await sql`insert into org_units (organization_id, name, protected) values (${orgId}, 'Neue Geräte', true)`;
  await sql`
    with top as (
      insert into org_units (organization_id, name)
      select ${orgId}, format('Schule %s', i) from generate_series(1, 5) i returning id
    )
    insert into org_units (organization_id, parent_id, name)
    select ${orgId}, top.id, format('Klasse %s', i) from top, generate_series(1, 9) i`;
  await sql`insert into groups (organization_id, name) select ${orgId}, format('Gruppe %s', i) from generate_series(1, 20) i`;
  await sql`
    with units as (select array_agg(id order by id) as ids from org_units where organization_id = ${orgId} and not protected)
    insert into devices (organization_id, serial, hostname, oe_id, agent_secret_hash, agent_secret_issued_at, created_at)
    select ${orgId}, format('BENCH-%s', lpad(n::text, 7, '0')), format('pc-%s', n),
           units.ids[1 + n % cardinality(units.ids)],
           case when n % 20 <> 0 then sha256(convert_to(n::text, 'UTF8')) end,
           case when n % 20 <> 0 then now() - interval '30 days' end,
           now_ms() - make_interval(secs => ${devices} - n)
    from units, generate_series(1, ${devices}) n`;
  await sql`
    insert into group_members (group_id, device_id, organization_id)
    select g.ids[1 + abs(hashtext(d.id::text)) % 20], d.id, d.organization_id
    from devices d, (select array_agg(id order by id) as ids from groups where organization_id = ${orgId}) g`;
  await sql`
    update device_heartbeats h
       set at = case when random() < 0.1 then now() - interval '1 hour' else now() - random() * interval '10 minutes' end
      from devices d where d.id = h.device_id and d.agent_secret_issued_at is not null`;
  await sql`
    insert into device_merkmal_events (device_id, merkmal, type, payload, created_at)
    select d.id, m.key, case when random() < 0.5 then 'selected' else 'deselected' end,
           '{"cause": "device"}', now() - interval '2 days'
    from devices d
    cross join lateral (select key from merkmale where im_auftragskatalog order by key offset abs(hashtext(d.id::text)) % 5 limit 1) m
    where abs(hashtext(d.serial)) % 3 = 0`;
  await sql`
    insert into device_merkmal_events (device_id, merkmal, type, payload, created_at)
    select d.id, c.merkmal,
           case when random() < 0.03 then (case c.state when 'present' then 'apply_failed' else 'remove_failed' end)
                else (case c.state when 'present' then 'applied' else 'removed' end) end,
           '{}', now() - interval '1 day'
    from devices d
    join templates t on t.id = effective_template_id(d.template_id)
    cross join lateral device_catalog_outcomes(d.id, t.backend, t.workspace, d.agent_secret_issued_at) c
    where d.agent_secret_issued_at is not null and abs(hashtext(d.id::text || 'r')) % 10 <> 0`;
  // Each device's heartbeat row was made with it and then written once more with its time:
  // rewritten compactly, as a table written once would be (fleet_status.ts, device_list.ts).
  await sql`vacuum full device_heartbeats`;
  await sql`vacuum analyze`;
  return orgId;
}
