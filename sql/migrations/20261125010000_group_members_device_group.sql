-- migrate:up transaction:false
-- A device's groups are read by its id (the texts of migration 20261125100000, the device
-- view). With the group id in the index too, that read is an index-only scan: one probe,
-- no visit of the table's page (group_members changes seldom, so its pages stay
-- all-visible). The next migration drops the index on the device id alone, which this one
-- covers for every other lookup (the cascade included). Built concurrently, so a fleet
-- keeps checking in meanwhile (one statement per file: a concurrent build cannot share a
-- query string with another).
create index concurrently if not exists group_members_device_group on group_members (device_id, group_id);

-- migrate:down
