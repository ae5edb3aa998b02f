-- migrate:up
-- What the fleet-wide reads need of each device, kept beside it so that they read one narrow
-- row per device instead of resolving its catalog: its status bucket, its catalog's states
-- and convergences as one text, and its worst convergence (indexed, for the device list's
-- filter). Nothing here depends on the clock: whether a reporting device is active or stale
-- is still decided at read time from its heartbeat (`device_status`).
--
-- Kept by triggers on what decides these values: the events (through the trigger that
-- keeps device_merkmal_outcomes) and the devices' own columns (organization unit, template,
-- agent secret, deprovisioned, archived). The catalog (merkmale, blueprints, workspace
-- defaults, templates) is seed data; a migration that changes it must refresh every device
-- (`select device_fleet_refresh(array(select id from devices))`).
create table device_fleet (
  device_id       uuid primary key references devices on delete cascade,
  organization_id uuid not null,
  oe_id           uuid not null,
  -- `enrolled`, `deprovisioned` or `reporting` (an agent that reports: active or stale by
  -- its heartbeat). Archived devices have no row.
  bucket          text not null check (bucket in ('enrolled', 'deprovisioned', 'reporting')),
  -- For the stale rule at read time: the agent's bootstrap (null unless reporting).
  issued_at       timestamptz,
  -- The worst convergence of its catalog (`worst_convergence`; `converged` for an empty
  -- catalog), null unless reporting: the device object's `convergence`.
  convergence     text check (convergence in ('converged', 'pending', 'failed')),
  -- `merkmal:state:convergence` of each catalog item, ordered by Merkmal and joined by
  -- spaces ('' unless reporting; Merkmal keys, seed data, hold neither): devices with equal
  -- catalogs have equal texts, so a fleet-wide count groups a few distinct texts instead of
  -- resolving every device.
  catalog         text not null
) with (fillfactor = 80); -- room for the next version on its page: most updates stay HOT
create index device_fleet_scope on device_fleet (organization_id, oe_id);
create index device_fleet_convergence on device_fleet (organization_id, convergence) where convergence is not null;

-- Writes the rows of these live devices from the devices and their outcomes; archived ones
-- are left alone (`device_fleet_refresh` removes them). The caller holds their fleet rows'
-- locks. Generic plans: a report writes one device, and planning the catalog's joins anew
-- for each call cost three times as much as running them.
create function device_fleet_write(device_ids uuid[]) returns void language plpgsql volatile
set plan_cache_mode = force_generic_plan as $$
begin
  insert into device_fleet as f (device_id, organization_id, oe_id, bucket, issued_at, convergence, catalog)
  select d.id, d.organization_id, d.oe_id, b.bucket,
         case when b.bucket = 'reporting' then d.agent_secret_issued_at end,
         case when b.bucket = 'reporting' then coalesce(c.worst, 'converged') end,
         coalesce(c.catalog, '')
  from devices d
  -- The effective template: `effective_template_id` gives the default for no assignment.
  left join templates t on t.id = coalesce(d.template_id, (select effective_template_id(null)))
  -- The status without its clock: with no check-in time and no limit, `device_status` says
  -- `active` for every device with an agent that reports (active or stale).
  cross join lateral (
    select device_status(d.archived_at, d.deprovisioned_at, d.agent_secret_issued_at, null, null) as status
  ) st
  cross join lateral (select case st.status when 'active' then 'reporting' else st.status end as bucket) b
  left join lateral (
    select worst_convergence(o.convergence) as worst,
           string_agg(o.merkmal || ':' || o.state || ':' || o.convergence, ' ' order by o.merkmal) as catalog
    from device_catalog_outcomes(d.id, t.backend, t.workspace, d.agent_secret_issued_at) o
    where b.bucket = 'reporting'
  ) c on true
  where d.id = any(device_ids) and d.archived_at is null
  on conflict (device_id) do update
    set oe_id = excluded.oe_id, bucket = excluded.bucket, issued_at = excluded.issued_at,
        convergence = excluded.convergence, catalog = excluded.catalog
    where (f.oe_id, f.bucket, f.issued_at, f.convergence, f.catalog)
          is distinct from (excluded.oe_id, excluded.bucket, excluded.issued_at, excluded.convergence, excluded.catalog);
end $$;

-- The same after reports alone, without resolving the catalog again: a report changes no
-- desired state, so each item keeps its Merkmal and state, and only its convergence is
-- computed anew from its outcome. A third of the cost of `device_fleet_write` per report.
-- The caller holds the fleet rows' locks.
create function device_fleet_reported(device_ids uuid[]) returns void language plpgsql volatile
set plan_cache_mode = force_generic_plan as $$
begin
  update device_fleet f set catalog = n.catalog, convergence = n.convergence
  from (
    select r.device_id,
           string_agg(i.merkmal || ':' || i.state || ':' || i.convergence, ' ' order by i.merkmal) as catalog,
           coalesce(worst_convergence(i.convergence), 'converged') as convergence
    from device_fleet r
    cross join lateral string_to_table(r.catalog, ' ') item
    cross join lateral (select split_part(item, ':', 1) as merkmal, split_part(item, ':', 2) as state) p
    -- A probe per item, not a join: the planner cannot know an item list is short.
    cross join lateral (
      select p.merkmal, p.state, coalesce(
               (select merkmal_convergence(p.state, o.changed_seq, o.reported_event, o.reported_seq, o.reported_at,
                                           r.issued_at)
                from device_merkmal_outcomes o where o.device_id = r.device_id and o.merkmal = p.merkmal),
               merkmal_convergence(p.state, null, null, null, null, r.issued_at)) as convergence
    ) i
    where r.device_id = any(device_ids) and r.catalog <> ''
    group by r.device_id
  ) n
  where f.device_id = n.device_id and (f.catalog, f.convergence) is distinct from (n.catalog, n.convergence);
end $$;

-- Brings the rows of these devices up to date with the devices and their outcomes. Every
-- writer of a device's own columns calls it in its own transaction after its write.
create function device_fleet_refresh(device_ids uuid[]) returns void language plpgsql volatile
set plan_cache_mode = force_generic_plan as $$
begin
  -- Lock first, then read in statements of their own (as refresh_device_state_texts does):
  -- their snapshot is taken after the lock, so they see every change committed by a
  -- transaction this one waited for, and two writers of one device cannot each leave a row
  -- that lacks the other's change. The lock is the fleet row's, not the device's: writers
  -- of an org unit's or a group's selection hold the organization's lock and never lock a
  -- device, while writers at a device lock it before the organization's; a device lock
  -- here would close that circle. Nothing but these triggers locks a fleet row, and they
  -- take it last. (A device inserted by this statement has no row to lock yet: no one
  -- else can see it.)
  perform 1 from device_fleet where device_id = any(device_ids) order by device_id for update;
  delete from device_fleet f
  where f.device_id = any(device_ids)
    and not exists (select 1 from devices d where d.id = f.device_id and d.archived_at is null);
  perform device_fleet_write(device_ids);
end $$;

-- The outcomes trigger, as before, and then the fleet rows of the devices whose outcomes it
-- wrote. Their fleet rows are locked first (as `device_fleet_refresh` explains), before the
-- outcomes, so a report and a selection on one device wait for each other instead of each
-- holding an outcome the other needs. Events are written for live devices only, so there
-- is no row to remove.
create or replace function device_merkmal_outcomes_record() returns trigger language plpgsql
set plan_cache_mode = force_generic_plan as $$
declare
  touched uuid[];
  changes boolean;
  reports boolean;
begin
  -- One look at the statement's events decides which of the statements below it needs: a
  -- report has no changes, a selection no reports.
  select array_agg(distinct n.device_id), bool_or(n.type in ('selected', 'deselected')),
         bool_or(n.type in ('applied', 'apply_failed', 'removed', 'remove_failed'))
  into touched, changes, reports
  from inserted n
  where n.type in ('selected', 'deselected', 'applied', 'apply_failed', 'removed', 'remove_failed');
  if touched is null then return null; end if;
  perform 1 from device_fleet where device_id = any(touched) order by device_id for update;

  if changes then
    insert into device_merkmal_outcomes as o
      (device_id, merkmal, desired, changed_seq, changed_at)
    select distinct on (n.device_id, n.merkmal)
           n.device_id, n.merkmal,
           case n.type when 'selected' then 'present' else 'absent' end, n.seq, n.created_at
    from inserted n
    where n.type in ('selected', 'deselected')
    order by n.device_id, n.merkmal, n.seq desc
    on conflict (device_id, merkmal) do update
      set desired = excluded.desired, changed_seq = excluded.changed_seq, changed_at = excluded.changed_at
      where o.changed_seq is null or o.changed_seq < excluded.changed_seq;
  end if;

  if reports then
    insert into device_merkmal_outcomes as o
      (device_id, merkmal, reported_event, reported_seq, reported_at, reported_detail)
    select distinct on (n.device_id, n.merkmal)
           n.device_id, n.merkmal, n.type, n.seq, n.created_at, n.payload -> 'detail'
    from inserted n
    where n.type in ('applied', 'apply_failed', 'removed', 'remove_failed')
    order by n.device_id, n.merkmal, n.seq desc
    on conflict (device_id, merkmal) do update
      set reported_event = excluded.reported_event, reported_seq = excluded.reported_seq,
          reported_at = excluded.reported_at, reported_detail = excluded.reported_detail
      where o.reported_seq is null or o.reported_seq < excluded.reported_seq;
  end if;

  if changes then
    perform device_fleet_write(touched);
  else
    perform device_fleet_reported(touched);
  end if;
  return null;
end
$$;

-- The devices' own inputs. One statement trigger per operation (transition tables cannot
-- name columns), so an update that changes none of them (the state texts) does no more
-- than compare.
create function device_fleet_devices_written() returns trigger language plpgsql as $$
declare
  changed uuid[];
begin
  if tg_op = 'INSERT' then
    changed := array(select n.id from new_rows n);
  else
    changed := array(
      select n.id from new_rows n join old_rows o on o.id = n.id
      where (n.oe_id, n.template_id, n.agent_secret_issued_at, n.deprovisioned_at, n.archived_at)
            is distinct from (o.oe_id, o.template_id, o.agent_secret_issued_at, o.deprovisioned_at, o.archived_at));
  end if;
  if cardinality(changed) > 0 then perform device_fleet_refresh(changed); end if;
  return null;
end $$;

create trigger devices_fleet_insert after insert on devices referencing new table as new_rows
  for each statement execute function device_fleet_devices_written();
create trigger devices_fleet_update after update on devices referencing old table as old_rows new table as new_rows
  for each statement execute function device_fleet_devices_written();

-- Every device there is.
select device_fleet_refresh(array(select id from devices where archived_at is null));

-- migrate:down
