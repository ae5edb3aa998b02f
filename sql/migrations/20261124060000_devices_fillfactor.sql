-- migrate:up
-- Room on every page of devices for the heartbeat's new row version (CONTRACT §19): each
-- batched heartbeat updates agent_last_checkin of every device that checked in, a column
-- no index covers, so with free space on its page the update is HOT: no new entry in any
-- of the table's indexes, less WAL. At a large fleet this update is most of the primary's
-- work per check-in. Pages written from now on keep a fifth free; VACUUM FULL applies it
-- to the pages already written.
alter table devices set (fillfactor = 80);

-- migrate:down
