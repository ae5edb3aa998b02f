-- migrate:up
-- Admins pick groups and org units by name, so a name is unique where it is picked: a
-- group's within its organization, an org unit's among its siblings (the top-level units
-- of an organization are one sibling set). Case-insensitively: "GIS" and "gis" look like
-- the same entry in a list, so they may not both exist. fleet_name_key(name) is the
-- compared form: lower() under the built-in "pg_c_utf8" collation where the server has it
-- (PostgreSQL 17 and newer: Unicode case mapping, so "ÄRZTE" and "ärzte" clash, which the C
-- locale's lower() misses; the same on every host and stable across libc upgrades), else
-- under ICU's root collation where the server is built with ICU, else the database's own
-- lower() (PostgreSQL 15 and 16 without ICU: non-ASCII letters then follow the database's
-- locale). It needs a UTF8 database, as the service's is.
do $$
begin
  if exists (select 1 from pg_collation where collname = 'pg_c_utf8') then
    execute $f$create function fleet_name_key(text) returns text language sql immutable parallel safe
      return lower($1 collate "pg_c_utf8")$f$;
  elsif exists (select 1 from pg_collation where collname = 'und-x-icu') then
    execute $f$create function fleet_name_key(text) returns text language sql immutable parallel safe
      return lower($1 collate "und-x-icu")$f$;
  else
    execute $f$create function fleet_name_key(text) returns text language sql immutable parallel safe
      return lower($1)$f$;
  end if;
end
$$;
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
               partition by organization_id, fleet_name_key(name)
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
          and fleet_name_key(name) = fleet_name_key(candidate));
      k := k + 1;
    end loop;
    update groups set name = candidate where id = r.id;
  end loop;

  for r in
    select id, organization_id, parent_id, name from (
      select id, organization_id, parent_id, name, created_at,
             row_number() over (
               partition by organization_id, parent_id, fleet_name_key(name)
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
          and fleet_name_key(name) = fleet_name_key(candidate));
      k := k + 1;
    end loop;
    update org_units set name = candidate where id = r.id;
  end loop;
end
$$;

create unique index groups_name_key on groups (organization_id, fleet_name_key(name));
create unique index org_units_sibling_name_key
  on org_units (organization_id, parent_id, fleet_name_key(name)) nulls not distinct;

-- migrate:down
