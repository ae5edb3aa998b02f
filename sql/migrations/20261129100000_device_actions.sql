-- migrate:up
-- Device actions (api/actions/README.md): an admin asks a device to reboot, apply, upgrade
-- or run a script; the request waits for the device's next check-in, is delivered there,
-- started and finished by its agent exactly once.

create table device_actions (
  id              uuid primary key default gen_random_uuid(),
  organization_id uuid not null references organizations on delete cascade,
  device_id       uuid not null references devices on delete cascade,
  type            text not null check (type in ('reboot', 'apply_now', 'apply_updates', 'script')),
  -- With every default filled in at creation.
  parameters      jsonb not null check (jsonb_typeof(parameters) = 'object'),
  status          text not null default 'pending'
                  check (status in ('pending', 'delivered', 'running', 'succeeded', 'failed', 'expired', 'canceled')),
  created_by      jsonb not null check (jsonb_typeof(created_by) = 'object'),
  created_at      timestamptz not null default now_ms(),
  expires_at      timestamptz not null,
  delivered_at    timestamptz,
  started_at      timestamptz,
  finished_at     timestamptz,
  -- `{ exit_code, output, duration_ms, details }` once the agent reported it.
  result          jsonb check (result is null or jsonb_typeof(result) = 'object'),
  -- The rollout that queued it (api/rollouts/README.md), if any.
  rollout_id      uuid references rollouts on delete set null,
  check ((status in ('running', 'succeeded', 'failed')) = (started_at is not null)),
  check ((status in ('succeeded', 'failed')) = (result is not null)),
  check ((status in ('succeeded', 'failed', 'expired', 'canceled')) = (finished_at is not null))
);

-- A device's actions, newest first; the check-in's open ones, oldest first.
create index device_actions_by_device on device_actions (device_id, created_at desc, id desc);
create index device_actions_open on device_actions (device_id, created_at, id) where status in ('pending', 'delivered');
-- The expiry sweep.
create index device_actions_expiry on device_actions (expires_at) where status in ('pending', 'delivered');
create index device_actions_by_rollout on device_actions (rollout_id, device_id) where rollout_id is not null;

-- Whether the device has a pending or delivered action: the check-in reads its actions only
-- then, so a device without any pays one boolean of its row. Kept by the triggers below.
alter table devices add column actions_open boolean not null default false;

create function refresh_device_actions_open(device_ids uuid[]) returns void
  language plpgsql volatile as $$
begin
  if cardinality(device_ids) = 0 then return; end if;
  -- Lock first, then read in a snapshot taken after the lock: of two transactions that
  -- queue and end the device's actions at once, the second sees what the first did.
  perform 1 from devices where id = any(device_ids) order by id for no key update;
  update devices d set actions_open = x.open
  from (
    select t.id, exists (select 1 from device_actions a
                          where a.device_id = t.id and a.status in ('pending', 'delivered')) as open
    from unnest(device_ids) as t (id)
  ) x
  where d.id = x.id and d.actions_open <> x.open;
end $$;

create function device_actions_inserted() returns trigger language plpgsql as $$
begin
  perform refresh_device_actions_open(array(
    select distinct device_id from new_rows where status in ('pending', 'delivered')));
  return null;
end $$;

create function device_actions_updated() returns trigger language plpgsql as $$
begin
  perform refresh_device_actions_open(array(
    select distinct n.device_id from new_rows n join old_rows o on o.id = n.id
    where (n.status in ('pending', 'delivered')) <> (o.status in ('pending', 'delivered'))));
  return null;
end $$;

create trigger device_actions_insert_open after insert on device_actions
  referencing new table as new_rows for each statement execute function device_actions_inserted();
create trigger device_actions_update_open after update on device_actions
  referencing old table as old_rows new table as new_rows for each statement execute function device_actions_updated();

-- A device's open actions as the check-in hands them out: pending or delivered and not
-- past their expiry, oldest first (ties by id), at most 10, as JSON text with the status
-- and the expiry in epoch milliseconds. The check-in calls it only for a device whose
-- `actions_open` is set.
create function device_open_actions(p_device_id uuid) returns text
  language sql stable as $$
  select coalesce(json_agg(json_build_object(
           'id', o.id, 'type', o.type, 'parameters', o.parameters, 'status', o.status,
           'expires_at', (extract(epoch from o.expires_at) * 1000)::int8)
         order by o.created_at, o.id), '[]')::text
  from (select a.id, a.type, a.parameters, a.status, a.expires_at, a.created_at
        from device_actions a
        where a.device_id = p_device_id and a.status in ('pending', 'delivered') and a.expires_at > now()
        order by a.created_at, a.id
        limit 10) o
$$;

-- Webhook `action.finished` for an action that ended by a result or by its expiry (never
-- for a cancel), queued in the transaction that ended it. Never a script or an output.
create function device_actions_webhook_events() returns trigger language plpgsql as $$
begin
  perform emit_webhook_event(new.organization_id, 'action.finished', jsonb_build_object(
    'action_id', new.id, 'device_id', new.device_id, 'type', new.type, 'status', new.status,
    'exit_code', case when new.status = 'expired' then null else new.result -> 'exit_code' end));
  return null;
end $$;

create trigger device_actions_webhook_events after update of status on device_actions
  for each row when (old.status is distinct from new.status and new.status in ('succeeded', 'failed', 'expired'))
  execute function device_actions_webhook_events();

-- Deprovisioning or archiving a device cancels its actions that have not started;
-- reprovisioning revives none.
create function devices_cancel_actions() returns trigger language plpgsql as $$
begin
  update device_actions set status = 'canceled', finished_at = now_ms()
  where device_id = new.id and status in ('pending', 'delivered');
  return null;
end $$;

create trigger devices_cancel_actions after update of archived_at, deprovisioned_at on devices
  for each row when ((old.archived_at is null and new.archived_at is not null)
                  or (old.deprovisioned_at is null and new.deprovisioned_at is not null))
  execute function devices_cancel_actions();

-- A rollout may queue a device action in rings instead of changing a Merkmal: then
-- `merkmal`, `action` and `optionen` are null and `device_action` holds `{ type, parameters }`.
alter table rollouts
  alter column merkmal drop not null,
  alter column action drop not null,
  alter column optionen drop not null,
  add column device_action jsonb check (device_action is null or jsonb_typeof(device_action) = 'object'),
  add constraint rollouts_change_or_action
    check ((device_action is null) = (merkmal is not null and action is not null and optionen is not null));

-- migrate:down
