-- migrate:up
-- A report of one device (what the report route writes) takes a shorter path: the fleet
-- row is read in the statement that locks it, each new outcome's convergence comes from the
-- upsert's own `returning`, and the catalog text is rewritten from those in the function
-- (the other items keep the convergence the text holds: every writer of a device's outcomes
-- holds its fleet row while it writes them), then written only when it changed. Before,
-- `device_fleet_reported` read every outcome back in a statement of its own. No SET clause:
-- it was set and restored on every call. Selections and several devices: as before.
--
-- Room on each page for an outcome's next version: a report updates its rows in place.
alter table device_merkmal_outcomes set (fillfactor = 80);

create or replace function device_merkmal_outcomes_record() returns trigger language plpgsql as $$
declare
  touched uuid[];
  changes boolean;
  reports boolean;
  -- A report of one device: its fleet row, the merkmale its report changed with the
  -- convergence each would have as present and as absent, and the row's new texts.
  fleet_catalog text;
  fleet_convergence text;
  fleet_issued_at timestamptz;
  reported text[];
  if_present text[];
  if_absent text[];
  item text;
  item_merkmal text;
  item_state text;
  item_convergence text;
  found_at int;
  new_catalog text := '';
  new_convergence text;
begin
  -- One look at the statement's events decides which of the statements below it needs: a
  -- report has no changes, a selection no reports.
  select array_agg(distinct n.device_id order by n.device_id), bool_or(n.type in ('selected', 'deselected')),
         bool_or(n.type in ('applied', 'apply_failed', 'removed', 'remove_failed'))
  into touched, changes, reports
  from inserted n
  where n.type in ('selected', 'deselected', 'applied', 'apply_failed', 'removed', 'remove_failed');
  if touched is null then return null; end if;

  if cardinality(touched) = 1 and not changes then
    select f.catalog, f.convergence, f.issued_at into fleet_catalog, fleet_convergence, fleet_issued_at
    from device_fleet f where f.device_id = touched[1] for update;
    with up as (
      insert into device_merkmal_outcomes as o
        (device_id, merkmal, reported_event, reported_seq, reported_at, reported_detail)
      select distinct on (n.merkmal)
             n.device_id, n.merkmal, n.type, n.seq, n.created_at, n.payload -> 'detail'
      from inserted n
      where n.type in ('applied', 'apply_failed', 'removed', 'remove_failed')
      order by n.merkmal, n.seq desc
      on conflict (device_id, merkmal) do update
        set reported_event = excluded.reported_event, reported_seq = excluded.reported_seq,
            reported_at = excluded.reported_at, reported_detail = excluded.reported_detail
        where o.reported_seq is null or o.reported_seq < excluded.reported_seq
      returning o.merkmal,
        merkmal_convergence('present', o.changed_seq, o.reported_event, o.reported_seq, o.reported_at,
                            fleet_issued_at) as present,
        merkmal_convergence('absent', o.changed_seq, o.reported_event, o.reported_seq, o.reported_at,
                            fleet_issued_at) as absent
    )
    select array_agg(up.merkmal), array_agg(up.present), array_agg(up.absent)
    into reported, if_present, if_absent
    from up;
    -- No fleet row (an archived device), an empty catalog, or no outcome that changed.
    if fleet_catalog is null or fleet_catalog = '' or reported is null then return null; end if;
    -- `merkmal:state:convergence` items, in the text's order (by Merkmal), as device_fleet_write makes them.
    foreach item in array string_to_array(fleet_catalog, ' ') loop
      item_merkmal := split_part(item, ':', 1);
      item_state := split_part(item, ':', 2);
      found_at := array_position(reported, item_merkmal);
      item_convergence := case when found_at is null then split_part(item, ':', 3)
                               when item_state = 'present' then if_present[found_at]
                               else if_absent[found_at] end;
      new_catalog := case when new_catalog = '' then '' else new_catalog || ' ' end
                     || item_merkmal || ':' || item_state || ':' || item_convergence;
      new_convergence := worse_convergence(new_convergence, item_convergence);
    end loop;
    if (new_catalog, new_convergence) is distinct from (fleet_catalog, fleet_convergence) then
      update device_fleet f set catalog = new_catalog, convergence = new_convergence
      where f.device_id = touched[1];
    end if;
    return null;
  end if;

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

-- migrate:down
