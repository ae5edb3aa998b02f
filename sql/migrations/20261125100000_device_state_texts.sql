-- migrate:up
-- A device's groups and its own overrides, also kept on its row as the texts the check-in
-- stamps its ETag with (CONTRACT §19, api/catalog/state.ts): ids ordered and joined by
-- commas, and a JSON array ordered by Merkmal. The check-in then reads one row per device
-- instead of probing the membership and override indexes for each: at a large fleet each
-- probe is a random page outside the buffers. group_members and device_merkmale stay the
-- truth; triggers keep the texts, so no write path can forget.
alter table devices
  add column group_ids_text     text not null default '',
  add column own_overrides_text text not null default '[]';

-- Writes the texts of the given devices from the truth tables.
create function refresh_device_state_texts(device_ids uuid[]) returns void
  language plpgsql volatile as $$
begin
  -- Lock first, then read in a statement of its own: its snapshot is taken after the lock,
  -- so it sees every membership or override committed by a transaction this one waited
  -- for. Two concurrent changes of one device cannot each write a text lacking the other's.
  perform 1 from devices where id in (select unnest(device_ids)) order by id for no key update;
  update devices d set
    group_ids_text = array_to_string(array(
      select gm.group_id from group_members gm where gm.device_id = d.id order by gm.group_id), ','),
    own_overrides_text = (
      select coalesce(json_agg(json_build_object('merkmal', o.merkmal, 'state', o.state, 'optionen', o.optionen)
                               order by o.merkmal), '[]')
      from device_merkmale o where o.device_id = d.id)::text
  where d.id in (select unnest(device_ids));
end $$;

-- Statement triggers with transition tables, as for override_versions: `changed_rows` holds
-- the new rows of an insert, the old rows of a delete; an update may move a row to another
-- device, so it refreshes the devices of its old and its new rows.
create function device_state_rows_changed() returns trigger language plpgsql as $$
begin
  perform refresh_device_state_texts(array(select distinct device_id from changed_rows));
  return null;
end $$;

create function device_state_rows_updated() returns trigger language plpgsql as $$
begin
  perform refresh_device_state_texts(array(
    select device_id from old_rows union select device_id from new_rows));
  return null;
end $$;

do $$
declare
  t text;
begin
  foreach t in array array['group_members', 'device_merkmale'] loop
    execute format('create trigger %I after insert on %I referencing new table as changed_rows '
                   'for each statement execute function device_state_rows_changed()', t || '_insert_state_texts', t);
    execute format('create trigger %I after delete on %I referencing old table as changed_rows '
                   'for each statement execute function device_state_rows_changed()', t || '_delete_state_texts', t);
    execute format('create trigger %I after update on %I referencing old table as old_rows new table as new_rows '
                   'for each statement execute function device_state_rows_updated()', t || '_update_state_texts', t);
  end loop;
end $$;

-- The devices that already have groups or overrides.
select refresh_device_state_texts(array(
  select device_id from group_members union select device_id from device_merkmale));

-- migrate:down
