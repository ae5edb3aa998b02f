-- migrate:up
-- The agents' heartbeats in a table of their own (CONTRACT §19): the batched heartbeat
-- writes one row version per device that checked in. In `devices` that version is a whole
-- device row: few share a page, so after a checkpoint many heartbeats log a full image of
-- their page (which every replica replays), and each dirties a page the check-in's read
-- needs. Narrow rows share a page by the hundred, and `devices` changes only with the
-- device itself. The API still answers `agent_last_checkin` on the device.
-- A device's row is made when its agent bootstraps, so the batch is a plain update.
create table device_heartbeats (
  device_id uuid primary key references devices on delete cascade,
  -- The time of the device's latest answered check-in (not of the write); null before the first.
  at        timestamptz
) with (fillfactor = 80); -- room on each page for the next version: the update stays HOT
insert into device_heartbeats (device_id, at)
select id, agent_last_checkin from devices where agent_secret_hash is not null or agent_last_checkin is not null;
alter table devices drop column agent_last_checkin;
-- No more heartbeat versions to keep room for on each page.
alter table devices reset (fillfactor);

-- migrate:down
