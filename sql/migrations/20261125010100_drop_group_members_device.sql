-- migrate:up transaction:false
-- Covered by group_members_device_group (the previous migration).
drop index concurrently if exists group_members_device;

-- migrate:down
