-- migrate:up
-- The device list's filters security_updates=true and reboot_required=true: the devices of
-- an organization that have pending security updates or need a reboot, a small part of
-- the fleet on most days, found without reading every inventory row of the organization.
create index device_inventories_security_pending on device_inventories (organization_id)
  where security_pending_count > 0;
create index device_inventories_reboot_required on device_inventories (organization_id)
  where reboot_required;

-- migrate:down
