-- migrate:up
-- Whether a device is active or stale is decided by the clock from its heartbeat and the
-- time its agent's secret was issued. The device list's total of active or stale devices
-- joined every device of the organization with its heartbeat for that (about 100 ms at
-- 100,000 devices). Each heartbeat now carries what the count needs besides its time: the
-- device's organization and, while its agent reports (bootstrapped, neither deprovisioned
-- nor archived), the time its secret was issued, as its fleet row keeps it. The count then
-- reads the organization's narrow heartbeat rows alone.
--
-- Neither column changes with a check-in, and nothing indexes `at`: the batched heartbeat
-- update stays HOT (an index on the time would cost every check-in a new index entry).
-- Every device has its row, made with the device by the trigger that keeps its fleet row,
-- which keeps both columns too; a device's bootstrap no longer inserts it.
alter table device_heartbeats add column organization_id uuid, add column issued_at timestamptz;
insert into device_heartbeats (device_id)
select d.id from devices d where not exists (select 1 from device_heartbeats h where h.device_id = d.id);
update device_heartbeats h
   set organization_id = d.organization_id,
       issued_at = case when device_status(d.archived_at, d.deprovisioned_at, d.agent_secret_issued_at, null, null)
                             = 'active' then d.agent_secret_issued_at end
  from devices d where d.id = h.device_id;
alter table device_heartbeats alter column organization_id set not null;
create index device_heartbeats_organization on device_heartbeats (organization_id);
-- The list's scans of these rows (its active and stale totals, the latest check-ins) take a
-- few milliseconds; a parallel worker took longer to start than it saved.
alter table device_heartbeats set (parallel_workers = 0);

-- The heartbeat rows of these devices: made for new devices, their organization and issue
-- time written where they differ (an update that changes nothing locks no row, so a move
-- or a template change never waits for a heartbeat batch). In id order, as the batch
-- takes its rows.
create function device_heartbeats_write(device_ids uuid[]) returns void language plpgsql volatile
set plan_cache_mode = force_generic_plan as $$
begin
  insert into device_heartbeats (device_id, organization_id)
  select d.id, d.organization_id from devices d where d.id = any(device_ids) order by d.id
  on conflict (device_id) do nothing;
  update device_heartbeats h
     set organization_id = n.organization_id, issued_at = n.issued_at
    from (
      select d.id, d.organization_id,
             case when device_status(d.archived_at, d.deprovisioned_at, d.agent_secret_issued_at, null, null)
                       = 'active' then d.agent_secret_issued_at end as issued_at
      from devices d where d.id = any(device_ids)
      order by d.id
    ) n
   where h.device_id = n.id and (h.organization_id, h.issued_at) is distinct from (n.organization_id, n.issued_at);
end $$;

create or replace function device_fleet_devices_written() returns trigger language plpgsql as $$
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
  if cardinality(changed) > 0 then
    perform device_fleet_refresh(changed);
    perform device_heartbeats_write(changed);
  end if;
  return null;
end $$;

-- migrate:down
