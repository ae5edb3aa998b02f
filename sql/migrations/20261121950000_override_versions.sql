-- migrate:up
-- A counter per organization that moves whenever anything changes that the API caches of
-- an organization's overrides: its org units (the tree), their overrides, its groups and
-- their overrides. The check-in reads the counter in its one statement and uses the cached
-- overrides only when they are at least that new (api/catalog/org_overrides.ts), so a
-- change is seen by the very next check-in, from any API process. Triggers keep it, so no
-- write path can forget; a statement bumps each organization it touched once.
-- Device overrides and group memberships are read live and need no counter.
create table override_versions (
  organization_id uuid primary key references organizations on delete cascade,
  version         bigint not null
);

-- Upsert through organizations: while an organization is deleted its cascaded rows find no
-- organization row, so nothing is written for it.
create function bump_override_versions(organization_ids uuid[]) returns void
  language sql volatile as $$
    insert into override_versions (organization_id, version)
    select o.id, 1 from organizations o where o.id = any (organization_ids)
    on conflict (organization_id) do update set version = override_versions.version + 1
  $$;

-- org_units and groups carry their organization.
create function organization_rows_changed() returns trigger language plpgsql as $$
begin
  perform bump_override_versions(array(select organization_id from changed_rows));
  return null;
end $$;

create function org_unit_merkmale_changed() returns trigger language plpgsql as $$
begin
  perform bump_override_versions(array(
    select ou.organization_id from org_units ou
    where ou.id in (select org_unit_id from changed_rows)));
  return null;
end $$;

create function group_merkmale_changed() returns trigger language plpgsql as $$
begin
  perform bump_override_versions(array(
    select g.organization_id from groups g
    where g.id in (select group_id from changed_rows)));
  return null;
end $$;

-- Statement triggers with their transition table `changed_rows` (the new rows of an insert
-- or update, the old rows of a delete); PostgreSQL allows a transition table on a
-- single-event trigger only, hence three per table.
do $$
declare
  t text;
  e text;
begin
  foreach t in array array['org_units', 'groups', 'org_unit_merkmale', 'group_merkmale'] loop
    foreach e in array array['insert', 'update', 'delete'] loop
      execute format(
        'create trigger %I after %s on %I referencing %s table as changed_rows for each statement execute function %I()',
        t || '_' || e || '_override_version', e, t, case e when 'delete' then 'old' else 'new' end,
        case when t in ('org_units', 'groups') then 'organization_rows_changed' else t || '_changed' end);
    end loop;
  end loop;
end $$;

-- migrate:down
