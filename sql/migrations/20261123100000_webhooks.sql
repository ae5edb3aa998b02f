-- migrate:up
-- Webhooks (CONTRACT §16). The signing secret is kept sealed (AES-256-GCM, the service's
-- encryption key, the webhook id bound as additional data): the service must sign with
-- it, so a hash would not do, and a database dump alone does not reveal it.
create table webhooks (
  id              uuid primary key default gen_random_uuid(),
  organization_id uuid not null references organizations on delete cascade,
  url             text not null check (length(url) between 1 and 2048),
  events          text[] not null check (cardinality(events) between 1 and 11),
  secret_sealed   jsonb not null check (jsonb_typeof(secret_sealed) = 'object'),
  created_at      timestamptz not null default now_ms(),
  -- Set by the first failed attempt after a success (or ever); cleared by a success.
  -- Failing for three days disables the webhook.
  failing_since   timestamptz,
  disabled_at     timestamptz
);
create index webhooks_organization on webhooks (organization_id, created_at, id);

-- One event, as every subscribed webhook receives it: the delivery sends
-- { id, type, organization_id, created_at, data }.
create table webhook_events (
  id              uuid primary key default gen_random_uuid(),
  organization_id uuid not null references organizations on delete cascade,
  type            text not null,
  data            jsonb not null check (jsonb_typeof(data) = 'object'),
  created_at      timestamptz not null default now_ms()
);

-- One event for one webhook: its attempts so far and what the next one is.
create table webhook_deliveries (
  id               uuid primary key default gen_random_uuid(),
  seq              bigint generated always as identity,
  webhook_id       uuid not null references webhooks on delete cascade,
  event_id         uuid not null references webhook_events on delete cascade,
  event            text not null,
  status           text not null default 'pending' check (status in ('pending', 'delivered', 'failed')),
  attempts         integer not null default 0 check (attempts >= 0),
  last_status_code integer,
  last_error       text check (length(last_error) <= 1400),
  next_attempt_at  timestamptz,
  delivered_at     timestamptz,
  created_at       timestamptz not null default now_ms(),
  check ((status = 'delivered') = (delivered_at is not null)),
  check (status = 'pending' or next_attempt_at is null)
);
create unique index webhook_deliveries_newest on webhook_deliveries (webhook_id, seq desc);
create index webhook_deliveries_event on webhook_deliveries (event_id);
create index webhook_deliveries_finished on webhook_deliveries (created_at) where status <> 'pending';
create index webhook_deliveries_pending on webhook_deliveries (next_attempt_at) where status = 'pending';

-- Each attempt of a delivery, as the receiver answered it (at most the first 1 KiB of an error).
create table webhook_delivery_attempts (
  delivery_id uuid not null references webhook_deliveries on delete cascade,
  attempt     integer not null check (attempt >= 1),
  started_at  timestamptz not null,
  duration_ms integer not null check (duration_ms >= 0),
  status_code integer,
  error       text check (length(error) <= 1400),
  primary key (delivery_id, attempt)
);

-- The one place events are emitted: in the transaction of the change, a delivery row and a
-- Graphile Worker job for every live webhook of the organization subscribed to the type.
-- Nothing is written when none is subscribed; a rollback takes the jobs with it.
create function emit_webhook_event(p_organization_id uuid, p_type text, p_data jsonb) returns void
language plpgsql as $$
declare
  v_event_id uuid := gen_random_uuid();
  v_delivery record;
begin
  if not exists (
    select 1 from webhooks
    where organization_id = p_organization_id and disabled_at is null and p_type = any (events)
  ) then
    return;
  end if;
  insert into webhook_events (id, organization_id, type, data)
  values (v_event_id, p_organization_id, p_type, p_data);
  for v_delivery in
    insert into webhook_deliveries (webhook_id, event_id, event, next_attempt_at)
    select id, v_event_id, p_type, now() from webhooks
    where organization_id = p_organization_id and disabled_at is null and p_type = any (events)
    returning id
  loop
    -- Only the delivery id travels in the job: no secret, no body.
    perform graphile_worker.add_job(
      'deliver_webhook', json_build_object('delivery_id', v_delivery.id),
      max_attempts => 3, job_key => 'deliver_webhook:' || v_delivery.id);
  end loop;
end $$;

-- device.bootstrapped, device.deprovisioned, device.reprovisioned, device.archived: the
-- transitions of the device row, whoever makes them. (device.activated is emitted by the
-- activation statement itself: an activation may leave a device row unchanged.) The
-- column list keeps the trigger off the check-in's heartbeat update.
create function devices_webhook_events() returns trigger
language plpgsql as $$
declare
  v_data jsonb := jsonb_build_object(
    'device_id', new.id, 'serial', new.serial, 'hostname', new.hostname, 'oe_id', new.oe_id);
begin
  if old.archived_at is null and new.archived_at is not null then
    perform emit_webhook_event(new.organization_id, 'device.archived', v_data);
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
create trigger devices_webhook_events
  after update of archived_at, deprovisioned_at, agent_secret_hash on devices
  for each row execute function devices_webhook_events();

-- order.applied, order.apply_failed, order.removed, order.remove_failed: the agent's
-- report entries (selections are the admin's own writes, not announced).
create function device_merkmal_events_webhook_events() returns trigger
language plpgsql as $$
begin
  perform emit_webhook_event(d.organization_id, 'order.' || new.type, jsonb_build_object(
    'device_id', d.id, 'serial', d.serial, 'hostname', d.hostname,
    'merkmal', new.merkmal, 'device_event_id', new.id, 'payload', new.payload))
  from devices d where d.id = new.device_id;
  return null;
end $$;
create trigger device_merkmal_events_webhook_events
  after insert on device_merkmal_events
  for each row when (new.type in ('applied', 'apply_failed', 'removed', 'remove_failed'))
  execute function device_merkmal_events_webhook_events();

-- iso_build.completed, iso_build.failed: a build's end, from the build task, the reaper of
-- dead workers or the sweep alike.
create function iso_builds_webhook_events() returns trigger
language plpgsql as $$
begin
  perform emit_webhook_event(new.organization_id, 'iso_build.' || new.status, jsonb_build_object(
    'iso_build_id', new.id, 'status', new.status, 'template_id', new.template_id,
    'enrollment_session_id', new.enrollment_session_id, 'size_bytes', new.size_bytes,
    'sha256', new.sha256, 'expires_at', new.expires_at, 'error', new.error));
  return null;
end $$;
create trigger iso_builds_webhook_events
  after update of status on iso_builds
  for each row when (old.status is distinct from new.status and new.status in ('completed', 'failed'))
  execute function iso_builds_webhook_events();

-- migrate:down
