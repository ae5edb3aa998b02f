-- migrate:up
-- Stale devices: the `device.stale` webhook once per stale period, and archiving by policy.

-- Days a device may stay stale before the hourly sweep archives it. Null: the parent's
-- value decides (and a tree with no value on the device's way up never archives).
alter table org_units add column archive_stale_after_days integer
  check (archive_stale_after_days between 1 and 3650);

-- The stale sweep's mark, one row per device it announced: which silence it announced (the
-- last sign of life, check-in or bootstrap, the device went stale after). A later sign of
-- life starts a new stale period, so the device is announced again when that one ends.
-- A table of its own: the sweep never writes the device row, and announcing is one upsert
-- whose conflict settles two sweeps that run at once.
create table device_stale_marks (
  device_id    uuid primary key references devices on delete cascade,
  silent_since timestamptz not null,
  marked_at    timestamptz not null default now_ms()
);

-- The event types a webhook may name are the API's list (it refuses a repeat); the table
-- only requires one, so a new type needs no migration.
alter table webhooks drop constraint webhooks_events_check;
alter table webhooks add constraint webhooks_events_check check (cardinality(events) >= 1);

-- device.archived says why when the transaction that archives gives a reason
-- (`set_config('fleet.archive_reason', 'stale', true)`, by the archiving sweep): the
-- archive itself stays the one statement every archive runs. Otherwise as before.
create or replace function devices_webhook_events() returns trigger
language plpgsql as $$
declare
  v_data jsonb := jsonb_build_object(
    'device_id', new.id, 'serial', new.serial, 'hostname', new.hostname, 'oe_id', new.oe_id);
  v_reason text := nullif(current_setting('fleet.archive_reason', true), '');
begin
  if old.archived_at is null and new.archived_at is not null then
    perform emit_webhook_event(new.organization_id, 'device.archived',
      case when v_reason is null then v_data else v_data || jsonb_build_object('reason', v_reason) end);
  end if;
  if old.deprovisioned_at is null and new.deprovisioned_at is not null then
    perform emit_webhook_event(new.organization_id, 'device.deprovisioned', v_data);
  end if;
  if (old.deprovisioned_at is not null or old.agent_secret_hash is not null)
     and new.deprovisioned_at is null and new.agent_secret_hash is null then
    perform emit_webhook_event(new.organization_id, 'device.reprovisioned', v_data);
  end if;
  if old.agent_secret_hash is null and new.agent_secret_hash is not null then
    perform emit_webhook_event(new.organization_id, 'device.bootstrapped', v_data);
  end if;
  return null;
end $$;

-- migrate:down
