-- migrate:up
-- The device list's picks from the fleet rows: the organization's devices that are not
-- archived with what its filters read (org unit, bucket, bootstrap for the stale rule,
-- convergence), so its total is an index-only count and an order by last check-in joins
-- the heartbeats with these entries instead of with the devices' rows (a few dozen bytes
-- each against a few hundred). It leads with the columns of `device_fleet_scope` (a fleet
-- status of a unit's subtree) and replaces it. A report changes none of its columns but the
-- convergence, which `device_fleet_convergence` indexes already: what stayed a HOT update
-- stays one.
create index device_fleet_list on device_fleet (organization_id, oe_id, bucket)
  include (device_id, issued_at, convergence);
drop index device_fleet_scope;

-- migrate:down
create index device_fleet_scope on device_fleet (organization_id, oe_id);
drop index device_fleet_list;
