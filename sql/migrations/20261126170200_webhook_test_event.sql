-- migrate:up
-- A test event (`webhook.test`) goes to one webhook, whatever event types it subscribed:
-- emit_webhook_event takes that webhook as an optional fourth argument, so a test is queued,
-- signed, retried and recorded exactly as every other event. It returns the event's id
-- (null when no enabled webhook takes it). Callers with three arguments are unchanged.
drop function emit_webhook_event(uuid, text, jsonb);
create function emit_webhook_event(
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
    returning id
  loop
    -- Only the delivery id travels in the job: no secret, no body.
    perform graphile_worker.add_job(
      'deliver_webhook', json_build_object('delivery_id', v_delivery.id),
      max_attempts => 3, job_key => 'deliver_webhook:' || v_delivery.id);
  end loop;
  return v_event_id;
end $$;

-- migrate:down
