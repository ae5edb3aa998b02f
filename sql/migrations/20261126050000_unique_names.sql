-- migrate:up
-- Admins pick groups and org units by name, so a name is unique where it is picked: a
-- group's within its organization, an org unit's among its siblings (the top-level units
-- of an organization are one sibling set). Case-insensitively: "GIS" and "gis" look like
-- the same entry in a list, so they may not both exist. The comparison lowers under the
-- built-in "pg_c_utf8" collation: Unicode case mapping ("ÄRZTE" and "ärzte" clash, which
-- the C locale's lower() misses), the same on every host and stable across operating
-- system upgrades, so the indexes never need a rebuild for a new libc. It needs a UTF8
-- database, as the service's is.
--
-- Existing duplicates are renamed first: within each clash the oldest row keeps its name
-- (for org units the protected "Neue Geräte" before any), every later one gets the first
-- free suffix " (2)", " (3)", ... The name is cut to 190 characters before the suffix so it
-- stays within the 200-character check.
do $$
declare
  r record;
  k int;
  candidate text;
begin
  for r in
    select id, organization_id, name from (
      select id, organization_id, name, created_at,
             row_number() over (
               partition by organization_id, lower(name collate "pg_c_utf8")
               order by created_at, id) as n
      from groups) d
    where n > 1
    order by created_at, id
  loop
    k := 2;
    loop
      candidate := left(r.name, 190) || ' (' || k || ')';
      exit when not exists (
        select 1 from groups
        where organization_id = r.organization_id
          and lower(name collate "pg_c_utf8") = lower(candidate collate "pg_c_utf8"));
      k := k + 1;
    end loop;
    update groups set name = candidate where id = r.id;
  end loop;

  for r in
    select id, organization_id, parent_id, name from (
      select id, organization_id, parent_id, name, created_at,
             row_number() over (
               partition by organization_id, parent_id, lower(name collate "pg_c_utf8")
               order by protected desc, created_at, id) as n
      from org_units) d
    where n > 1
    order by created_at, id
  loop
    k := 2;
    loop
      candidate := left(r.name, 190) || ' (' || k || ')';
      exit when not exists (
        select 1 from org_units
        where organization_id = r.organization_id and parent_id is not distinct from r.parent_id
          and lower(name collate "pg_c_utf8") = lower(candidate collate "pg_c_utf8"));
      k := k + 1;
    end loop;
    update org_units set name = candidate where id = r.id;
  end loop;
end
$$;

create unique index groups_name_key on groups (organization_id, lower(name collate "pg_c_utf8"));
create unique index org_units_sibling_name_key
  on org_units (organization_id, parent_id, lower(name collate "pg_c_utf8")) nulls not distinct;

-- migrate:down
-- The renamed duplicates keep their new names.
drop index org_units_sibling_name_key;
drop index groups_name_key;
