-- migrate:up
-- Device events get a true write order. created_at has millisecond precision and id is a
-- random UUID, so events written in the same millisecond (the entries of one agent
-- report, a selection and a report right after it) listed in random order. seq is drawn
-- from a sequence as each row is inserted, so it follows the order of the writes: the
-- entries of one report in entry order, and separate statements in the order they ran.
alter table device_merkmal_events add column seq bigint;

-- Existing rows are numbered in the order the list showed them until now (created_at, id),
-- so no list reshuffles; same-millisecond ties never had a recorded order.
update device_merkmal_events e
set seq = numbered.seq
from (select id, row_number() over (order by created_at, id) as seq from device_merkmal_events) numbered
where numbered.id = e.id;

alter table device_merkmal_events alter column seq set not null;
alter table device_merkmal_events alter column seq add generated always as identity;
select setval(pg_get_serial_sequence('device_merkmal_events', 'seq'), coalesce(max(seq), 0) + 1, false)
from device_merkmal_events;

-- The list reads one device's events newest first: (device_id, seq desc). Unique, so the
-- keyset cursor on seq can never skip or repeat a row. It also serves the foreign key's
-- cascade from devices, as the index it replaces did.
create unique index device_merkmal_events_device_seq on device_merkmal_events (device_id, seq desc);
drop index device_merkmal_events_device_newest;

-- migrate:down
