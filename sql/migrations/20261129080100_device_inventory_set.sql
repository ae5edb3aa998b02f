-- migrate:up
-- The package set and release of a device's last inventory, also on the device's own row:
-- counting an org unit's or a group's devices per set (the scoped vulnerability list) then
-- reads those devices' rows alone, instead of joining every inventory of the organization
-- (10,000 devices of 100,000: 17-24 ms instead of 55-88 ms, on a busy host).
alter table devices add column inventory_set_id bigint, add column inventory_release text;

-- Copied by statement triggers on the inventories, whoever writes them (a bulk insert
-- makes one update, not one per row). Inventories go only with their device.
create function device_inventories_set_copied() returns trigger language plpgsql as $$
begin
  update devices d set inventory_set_id = n.package_set_id, inventory_release = n.release
    from new_rows n
   where d.id = n.device_id
     and (d.inventory_set_id, d.inventory_release) is distinct from (n.package_set_id, n.release);
  return null;
end $$;
create trigger device_inventories_set_inserted after insert on device_inventories
  referencing new table as new_rows for each statement execute function device_inventories_set_copied();
create trigger device_inventories_set_updated after update on device_inventories
  referencing new table as new_rows for each statement execute function device_inventories_set_copied();

update devices d set inventory_set_id = i.package_set_id, inventory_release = i.release
  from device_inventories i where i.device_id = d.id;

-- migrate:down
