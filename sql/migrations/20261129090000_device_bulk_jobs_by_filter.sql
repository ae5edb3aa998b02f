-- migrate:up
-- The request that starts a bulk job only counts its devices; the job's first chunk takes
-- the list, from the stored filter (a `DeviceFilter` as JSON, no longer its query
-- parameters), in the database. Until then `device_ids` is null and `total` is the count
-- the request made; a job can end failed before it had a list (its filter's unit deleted).
alter table device_bulk_jobs alter column device_ids drop not null;
alter table device_bulk_jobs drop constraint device_bulk_jobs_check;
alter table device_bulk_jobs add constraint device_bulk_jobs_devices_check
  check (case when device_ids is null then status in ('queued', 'failed') and done = 0
              else total = cardinality(device_ids) end);

-- migrate:down
