-- migrate:up
-- Fair webhooks: each webhook's delivery jobs run in a Graphile Worker queue of their own
-- (`deliver_webhook:<webhook id>`), so at most one of its attempts is in flight and a
-- receiver that refuses, hangs or does not resolve holds one runner slot, never all of
-- them: another webhook's deliveries go past its backlog. The retries that
-- jobs/tasks/deliver_webhook.ts queues use the same queue name.
create or replace function emit_webhook_event(
  p_organization_id uuid, p_type text, p_data jsonb, p_webhook_id uuid default null
) returns uuid
language plpgsql as $$
declare
  v_event_id uuid := gen_random_uuid();
  v_delivery record;
begin
  if not exists (
    select 1 from webhooks
    where organization_id = p_organization_id and disabled_at is null
      and (case when p_webhook_id is null then p_type = any (events) else id = p_webhook_id end)
  ) then
    return null;
  end if;
  insert into webhook_events (id, organization_id, type, data)
  values (v_event_id, p_organization_id, p_type, p_data);
  for v_delivery in
    insert into webhook_deliveries (webhook_id, event_id, event, next_attempt_at)
    select id, v_event_id, p_type, now() from webhooks
    where organization_id = p_organization_id and disabled_at is null
      and (case when p_webhook_id is null then p_type = any (events) else id = p_webhook_id end)
    returning id, webhook_id
  loop
    -- Only the delivery id travels in the job: no secret, no body.
    perform graphile_worker.add_job(
      'deliver_webhook', json_build_object('delivery_id', v_delivery.id),
      queue_name => 'deliver_webhook:' || v_delivery.webhook_id,
      max_attempts => 3, job_key => 'deliver_webhook:' || v_delivery.id);
  end loop;
  return v_event_id;
end $$;

-- A webhook's `pending_deliveries` (neither delivered nor given up), counted for every read
-- of the webhook.
create index webhook_deliveries_pending_by_webhook on webhook_deliveries (webhook_id) where status = 'pending';

-- migrate:down
