-- migrate:up
-- Staged rollouts (api/rollouts/README.md): one change of one Merkmal at an org unit or a
-- group, made in rings of the devices it alters, judged by the agents' reports.

create table rollouts (
  id                 uuid primary key default gen_random_uuid(),
  organization_id    uuid not null references organizations on delete cascade,
  scope              text not null check (scope in ('org_unit', 'group')),
  -- An org unit or a group of the organization; no foreign key, since it is either.
  scope_id           uuid not null,
  merkmal            text not null references merkmale,
  action             text not null check (action in ('select', 'deselect', 'unset')),
  optionen           jsonb not null default '{}',
  -- Cumulative percentages, strictly ascending, the last 100.
  rings              smallint[] not null check (cardinality(rings) between 1 and 10 and rings[cardinality(rings)] = 100),
  max_failure_ratio  double precision not null check (max_failure_ratio between 0 and 1),
  min_reported_ratio double precision not null check (min_reported_ratio between 0 and 1),
  soak_seconds       integer not null check (soak_seconds between 0 and 604800),
  status             text not null default 'running' check (status in ('running', 'paused', 'completed', 'aborted')),
  paused_reason      text check (paused_reason in ('failure_ratio', 'manual')),
  current_ring       smallint not null default 0,
  created_by         jsonb not null,
  created_at         timestamptz not null default now(),
  completed_at       timestamptz,
  check ((status = 'paused') = (paused_reason is not null))
);

-- One running or paused rollout per scope and Merkmal: the 409 `rollout_in_progress` when
-- two creations race.
create unique index rollouts_active_per_scope on rollouts (scope_id, merkmal) where status in ('running', 'paused');
create index rollouts_by_organization on rollouts (organization_id, created_at desc, id desc);
create index rollouts_active on rollouts (id) where status = 'running';

-- Each ring: its share of the devices, when it opened, and the failures an admin accepted
-- by resuming after an automatic pause (the judge counts only failures beyond them).
create table rollout_rings (
  rollout_id        uuid not null references rollouts on delete cascade,
  ring              smallint not null,
  percent           smallint not null,
  devices           integer not null,
  opened_at         timestamptz,
  accepted_failures integer not null default 0,
  primary key (rollout_id, ring)
);

-- The devices the change alters, fixed at creation, each in its ring. `applied`: the ring
-- is open and the rollout neither completed nor aborted, so the device's resolution puts
-- the rollout's change in place at its scope (api/catalog/resolution.ts).
create table rollout_devices (
  rollout_id uuid not null references rollouts on delete cascade,
  device_id  uuid not null references devices on delete cascade,
  ring       smallint not null,
  applied    boolean not null default false,
  primary key (rollout_id, device_id)
);
create index rollout_devices_by_ring on rollout_devices (rollout_id, ring);
create index rollout_devices_applied on rollout_devices (device_id) where applied;

-- The ids of the rollouts applied to a device, ordered and joined by commas, on its row:
-- the check-in stamps its ETag with it and resolves the rollouts only when it is not
-- empty, so a check-in pays nothing for the rollouts that do not concern its device.
alter table devices add column rollouts_text text not null default '';

create function refresh_device_rollouts_text(device_ids uuid[]) returns void
  language plpgsql volatile as $$
begin
  -- As refresh_device_state_texts: lock first, then read in a snapshot taken after the lock.
  perform 1 from devices where id in (select unnest(device_ids)) order by id for no key update;
  update devices d set rollouts_text = array_to_string(array(
      select rd.rollout_id from rollout_devices rd where rd.device_id = d.id and rd.applied order by rd.rollout_id), ',')
  where d.id in (select unnest(device_ids));
end $$;

-- Only rows that are or were applied touch the device row: creating a rollout inserts its
-- devices unapplied and writes no device.
create function rollout_devices_inserted() returns trigger language plpgsql as $$
begin
  perform refresh_device_rollouts_text(array(select distinct device_id from changed_rows where applied));
  return null;
end $$;

create function rollout_devices_deleted() returns trigger language plpgsql as $$
begin
  perform refresh_device_rollouts_text(array(select distinct device_id from changed_rows where applied));
  return null;
end $$;

create function rollout_devices_updated() returns trigger language plpgsql as $$
begin
  perform refresh_device_rollouts_text(array(
    select o.device_id from old_rows o join new_rows n using (rollout_id, device_id) where o.applied <> n.applied));
  return null;
end $$;

create trigger rollout_devices_insert_text after insert on rollout_devices
  referencing new table as changed_rows for each statement execute function rollout_devices_inserted();
create trigger rollout_devices_delete_text after delete on rollout_devices
  referencing old table as changed_rows for each statement execute function rollout_devices_deleted();
create trigger rollout_devices_update_text after update on rollout_devices
  referencing old table as old_rows new table as new_rows for each statement execute function rollout_devices_updated();

-- migrate:down
