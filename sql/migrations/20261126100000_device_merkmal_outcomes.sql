-- migrate:up
-- What each device has, per catalog Merkmal, readable without scanning the event history:
-- the last desired-state change (the last `selected`/`deselected` event) and the agent's
-- last report (`applied`, `apply_failed`, `removed`, `remove_failed`). One row per device
-- and Merkmal that has had either. Kept by a trigger on device_merkmal_events, so every
-- writer of an event (selections at any scope, moves, memberships, deletions, rollouts,
-- agent reports) keeps it right without knowing it exists.
create table device_merkmal_outcomes (
  device_id       uuid not null references devices on delete cascade,
  merkmal         text not null references merkmale,
  -- The state the last change set: `selected` means present, `deselected` absent. Null
  -- while no change was recorded (the workspace default stands).
  desired         text check (desired in ('present', 'absent')),
  changed_seq     bigint,
  changed_at      timestamptz,
  reported_event  text check (reported_event in ('applied', 'apply_failed', 'removed', 'remove_failed')),
  reported_seq    bigint,
  reported_at     timestamptz,
  reported_detail jsonb,
  primary key (device_id, merkmal),
  check ((desired is null) = (changed_seq is null) and (changed_seq is null) = (changed_at is null)),
  check ((reported_event is null) = (reported_seq is null) and (reported_seq is null) = (reported_at is null))
);

-- One statement-level trigger: a report of 500 entries is one upsert, not 500.
create function device_merkmal_outcomes_record() returns trigger language plpgsql as $$
begin
  insert into device_merkmal_outcomes as o
    (device_id, merkmal, desired, changed_seq, changed_at)
  select distinct on (n.device_id, n.merkmal)
         n.device_id, n.merkmal,
         case n.type when 'selected' then 'present' else 'absent' end, n.seq, n.created_at
  from inserted n
  where n.type in ('selected', 'deselected')
  order by n.device_id, n.merkmal, n.seq desc
  on conflict (device_id, merkmal) do update
    set desired = excluded.desired, changed_seq = excluded.changed_seq, changed_at = excluded.changed_at
    where o.changed_seq is null or o.changed_seq < excluded.changed_seq;

  insert into device_merkmal_outcomes as o
    (device_id, merkmal, reported_event, reported_seq, reported_at, reported_detail)
  select distinct on (n.device_id, n.merkmal)
         n.device_id, n.merkmal, n.type, n.seq, n.created_at, n.payload -> 'detail'
  from inserted n
  where n.type in ('applied', 'apply_failed', 'removed', 'remove_failed')
  order by n.device_id, n.merkmal, n.seq desc
  on conflict (device_id, merkmal) do update
    set reported_event = excluded.reported_event, reported_seq = excluded.reported_seq,
        reported_at = excluded.reported_at, reported_detail = excluded.reported_detail
    where o.reported_seq is null or o.reported_seq < excluded.reported_seq;
  return null;
end
$$;

create trigger device_merkmal_outcomes_record
  after insert on device_merkmal_events
  referencing new table as inserted
  for each statement execute function device_merkmal_outcomes_record();

-- The convergence rule, in one place for every read (a device's catalog, the device list,
-- the fleet status): `failed` when the last report since the last change failed,
-- `converged` when it reports the state that is desired, else `pending`. "Since" is the
-- last change's place in the event sequence, or the agent's bootstrap when there was none.
create function merkmal_convergence(
  state text, changed_seq bigint, reported_event text, reported_seq bigint,
  reported_at timestamptz, bootstrapped_at timestamptz
) returns text language sql immutable parallel safe as $$
  select case
    when reported_event is null then 'pending'
    when changed_seq is not null and reported_seq < changed_seq then 'pending'
    when changed_seq is null and (bootstrapped_at is null or reported_at < bootstrapped_at) then 'pending'
    when reported_event in ('apply_failed', 'remove_failed') then 'failed'
    when (reported_event = 'applied' and state = 'present') or (reported_event = 'removed' and state = 'absent') then 'converged'
    else 'pending'
  end
$$;

-- A device's status, in one place for every read and sweep: the first that holds of
-- archived, deprovisioned, enrolled (no agent secret yet), stale (no check-in for
-- `stale_after`, three poll intervals, since its last check-in or its bootstrap), active.
create function device_status(
  archived_at timestamptz, deprovisioned_at timestamptz, secret_issued_at timestamptz,
  last_checkin timestamptz, stale_after interval
) returns text language sql stable parallel safe as $$
  select case
    when archived_at is not null then 'archived'
    when deprovisioned_at is not null then 'deprovisioned'
    when secret_issued_at is null then 'enrolled'
    when greatest(last_checkin, secret_issued_at) < now() - stale_after then 'stale'
    else 'active'
  end
$$;

-- Existing history, folded the same way.
insert into device_merkmal_outcomes (device_id, merkmal, desired, changed_seq, changed_at)
select distinct on (device_id, merkmal)
       device_id, merkmal, case type when 'selected' then 'present' else 'absent' end, seq, created_at
from device_merkmal_events
where type in ('selected', 'deselected')
order by device_id, merkmal, seq desc;

insert into device_merkmal_outcomes as o (device_id, merkmal, reported_event, reported_seq, reported_at, reported_detail)
select distinct on (device_id, merkmal) device_id, merkmal, type, seq, created_at, payload -> 'detail'
from device_merkmal_events
where type in ('applied', 'apply_failed', 'removed', 'remove_failed')
order by device_id, merkmal, seq desc
on conflict (device_id, merkmal) do update
  set reported_event = excluded.reported_event, reported_seq = excluded.reported_seq,
      reported_at = excluded.reported_at, reported_detail = excluded.reported_detail;

-- migrate:down
