\restrict dbmate

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Name: pg_trgm; Type: EXTENSION; Schema: -; Owner: -
--

CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public;


--
-- Name: EXTENSION pg_trgm; Type: COMMENT; Schema: -; Owner: -
--

COMMENT ON EXTENSION pg_trgm IS 'text similarity measurement and index searching based on trigrams';


--
-- Name: bump_override_versions(uuid[]); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.bump_override_versions(organization_ids uuid[]) RETURNS void
    LANGUAGE sql
    AS $$
    insert into override_versions (organization_id, version)
    select o.id, 1 from organizations o where o.id = any (organization_ids)
    on conflict (organization_id) do update set version = override_versions.version + 1
  $$;


--
-- Name: device_actions_inserted(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.device_actions_inserted() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
begin
  perform refresh_device_actions_open(array(
    select distinct device_id from new_rows where status in ('pending', 'delivered')));
  return null;
end $$;


--
-- Name: device_actions_updated(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.device_actions_updated() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
begin
  perform refresh_device_actions_open(array(
    select distinct n.device_id from new_rows n join old_rows o on o.id = n.id
    where (n.status in ('pending', 'delivered')) <> (o.status in ('pending', 'delivered'))));
  return null;
end $$;


--
-- Name: device_actions_webhook_events(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.device_actions_webhook_events() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
begin
  perform emit_webhook_event(new.organization_id, 'action.finished', jsonb_build_object(
    'action_id', new.id, 'device_id', new.device_id, 'type', new.type, 'status', new.status,
    'exit_code', case when new.status = 'expired' then null else new.result -> 'exit_code' end));
  return null;
end $$;


--
-- Name: device_catalog_outcomes(uuid, text, text, timestamp with time zone); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.device_catalog_outcomes(device_id uuid, backend text, workspace text, bootstrapped_at timestamp with time zone) RETURNS TABLE(merkmal text, state text, convergence text)
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
  select m.key, s.state,
         merkmal_convergence(s.state, o.changed_seq, o.reported_event, o.reported_seq, o.reported_at, bootstrapped_at)
  from blueprints b
  join merkmale m on m.key = b.merkmal and m.im_auftragskatalog
  left join workspace_merkmale wm on wm.workspace = device_catalog_outcomes.workspace and wm.merkmal = m.key
  left join device_merkmal_outcomes o on o.device_id = device_catalog_outcomes.device_id and o.merkmal = m.key
  cross join lateral (
    select coalesce(o.desired, case when wm.merkmal is null then 'absent' else 'present' end) as state
  ) s
  where b.backend = device_catalog_outcomes.backend
$$;


--
-- Name: device_fleet_devices_written(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.device_fleet_devices_written() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
declare
  changed uuid[];
begin
  if tg_op = 'INSERT' then
    changed := array(select n.id from new_rows n);
  else
    changed := array(
      select n.id from new_rows n join old_rows o on o.id = n.id
      where (n.oe_id, n.template_id, n.agent_secret_issued_at, n.deprovisioned_at, n.archived_at)
            is distinct from (o.oe_id, o.template_id, o.agent_secret_issued_at, o.deprovisioned_at, o.archived_at));
  end if;
  if cardinality(changed) > 0 then
    perform device_fleet_refresh(changed);
    perform device_heartbeats_write(changed);
  end if;
  return null;
end $$;


--
-- Name: device_fleet_refresh(uuid[]); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.device_fleet_refresh(device_ids uuid[]) RETURNS void
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
begin
  -- Lock first, then read in statements of their own (as refresh_device_state_texts does):
  -- their snapshot is taken after the lock, so they see every change committed by a
  -- transaction this one waited for, and two writers of one device cannot each leave a row
  -- that lacks the other's change. The lock is the fleet row's, not the device's: writers
  -- of an org unit's or a group's selection hold the organization's lock and never lock a
  -- device, while writers at a device lock it before the organization's; a device lock
  -- here would close that circle. Nothing but these triggers locks a fleet row, and they
  -- take it last. (A device inserted by this statement has no row to lock yet: no one
  -- else can see it.)
  perform 1 from device_fleet where device_id = any(device_ids) order by device_id for update;
  delete from device_fleet f
  where f.device_id = any(device_ids)
    and not exists (select 1 from devices d where d.id = f.device_id and d.archived_at is null);
  perform device_fleet_write(device_ids);
end $$;


--
-- Name: device_fleet_reported(uuid[]); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.device_fleet_reported(device_ids uuid[]) RETURNS void
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
begin
  update device_fleet f set catalog = n.catalog, convergence = n.convergence
  from (
    select r.device_id,
           string_agg(i.merkmal || ':' || i.state || ':' || i.convergence, ' ' order by i.merkmal) as catalog,
           coalesce(worst_convergence(i.convergence), 'converged') as convergence
    from device_fleet r
    cross join lateral string_to_table(r.catalog, ' ') item
    cross join lateral (select split_part(item, ':', 1) as merkmal, split_part(item, ':', 2) as state) p
    -- A probe per item, not a join: the planner cannot know an item list is short.
    cross join lateral (
      select p.merkmal, p.state, coalesce(
               (select merkmal_convergence(p.state, o.changed_seq, o.reported_event, o.reported_seq, o.reported_at,
                                           r.issued_at)
                from device_merkmal_outcomes o where o.device_id = r.device_id and o.merkmal = p.merkmal),
               merkmal_convergence(p.state, null, null, null, null, r.issued_at)) as convergence
    ) i
    where r.device_id = any(device_ids) and r.catalog <> ''
    group by r.device_id
  ) n
  where f.device_id = n.device_id and (f.catalog, f.convergence) is distinct from (n.catalog, n.convergence);
end $$;


--
-- Name: device_fleet_write(uuid[]); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.device_fleet_write(device_ids uuid[]) RETURNS void
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
begin
  insert into device_fleet as f (device_id, organization_id, oe_id, bucket, issued_at, convergence, catalog)
  select d.id, d.organization_id, d.oe_id, b.bucket,
         case when b.bucket = 'reporting' then d.agent_secret_issued_at end,
         case when b.bucket = 'reporting' then coalesce(c.worst, 'converged') end,
         coalesce(c.catalog, '')
  from devices d
  -- The effective template: `effective_template_id` gives the default for no assignment.
  left join templates t on t.id = coalesce(d.template_id, (select effective_template_id(null)))
  -- The status without its clock: with no check-in time and no limit, `device_status` says
  -- `active` for every device with an agent that reports (active or stale).
  cross join lateral (
    select device_status(d.archived_at, d.deprovisioned_at, d.agent_secret_issued_at, null, null) as status
  ) st
  cross join lateral (select case st.status when 'active' then 'reporting' else st.status end as bucket) b
  left join lateral (
    select worst_convergence(o.convergence) as worst,
           string_agg(o.merkmal || ':' || o.state || ':' || o.convergence, ' ' order by o.merkmal) as catalog
    from device_catalog_outcomes(d.id, t.backend, t.workspace, d.agent_secret_issued_at) o
    where b.bucket = 'reporting'
  ) c on true
  where d.id = any(device_ids) and d.archived_at is null
  on conflict (device_id) do update
    set oe_id = excluded.oe_id, bucket = excluded.bucket, issued_at = excluded.issued_at,
        convergence = excluded.convergence, catalog = excluded.catalog
    where (f.oe_id, f.bucket, f.issued_at, f.convergence, f.catalog)
          is distinct from (excluded.oe_id, excluded.bucket, excluded.issued_at, excluded.convergence, excluded.catalog);
end $$;


--
-- Name: device_heartbeats_write(uuid[]); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.device_heartbeats_write(device_ids uuid[]) RETURNS void
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
begin
  insert into device_heartbeats (device_id, organization_id)
  select d.id, d.organization_id from devices d where d.id = any(device_ids) order by d.id
  on conflict (device_id) do nothing;
  update device_heartbeats h
     set organization_id = n.organization_id, issued_at = n.issued_at
    from (
      select d.id, d.organization_id,
             case when device_status(d.archived_at, d.deprovisioned_at, d.agent_secret_issued_at, null, null)
                       = 'active' then d.agent_secret_issued_at end as issued_at
      from devices d where d.id = any(device_ids)
      order by d.id
    ) n
   where h.device_id = n.id and (h.organization_id, h.issued_at) is distinct from (n.organization_id, n.issued_at);
end $$;


--
-- Name: device_inventories_set_copied(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.device_inventories_set_copied() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
begin
  update devices d set inventory_set_id = n.package_set_id, inventory_release = n.release
    from new_rows n
   where d.id = n.device_id
     and (d.inventory_set_id, d.inventory_release) is distinct from (n.package_set_id, n.release);
  return null;
end $$;


--
-- Name: device_merkmal_events_webhook_events(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.device_merkmal_events_webhook_events() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
begin
  perform emit_webhook_event(d.organization_id, 'order.' || new.type, jsonb_build_object(
    'device_id', d.id, 'serial', d.serial, 'hostname', d.hostname,
    'merkmal', new.merkmal, 'device_event_id', new.id, 'payload', new.payload))
  from devices d where d.id = new.device_id;
  return null;
end $$;


--
-- Name: device_merkmal_outcomes_record(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.device_merkmal_outcomes_record() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
declare
  touched uuid[];
  changes boolean;
  reports boolean;
  -- A report of one device: its fleet row, the merkmale its report changed with the
  -- convergence each would have as present and as absent, and the row's new texts.
  fleet_catalog text;
  fleet_convergence text;
  fleet_issued_at timestamptz;
  reported text[];
  if_present text[];
  if_absent text[];
  item text;
  item_merkmal text;
  item_state text;
  item_convergence text;
  found_at int;
  new_catalog text := '';
  new_convergence text;
begin
  -- One look at the statement's events decides which of the statements below it needs: a
  -- report has no changes, a selection no reports.
  select array_agg(distinct n.device_id order by n.device_id), bool_or(n.type in ('selected', 'deselected')),
         bool_or(n.type in ('applied', 'apply_failed', 'removed', 'remove_failed'))
  into touched, changes, reports
  from inserted n
  where n.type in ('selected', 'deselected', 'applied', 'apply_failed', 'removed', 'remove_failed');
  if touched is null then return null; end if;

  if cardinality(touched) = 1 and not changes then
    select f.catalog, f.convergence, f.issued_at into fleet_catalog, fleet_convergence, fleet_issued_at
    from device_fleet f where f.device_id = touched[1] for update;
    with up as (
      insert into device_merkmal_outcomes as o
        (device_id, merkmal, reported_event, reported_seq, reported_at, reported_detail)
      select distinct on (n.merkmal)
             n.device_id, n.merkmal, n.type, n.seq, n.created_at, n.payload -> 'detail'
      from inserted n
      where n.type in ('applied', 'apply_failed', 'removed', 'remove_failed')
      order by n.merkmal, n.seq desc
      on conflict (device_id, merkmal) do update
        set reported_event = excluded.reported_event, reported_seq = excluded.reported_seq,
            reported_at = excluded.reported_at, reported_detail = excluded.reported_detail
        where o.reported_seq is null or o.reported_seq < excluded.reported_seq
      returning o.merkmal,
        merkmal_convergence('present', o.changed_seq, o.reported_event, o.reported_seq, o.reported_at,
                            fleet_issued_at) as present,
        merkmal_convergence('absent', o.changed_seq, o.reported_event, o.reported_seq, o.reported_at,
                            fleet_issued_at) as absent
    )
    select array_agg(up.merkmal), array_agg(up.present), array_agg(up.absent)
    into reported, if_present, if_absent
    from up;
    -- No fleet row (an archived device), an empty catalog, or no outcome that changed.
    if fleet_catalog is null or fleet_catalog = '' or reported is null then return null; end if;
    -- `merkmal:state:convergence` items, in the text's order (by Merkmal), as device_fleet_write makes them.
    foreach item in array string_to_array(fleet_catalog, ' ') loop
      item_merkmal := split_part(item, ':', 1);
      item_state := split_part(item, ':', 2);
      found_at := array_position(reported, item_merkmal);
      item_convergence := case when found_at is null then split_part(item, ':', 3)
                               when item_state = 'present' then if_present[found_at]
                               else if_absent[found_at] end;
      new_catalog := case when new_catalog = '' then '' else new_catalog || ' ' end
                     || item_merkmal || ':' || item_state || ':' || item_convergence;
      new_convergence := worse_convergence(new_convergence, item_convergence);
    end loop;
    if (new_catalog, new_convergence) is distinct from (fleet_catalog, fleet_convergence) then
      update device_fleet f set catalog = new_catalog, convergence = new_convergence
      where f.device_id = touched[1];
    end if;
    return null;
  end if;

  perform 1 from device_fleet where device_id = any(touched) order by device_id for update;

  if changes then
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
  end if;

  if reports then
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
  end if;

  if changes then
    perform device_fleet_write(touched);
  else
    perform device_fleet_reported(touched);
  end if;
  return null;
end
$$;


--
-- Name: device_open_actions(uuid); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.device_open_actions(p_device_id uuid) RETURNS text
    LANGUAGE sql STABLE
    AS $$
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


--
-- Name: device_state_rows_changed(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.device_state_rows_changed() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
begin
  perform refresh_device_state_texts(array(select distinct device_id from changed_rows));
  return null;
end $$;


--
-- Name: device_state_rows_updated(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.device_state_rows_updated() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
begin
  perform refresh_device_state_texts(array(
    select device_id from old_rows union select device_id from new_rows));
  return null;
end $$;


--
-- Name: device_status(timestamp with time zone, timestamp with time zone, timestamp with time zone, timestamp with time zone, interval); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.device_status(archived_at timestamp with time zone, deprovisioned_at timestamp with time zone, secret_issued_at timestamp with time zone, last_checkin timestamp with time zone, stale_after interval) RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
  select case
    when archived_at is not null then 'archived'
    when deprovisioned_at is not null then 'deprovisioned'
    when secret_issued_at is null then 'enrolled'
    when greatest(last_checkin, secret_issued_at) < now() - stale_after then 'stale'
    else 'active'
  end
$$;


--
-- Name: devices_cancel_actions(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.devices_cancel_actions() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
begin
  update device_actions set status = 'canceled', finished_at = now_ms()
  where device_id = new.id and status in ('pending', 'delivered');
  return null;
end $$;


--
-- Name: devices_webhook_events(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.devices_webhook_events() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
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


--
-- Name: effective_template_id(uuid); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.effective_template_id(assigned uuid) RETURNS uuid
    LANGUAGE sql STABLE
    AS $$
    select coalesce(assigned, (
      select t.id from templates t join backends b on b.key = t.backend
      where b.preferred and t.is_default))
  $$;


--
-- Name: emit_webhook_event(uuid, text, jsonb, uuid); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.emit_webhook_event(p_organization_id uuid, p_type text, p_data jsonb, p_webhook_id uuid DEFAULT NULL::uuid) RETURNS uuid
    LANGUAGE plpgsql
    AS $$
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


--
-- Name: fleet_name_key(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.fleet_name_key(text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN lower(($1 COLLATE "und-x-icu"));


--
-- Name: group_merkmale_changed(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.group_merkmale_changed() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
begin
  perform bump_override_versions(array(
    select g.organization_id from groups g
    where g.id in (select group_id from changed_rows)));
  return null;
end $$;


--
-- Name: iso_builds_webhook_events(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.iso_builds_webhook_events() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
begin
  perform emit_webhook_event(new.organization_id, 'iso_build.' || new.status, jsonb_build_object(
    'iso_build_id', new.id, 'status', new.status, 'template_id', new.template_id,
    'enrollment_session_id', new.enrollment_session_id, 'size_bytes', new.size_bytes,
    'sha256', new.sha256, 'expires_at', new.expires_at, 'error', new.error));
  return null;
end $$;


--
-- Name: merkmal_convergence(text, bigint, text, bigint, timestamp with time zone, timestamp with time zone); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.merkmal_convergence(state text, changed_seq bigint, reported_event text, reported_seq bigint, reported_at timestamp with time zone, bootstrapped_at timestamp with time zone) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
  select case
    when reported_event is null then 'pending'
    when changed_seq is not null and reported_seq < changed_seq then 'pending'
    when changed_seq is null and (bootstrapped_at is null or reported_at < bootstrapped_at) then 'pending'
    when reported_event in ('apply_failed', 'remove_failed') then 'failed'
    when (reported_event = 'applied' and state = 'present') or (reported_event = 'removed' and state = 'absent') then 'converged'
    else 'pending'
  end
$$;


--
-- Name: now_ms(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.now_ms() RETURNS timestamp with time zone
    LANGUAGE sql STABLE
    AS $$ select date_trunc('milliseconds', now()) $$;


--
-- Name: org_unit_merkmale_changed(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.org_unit_merkmale_changed() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
begin
  perform bump_override_versions(array(
    select ou.organization_id from org_units ou
    where ou.id in (select org_unit_id from changed_rows)));
  return null;
end $$;


--
-- Name: organization_rows_changed(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.organization_rows_changed() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
begin
  perform bump_override_versions(array(select organization_id from changed_rows));
  return null;
end $$;


--
-- Name: refresh_device_actions_open(uuid[]); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.refresh_device_actions_open(device_ids uuid[]) RETURNS void
    LANGUAGE plpgsql
    AS $$
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


--
-- Name: refresh_device_rollouts_text(uuid[]); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.refresh_device_rollouts_text(device_ids uuid[]) RETURNS void
    LANGUAGE plpgsql
    AS $$
begin
  -- As refresh_device_state_texts: lock first, then read in a snapshot taken after the lock.
  perform 1 from devices where id in (select unnest(device_ids)) order by id for no key update;
  update devices d set rollouts_text = array_to_string(array(
      select rd.rollout_id from rollout_devices rd where rd.device_id = d.id and rd.applied order by rd.rollout_id), ',')
  where d.id in (select unnest(device_ids));
end $$;


--
-- Name: refresh_device_state_texts(uuid[]); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.refresh_device_state_texts(device_ids uuid[]) RETURNS void
    LANGUAGE plpgsql
    AS $$
begin
  -- Lock first, then read in a statement of its own: its snapshot is taken after the lock,
  -- so it sees every membership or override committed by a transaction this one waited
  -- for. Two concurrent changes of one device cannot each write a text lacking the other's.
  perform 1 from devices where id in (select unnest(device_ids)) order by id for no key update;
  update devices d set
    group_ids_text = array_to_string(array(
      select gm.group_id from group_members gm where gm.device_id = d.id order by gm.group_id), ','),
    own_overrides_text = (
      select coalesce(json_agg(json_build_object('merkmal', o.merkmal, 'state', o.state, 'optionen', o.optionen)
                               order by o.merkmal), '[]')
      from device_merkmale o where o.device_id = d.id)::text
  where d.id in (select unnest(device_ids));
end $$;


--
-- Name: rollout_devices_deleted(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.rollout_devices_deleted() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
begin
  perform refresh_device_rollouts_text(array(select distinct device_id from changed_rows where applied));
  return null;
end $$;


--
-- Name: rollout_devices_inserted(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.rollout_devices_inserted() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
begin
  perform refresh_device_rollouts_text(array(select distinct device_id from changed_rows where applied));
  return null;
end $$;


--
-- Name: rollout_devices_updated(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.rollout_devices_updated() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
begin
  perform refresh_device_rollouts_text(array(
    select o.device_id from old_rows o join new_rows n using (rollout_id, device_id) where o.applied <> n.applied));
  return null;
end $$;


--
-- Name: urgency_rank(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.urgency_rank(p_urgency text) RETURNS smallint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ select (array_position(array['critical', 'high', 'medium', 'low', 'unknown', 'unimportant'], p_urgency) - 1)::smallint $$;


--
-- Name: worse_convergence(text, text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.worse_convergence(a text, b text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
  select case
    when a = 'failed' or b = 'failed' then 'failed'
    when a = 'pending' or b = 'pending' then 'pending'
    else coalesce(a, b)
  end
$$;


--
-- Name: array_cat_agg(anycompatiblearray); Type: AGGREGATE; Schema: public; Owner: -
--

CREATE AGGREGATE public.array_cat_agg(anycompatiblearray) (
    SFUNC = array_cat,
    STYPE = anycompatiblearray
);


--
-- Name: worst_convergence(text); Type: AGGREGATE; Schema: public; Owner: -
--

CREATE AGGREGATE public.worst_convergence(text) (
    SFUNC = public.worse_convergence,
    STYPE = text,
    PARALLEL = safe
);


SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: activation_codes; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.activation_codes (
    organization_id uuid NOT NULL,
    code text NOT NULL,
    created_at timestamp with time zone DEFAULT public.now_ms() NOT NULL,
    CONSTRAINT activation_codes_code_check CHECK ((code ~ '^[0-9A-HJKMNP-TV-Z]{5}(-[0-9A-HJKMNP-TV-Z]{5}){3}$'::text))
);


--
-- Name: activation_failure_counts; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.activation_failure_counts (
    client_key text NOT NULL,
    failures timestamp with time zone[] NOT NULL
);


--
-- Name: api_keys; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.api_keys (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    organization_id uuid NOT NULL,
    name text NOT NULL,
    role text NOT NULL,
    prefix text NOT NULL,
    key_hash bytea NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone,
    last_used_at timestamp with time zone,
    revoked_at timestamp with time zone,
    CONSTRAINT api_keys_key_hash_check CHECK ((octet_length(key_hash) = 32)),
    CONSTRAINT api_keys_name_check CHECK (((length(name) >= 1) AND (length(name) <= 200))),
    CONSTRAINT api_keys_role_check CHECK ((role = ANY (ARRAY['admin'::text, 'viewer'::text])))
);


--
-- Name: audit_events; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.audit_events (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    seq bigint NOT NULL,
    organization_id uuid NOT NULL,
    actor jsonb NOT NULL,
    action text NOT NULL,
    target_type text NOT NULL,
    target_id uuid,
    request_id text NOT NULL,
    details jsonb DEFAULT '{}'::jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT audit_events_actor_check CHECK ((jsonb_typeof(actor) = 'object'::text)),
    CONSTRAINT audit_events_details_check CHECK ((jsonb_typeof(details) = 'object'::text))
);


--
-- Name: audit_events_seq_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.audit_events ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.audit_events_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: backends; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.backends (
    key text NOT NULL,
    name text NOT NULL,
    distribution text NOT NULL,
    preferred boolean DEFAULT false NOT NULL
);


--
-- Name: blueprints; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.blueprints (
    merkmal text NOT NULL,
    backend text NOT NULL,
    ansible_role text NOT NULL
);


--
-- Name: bootstrap_tokens; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.bootstrap_tokens (
    device_id uuid NOT NULL,
    token_hash bytea NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    created_at timestamp with time zone DEFAULT public.now_ms() NOT NULL,
    CONSTRAINT bootstrap_tokens_token_hash_check CHECK ((octet_length(token_hash) = 32))
);


--
-- Name: device_actions; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.device_actions (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    organization_id uuid NOT NULL,
    device_id uuid NOT NULL,
    type text NOT NULL,
    parameters jsonb NOT NULL,
    status text DEFAULT 'pending'::text NOT NULL,
    created_by jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT public.now_ms() NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    delivered_at timestamp with time zone,
    started_at timestamp with time zone,
    finished_at timestamp with time zone,
    result jsonb,
    rollout_id uuid,
    CONSTRAINT device_actions_check CHECK (((status = ANY (ARRAY['running'::text, 'succeeded'::text, 'failed'::text])) = (started_at IS NOT NULL))),
    CONSTRAINT device_actions_check1 CHECK (((status = ANY (ARRAY['succeeded'::text, 'failed'::text])) = (result IS NOT NULL))),
    CONSTRAINT device_actions_check2 CHECK (((status = ANY (ARRAY['succeeded'::text, 'failed'::text, 'expired'::text, 'canceled'::text])) = (finished_at IS NOT NULL))),
    CONSTRAINT device_actions_created_by_check CHECK ((jsonb_typeof(created_by) = 'object'::text)),
    CONSTRAINT device_actions_parameters_check CHECK ((jsonb_typeof(parameters) = 'object'::text)),
    CONSTRAINT device_actions_result_check CHECK (((result IS NULL) OR (jsonb_typeof(result) = 'object'::text))),
    CONSTRAINT device_actions_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'delivered'::text, 'running'::text, 'succeeded'::text, 'failed'::text, 'expired'::text, 'canceled'::text]))),
    CONSTRAINT device_actions_type_check CHECK ((type = ANY (ARRAY['reboot'::text, 'apply_now'::text, 'apply_updates'::text, 'script'::text])))
);


--
-- Name: device_bulk_jobs; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.device_bulk_jobs (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    organization_id uuid NOT NULL,
    action text NOT NULL,
    target text NOT NULL,
    target_name text NOT NULL,
    filter jsonb NOT NULL,
    caller jsonb NOT NULL,
    request_id text NOT NULL,
    device_ids uuid[],
    total integer NOT NULL,
    done integer DEFAULT 0 NOT NULL,
    changed integer DEFAULT 0 NOT NULL,
    refused integer DEFAULT 0 NOT NULL,
    refusals jsonb DEFAULT '[]'::jsonb NOT NULL,
    status text DEFAULT 'queued'::text NOT NULL,
    error text,
    created_at timestamp with time zone DEFAULT public.now_ms() NOT NULL,
    finished_at timestamp with time zone,
    CONSTRAINT device_bulk_jobs_action_check CHECK ((action = ANY (ARRAY['move'::text, 'group-add'::text, 'group-remove'::text, 'select'::text, 'deselect'::text, 'unset'::text]))),
    CONSTRAINT device_bulk_jobs_caller_check CHECK ((jsonb_typeof(caller) = 'object'::text)),
    CONSTRAINT device_bulk_jobs_changed_check CHECK ((changed >= 0)),
    CONSTRAINT device_bulk_jobs_check1 CHECK (((done >= 0) AND (done <= total))),
    CONSTRAINT device_bulk_jobs_check2 CHECK (((refused >= 0) AND ((changed + refused) = done))),
    CONSTRAINT device_bulk_jobs_check3 CHECK (((status = ANY (ARRAY['completed'::text, 'failed'::text])) = (finished_at IS NOT NULL))),
    CONSTRAINT device_bulk_jobs_check4 CHECK (((status <> 'completed'::text) OR (done = total))),
    CONSTRAINT device_bulk_jobs_devices_check CHECK (
CASE
    WHEN (device_ids IS NULL) THEN ((status = ANY (ARRAY['queued'::text, 'failed'::text])) AND (done = 0))
    ELSE (total = cardinality(device_ids))
END),
    CONSTRAINT device_bulk_jobs_error_check CHECK ((length(error) <= 1000)),
    CONSTRAINT device_bulk_jobs_filter_check CHECK ((jsonb_typeof(filter) = 'object'::text)),
    CONSTRAINT device_bulk_jobs_refusals_check CHECK ((jsonb_typeof(refusals) = 'array'::text)),
    CONSTRAINT device_bulk_jobs_status_check CHECK ((status = ANY (ARRAY['queued'::text, 'running'::text, 'completed'::text, 'failed'::text]))),
    CONSTRAINT device_bulk_jobs_target_check CHECK (((length(target) >= 1) AND (length(target) <= 200))),
    CONSTRAINT device_bulk_jobs_target_name_check CHECK ((length(target_name) <= 400))
);


--
-- Name: device_fleet; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.device_fleet (
    device_id uuid NOT NULL,
    organization_id uuid NOT NULL,
    oe_id uuid NOT NULL,
    bucket text NOT NULL,
    issued_at timestamp with time zone,
    convergence text,
    catalog text NOT NULL,
    CONSTRAINT device_fleet_bucket_check CHECK ((bucket = ANY (ARRAY['enrolled'::text, 'deprovisioned'::text, 'reporting'::text]))),
    CONSTRAINT device_fleet_convergence_check CHECK ((convergence = ANY (ARRAY['converged'::text, 'pending'::text, 'failed'::text])))
)
WITH (fillfactor='80');


--
-- Name: device_hardware; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.device_hardware (
    device_id uuid NOT NULL,
    hardware jsonb NOT NULL,
    reported_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT device_hardware_hardware_check CHECK ((jsonb_typeof(hardware) = 'object'::text))
);


--
-- Name: device_heartbeats; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.device_heartbeats (
    device_id uuid NOT NULL,
    at timestamp with time zone,
    organization_id uuid NOT NULL,
    issued_at timestamp with time zone
)
WITH (fillfactor='80', parallel_workers='0');


--
-- Name: device_inventories; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.device_inventories (
    device_id uuid NOT NULL,
    organization_id uuid NOT NULL,
    package_set_id bigint NOT NULL,
    os_id text NOT NULL,
    os_version_id text NOT NULL,
    os_codename text NOT NULL,
    release text NOT NULL,
    kernel text NOT NULL,
    pending jsonb DEFAULT '[]'::jsonb NOT NULL,
    security_pending_count integer DEFAULT 0 NOT NULL,
    reboot_required boolean DEFAULT false NOT NULL,
    luks jsonb,
    inventory_at timestamp with time zone DEFAULT public.now_ms() NOT NULL,
    CONSTRAINT device_inventories_luks_check CHECK (((luks IS NULL) OR (jsonb_typeof(luks) = 'array'::text))),
    CONSTRAINT device_inventories_pending_check CHECK ((jsonb_typeof(pending) = 'array'::text))
);


--
-- Name: device_merkmal_events; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.device_merkmal_events (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    device_id uuid NOT NULL,
    merkmal text NOT NULL,
    type text NOT NULL,
    payload jsonb DEFAULT '{}'::jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT public.now_ms() NOT NULL,
    seq bigint NOT NULL,
    CONSTRAINT device_merkmal_events_payload_check CHECK ((jsonb_typeof(payload) = 'object'::text)),
    CONSTRAINT device_merkmal_events_type_check CHECK ((type = ANY (ARRAY['selected'::text, 'deselected'::text, 'applied'::text, 'apply_failed'::text, 'removed'::text, 'remove_failed'::text])))
);


--
-- Name: device_merkmal_events_seq_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.device_merkmal_events ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.device_merkmal_events_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: device_merkmal_outcomes; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.device_merkmal_outcomes (
    device_id uuid NOT NULL,
    merkmal text NOT NULL,
    desired text,
    changed_seq bigint,
    changed_at timestamp with time zone,
    reported_event text,
    reported_seq bigint,
    reported_at timestamp with time zone,
    reported_detail jsonb,
    CONSTRAINT device_merkmal_outcomes_check CHECK ((((desired IS NULL) = (changed_seq IS NULL)) AND ((changed_seq IS NULL) = (changed_at IS NULL)))),
    CONSTRAINT device_merkmal_outcomes_check1 CHECK ((((reported_event IS NULL) = (reported_seq IS NULL)) AND ((reported_seq IS NULL) = (reported_at IS NULL)))),
    CONSTRAINT device_merkmal_outcomes_desired_check CHECK ((desired = ANY (ARRAY['present'::text, 'absent'::text]))),
    CONSTRAINT device_merkmal_outcomes_reported_event_check CHECK ((reported_event = ANY (ARRAY['applied'::text, 'apply_failed'::text, 'removed'::text, 'remove_failed'::text])))
)
WITH (fillfactor='80');


--
-- Name: device_merkmale; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.device_merkmale (
    device_id uuid NOT NULL,
    merkmal text NOT NULL,
    state text NOT NULL,
    optionen jsonb DEFAULT '{}'::jsonb NOT NULL,
    updated_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    CONSTRAINT device_merkmale_optionen_check CHECK ((jsonb_typeof(optionen) = 'object'::text)),
    CONSTRAINT device_merkmale_state_check CHECK ((state = ANY (ARRAY['present'::text, 'absent'::text])))
);


--
-- Name: device_stale_marks; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.device_stale_marks (
    device_id uuid NOT NULL,
    silent_since timestamp with time zone NOT NULL,
    marked_at timestamp with time zone DEFAULT public.now_ms() NOT NULL
);


--
-- Name: devices; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.devices (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    organization_id uuid NOT NULL,
    serial text NOT NULL,
    hostname text,
    oe_id uuid NOT NULL,
    template_id uuid,
    enrollment_session_id uuid,
    deprovisioned_at timestamp with time zone,
    archived_at timestamp with time zone,
    agent_secret_hash bytea,
    agent_secret_issued_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT public.now_ms() NOT NULL,
    group_ids_text text DEFAULT ''::text NOT NULL,
    own_overrides_text text DEFAULT '[]'::text NOT NULL,
    rollouts_text text DEFAULT ''::text NOT NULL,
    agent_version text,
    inventory_hash bytea,
    inventory_set_id bigint,
    inventory_release text,
    actions_open boolean DEFAULT false NOT NULL,
    CONSTRAINT devices_agent_secret_hash_check CHECK ((octet_length(agent_secret_hash) = 32)),
    CONSTRAINT devices_agent_version_check CHECK ((length(agent_version) <= 100)),
    CONSTRAINT devices_check CHECK (((agent_secret_hash IS NULL) = (agent_secret_issued_at IS NULL))),
    CONSTRAINT devices_hostname_check CHECK (((length(hostname) >= 1) AND (length(hostname) <= 253))),
    CONSTRAINT devices_inventory_hash_check CHECK ((octet_length(inventory_hash) = 32)),
    CONSTRAINT devices_serial_check CHECK (((length(serial) >= 1) AND (length(serial) <= 128)))
);


--
-- Name: templates; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.templates (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    name text NOT NULL,
    backend text NOT NULL,
    workspace text NOT NULL,
    partitioning jsonb NOT NULL,
    installation jsonb DEFAULT '{}'::jsonb NOT NULL,
    is_default boolean DEFAULT false NOT NULL,
    created_at timestamp with time zone DEFAULT public.now_ms() NOT NULL,
    CONSTRAINT templates_installation_check CHECK ((jsonb_typeof(installation) = 'object'::text)),
    CONSTRAINT templates_partitioning_encryption CHECK (((jsonb_typeof(partitioning) <> 'object'::text) OR
CASE
    WHEN ((partitioning ->> 'scheme'::text) = 'luks-lvm'::text) THEN COALESCE(((((partitioning -> 'encryption'::text) ->> 'type'::text) = 'luks2'::text) AND (((partitioning -> 'encryption'::text) ->> 'unlock'::text) = ANY (ARRAY['tpm2'::text, 'passphrase'::text]))), false)
    ELSE COALESCE(((partitioning -> 'encryption'::text) = 'null'::jsonb), false)
END)),
    CONSTRAINT templates_partitioning_object CHECK (((jsonb_typeof(partitioning) = 'object'::text) AND (jsonb_typeof((partitioning -> 'scheme'::text)) = 'string'::text) AND (jsonb_typeof((partitioning -> 'root_filesystem'::text)) = 'string'::text)))
);


--
-- Name: device_templates; Type: VIEW; Schema: public; Owner: -
--

CREATE VIEW public.device_templates AS
 SELECT d.id AS device_id,
    t.id AS template_id,
    t.backend,
    t.workspace
   FROM (public.devices d
     JOIN public.templates t ON ((t.id = public.effective_template_id(d.template_id))));


--
-- Name: disk_keys; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.disk_keys (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    organization_id uuid NOT NULL,
    device_id uuid NOT NULL,
    device_path text NOT NULL,
    luks_uuid text NOT NULL,
    keyslot integer NOT NULL,
    key_sealed jsonb NOT NULL,
    status text DEFAULT 'escrowed'::text NOT NULL,
    escrowed_at timestamp with time zone DEFAULT public.now_ms() NOT NULL,
    verified_at timestamp with time zone,
    revealed_at timestamp with time zone,
    rotated_at timestamp with time zone,
    replaced_by uuid,
    CONSTRAINT disk_keys_check CHECK (((status = 'rotated'::text) = (rotated_at IS NOT NULL))),
    CONSTRAINT disk_keys_device_path_check CHECK (((length(device_path) >= 1) AND (length(device_path) <= 256))),
    CONSTRAINT disk_keys_key_sealed_check CHECK ((jsonb_typeof(key_sealed) = 'object'::text)),
    CONSTRAINT disk_keys_keyslot_check CHECK (((keyslot >= 0) AND (keyslot <= 31))),
    CONSTRAINT disk_keys_luks_uuid_check CHECK ((luks_uuid ~ '^[0-9a-f-]{1,64}$'::text)),
    CONSTRAINT disk_keys_status_check CHECK ((status = ANY (ARRAY['escrowed'::text, 'verified'::text, 'missing'::text, 'rotated'::text])))
);


--
-- Name: enrollment_sessions; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.enrollment_sessions (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    organization_id uuid NOT NULL,
    template_id uuid NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    max_devices integer NOT NULL,
    devices_used integer DEFAULT 0 NOT NULL,
    revoked_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT public.now_ms() NOT NULL,
    CONSTRAINT enrollment_sessions_check CHECK (((devices_used >= 0) AND (devices_used <= max_devices))),
    CONSTRAINT enrollment_sessions_max_devices_check CHECK ((max_devices >= 1))
);


--
-- Name: group_members; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.group_members (
    group_id uuid NOT NULL,
    device_id uuid NOT NULL,
    organization_id uuid NOT NULL,
    created_at timestamp with time zone DEFAULT public.now_ms() NOT NULL
);


--
-- Name: group_merkmale; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.group_merkmale (
    group_id uuid NOT NULL,
    merkmal text NOT NULL,
    state text NOT NULL,
    optionen jsonb DEFAULT '{}'::jsonb NOT NULL,
    updated_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    CONSTRAINT group_merkmale_optionen_check CHECK ((jsonb_typeof(optionen) = 'object'::text)),
    CONSTRAINT group_merkmale_state_check CHECK ((state = ANY (ARRAY['present'::text, 'absent'::text])))
);


--
-- Name: groups; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.groups (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    organization_id uuid NOT NULL,
    name text NOT NULL,
    created_at timestamp with time zone DEFAULT public.now_ms() NOT NULL,
    CONSTRAINT groups_name_check CHECK (((length(name) >= 1) AND (length(name) <= 200)))
);


--
-- Name: iso_builds; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.iso_builds (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    organization_id uuid NOT NULL,
    status text DEFAULT 'pending'::text NOT NULL,
    progress integer DEFAULT 0 NOT NULL,
    created_at timestamp with time zone DEFAULT public.now_ms() NOT NULL,
    started_at timestamp with time zone,
    finished_at timestamp with time zone,
    expires_at timestamp with time zone,
    size_bytes bigint,
    sha256 text,
    error text,
    file_name text,
    template_id uuid,
    enrollment_session_id uuid,
    development_base boolean DEFAULT false NOT NULL,
    CONSTRAINT iso_builds_check CHECK (((status <> 'completed'::text) OR ((finished_at IS NOT NULL) AND (expires_at = (finished_at + '7 days'::interval)) AND (size_bytes IS NOT NULL) AND (sha256 IS NOT NULL) AND (file_name IS NOT NULL) AND (progress = 100)))),
    CONSTRAINT iso_builds_check1 CHECK (((status = 'completed'::text) OR (expires_at IS NULL))),
    CONSTRAINT iso_builds_check2 CHECK (((enrollment_session_id IS NULL) OR (template_id IS NOT NULL))),
    CONSTRAINT iso_builds_progress_check CHECK (((progress >= 0) AND (progress <= 100))),
    CONSTRAINT iso_builds_sha256_check CHECK ((sha256 ~ '^[0-9a-f]{64}$'::text)),
    CONSTRAINT iso_builds_size_bytes_check CHECK ((size_bytes >= 0)),
    CONSTRAINT iso_builds_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'running'::text, 'completed'::text, 'failed'::text])))
);


--
-- Name: kategorien; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.kategorien (
    key text NOT NULL,
    name text NOT NULL
);


--
-- Name: merkmale; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.merkmale (
    key text NOT NULL,
    name text NOT NULL,
    kategorie text NOT NULL,
    im_auftragskatalog boolean DEFAULT false NOT NULL
);


--
-- Name: org_unit_merkmale; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.org_unit_merkmale (
    org_unit_id uuid NOT NULL,
    merkmal text NOT NULL,
    state text NOT NULL,
    optionen jsonb DEFAULT '{}'::jsonb NOT NULL,
    updated_at timestamp with time zone DEFAULT clock_timestamp() NOT NULL,
    CONSTRAINT org_unit_merkmale_optionen_check CHECK ((jsonb_typeof(optionen) = 'object'::text)),
    CONSTRAINT org_unit_merkmale_state_check CHECK ((state = ANY (ARRAY['present'::text, 'absent'::text])))
);


--
-- Name: org_units; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.org_units (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    organization_id uuid NOT NULL,
    parent_id uuid,
    name text NOT NULL,
    protected boolean DEFAULT false NOT NULL,
    created_at timestamp with time zone DEFAULT public.now_ms() NOT NULL,
    archive_stale_after_days integer,
    CONSTRAINT org_units_archive_stale_after_days_check CHECK (((archive_stale_after_days >= 1) AND (archive_stale_after_days <= 3650))),
    CONSTRAINT org_units_check CHECK (((parent_id IS NULL) OR (parent_id <> id))),
    CONSTRAINT org_units_check1 CHECK (((NOT protected) OR (parent_id IS NULL))),
    CONSTRAINT org_units_name_check CHECK (((length(name) >= 1) AND (length(name) <= 200)))
);


--
-- Name: organization_vulnerabilities; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.organization_vulnerabilities (
    organization_id uuid NOT NULL,
    cve text NOT NULL,
    urgency text NOT NULL,
    sources text[] NOT NULL,
    devices_affected integer NOT NULL,
    devices_fix_available integer NOT NULL,
    devices_no_fix integer NOT NULL,
    first_seen_at timestamp with time zone DEFAULT public.now_ms() NOT NULL,
    notified_at timestamp with time zone,
    CONSTRAINT organization_vulnerabilities_devices_affected_check CHECK ((devices_affected >= 0)),
    CONSTRAINT organization_vulnerabilities_devices_fix_available_check CHECK ((devices_fix_available >= 0)),
    CONSTRAINT organization_vulnerabilities_devices_no_fix_check CHECK ((devices_no_fix >= 0)),
    CONSTRAINT organization_vulnerabilities_urgency_check CHECK ((public.urgency_rank(urgency) IS NOT NULL))
);


--
-- Name: organizations; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.organizations (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    name text NOT NULL,
    kontakt_name text,
    adresse text,
    telefon text,
    kontakt_email text,
    notizen text,
    created_at timestamp with time zone DEFAULT public.now_ms() NOT NULL,
    CONSTRAINT organizations_name_check CHECK (((length(name) >= 1) AND (length(name) <= 200)))
);


--
-- Name: override_versions; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.override_versions (
    organization_id uuid NOT NULL,
    version bigint NOT NULL
);


--
-- Name: package_set_packages; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.package_set_packages (
    set_id bigint NOT NULL,
    name text NOT NULL,
    arch text NOT NULL,
    version text NOT NULL,
    source text NOT NULL,
    source_version text NOT NULL
);


--
-- Name: package_sets; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.package_sets (
    id bigint NOT NULL,
    content_hash bytea NOT NULL,
    packages_count integer NOT NULL,
    created_at timestamp with time zone DEFAULT public.now_ms() NOT NULL,
    CONSTRAINT package_sets_content_hash_check CHECK ((octet_length(content_hash) = 32)),
    CONSTRAINT package_sets_packages_count_check CHECK ((packages_count >= 0))
);


--
-- Name: package_sets_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.package_sets ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.package_sets_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: portal_sessions; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.portal_sessions (
    token_hash bytea NOT NULL,
    csrf_token text NOT NULL,
    api_key_id uuid,
    operator_token_hash bytea,
    organization_id uuid,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    CONSTRAINT portal_sessions_check CHECK (((api_key_id IS NULL) <> (operator_token_hash IS NULL))),
    CONSTRAINT portal_sessions_check1 CHECK (((api_key_id IS NULL) OR (organization_id IS NOT NULL))),
    CONSTRAINT portal_sessions_csrf_token_check CHECK ((length(csrf_token) >= 32)),
    CONSTRAINT portal_sessions_operator_token_hash_check CHECK ((octet_length(operator_token_hash) = 32)),
    CONSTRAINT portal_sessions_token_hash_check CHECK ((octet_length(token_hash) = 32))
);


--
-- Name: rollout_devices; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.rollout_devices (
    rollout_id uuid NOT NULL,
    device_id uuid NOT NULL,
    ring smallint NOT NULL,
    applied boolean DEFAULT false NOT NULL
);


--
-- Name: rollout_rings; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.rollout_rings (
    rollout_id uuid NOT NULL,
    ring smallint NOT NULL,
    percent smallint NOT NULL,
    devices integer NOT NULL,
    opened_at timestamp with time zone,
    accepted_failures integer DEFAULT 0 NOT NULL
);


--
-- Name: rollouts; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.rollouts (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    organization_id uuid NOT NULL,
    scope text NOT NULL,
    scope_id uuid NOT NULL,
    merkmal text,
    action text,
    optionen jsonb DEFAULT '{}'::jsonb,
    rings smallint[] NOT NULL,
    max_failure_ratio double precision NOT NULL,
    min_reported_ratio double precision NOT NULL,
    soak_seconds integer NOT NULL,
    status text DEFAULT 'running'::text NOT NULL,
    paused_reason text,
    current_ring smallint DEFAULT 0 NOT NULL,
    created_by jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    completed_at timestamp with time zone,
    device_action jsonb,
    CONSTRAINT rollouts_action_check CHECK ((action = ANY (ARRAY['select'::text, 'deselect'::text, 'unset'::text]))),
    CONSTRAINT rollouts_change_or_action CHECK (((device_action IS NULL) = ((merkmal IS NOT NULL) AND (action IS NOT NULL) AND (optionen IS NOT NULL)))),
    CONSTRAINT rollouts_check CHECK (((status = 'paused'::text) = (paused_reason IS NOT NULL))),
    CONSTRAINT rollouts_device_action_check CHECK (((device_action IS NULL) OR (jsonb_typeof(device_action) = 'object'::text))),
    CONSTRAINT rollouts_max_failure_ratio_check CHECK (((max_failure_ratio >= (0)::double precision) AND (max_failure_ratio <= (1)::double precision))),
    CONSTRAINT rollouts_min_reported_ratio_check CHECK (((min_reported_ratio >= (0)::double precision) AND (min_reported_ratio <= (1)::double precision))),
    CONSTRAINT rollouts_paused_reason_check CHECK ((paused_reason = ANY (ARRAY['failure_ratio'::text, 'manual'::text]))),
    CONSTRAINT rollouts_rings_check CHECK ((((cardinality(rings) >= 1) AND (cardinality(rings) <= 10)) AND (rings[cardinality(rings)] = 100))),
    CONSTRAINT rollouts_scope_check CHECK ((scope = ANY (ARRAY['org_unit'::text, 'group'::text]))),
    CONSTRAINT rollouts_soak_seconds_check CHECK (((soak_seconds >= 0) AND (soak_seconds <= 604800))),
    CONSTRAINT rollouts_status_check CHECK ((status = ANY (ARRAY['running'::text, 'paused'::text, 'completed'::text, 'aborted'::text])))
);


--
-- Name: schema_migrations; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.schema_migrations (
    version character varying(128) NOT NULL
);


--
-- Name: vulnerability_entries; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.vulnerability_entries (
    feed text NOT NULL,
    release text NOT NULL,
    source text NOT NULL,
    cve text NOT NULL,
    introduced text,
    fixed_version text,
    urgency text NOT NULL,
    CONSTRAINT vulnerability_entries_urgency_check CHECK ((urgency = ANY (ARRAY['critical'::text, 'high'::text, 'medium'::text, 'low'::text, 'unknown'::text, 'unimportant'::text])))
);


--
-- Name: vulnerability_entry_lists; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.vulnerability_entry_lists (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    feed text NOT NULL,
    version bigint NOT NULL,
    release text NOT NULL,
    cves text[] NOT NULL,
    sources text[] NOT NULL,
    urgencies text[] NOT NULL,
    fixed_versions text[] NOT NULL,
    CONSTRAINT vulnerability_entry_lists_check CHECK (((cardinality(sources) = cardinality(cves)) AND (cardinality(urgencies) = cardinality(cves)) AND (cardinality(fixed_versions) = cardinality(cves))))
);


--
-- Name: vulnerability_feeds; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.vulnerability_feeds (
    name text NOT NULL,
    source text,
    etag text,
    last_modified text,
    content_sha256 bytea,
    last_attempt_at timestamp with time zone,
    last_success_at timestamp with time zone,
    last_error text,
    entries integer DEFAULT 0 NOT NULL,
    version bigint DEFAULT 0 NOT NULL,
    CONSTRAINT vulnerability_feeds_content_sha256_check CHECK ((octet_length(content_sha256) = 32)),
    CONSTRAINT vulnerability_feeds_last_error_check CHECK ((length(last_error) <= 1400)),
    CONSTRAINT vulnerability_feeds_name_check CHECK ((name = ANY (ARRAY['debian'::text, 'ubuntu'::text])))
);


--
-- Name: vulnerability_matched_sets; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.vulnerability_matched_sets (
    package_set_id bigint NOT NULL,
    release text NOT NULL,
    feed text NOT NULL,
    feed_version bigint NOT NULL,
    worst_urgency_rank smallint,
    matched_at timestamp with time zone DEFAULT public.now_ms() NOT NULL,
    list_id uuid NOT NULL,
    affected bytea NOT NULL
);


--
-- Name: webhook_deliveries; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.webhook_deliveries (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    seq bigint NOT NULL,
    webhook_id uuid NOT NULL,
    event_id uuid NOT NULL,
    event text NOT NULL,
    status text DEFAULT 'pending'::text NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    last_status_code integer,
    last_error text,
    next_attempt_at timestamp with time zone,
    delivered_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT public.now_ms() NOT NULL,
    CONSTRAINT webhook_deliveries_attempts_check CHECK ((attempts >= 0)),
    CONSTRAINT webhook_deliveries_check CHECK (((status = 'delivered'::text) = (delivered_at IS NOT NULL))),
    CONSTRAINT webhook_deliveries_check1 CHECK (((status = 'pending'::text) OR (next_attempt_at IS NULL))),
    CONSTRAINT webhook_deliveries_last_error_check CHECK ((length(last_error) <= 1400)),
    CONSTRAINT webhook_deliveries_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'delivered'::text, 'failed'::text])))
);


--
-- Name: webhook_deliveries_seq_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.webhook_deliveries ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.webhook_deliveries_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: webhook_delivery_attempts; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.webhook_delivery_attempts (
    delivery_id uuid NOT NULL,
    attempt integer NOT NULL,
    started_at timestamp with time zone NOT NULL,
    duration_ms integer NOT NULL,
    status_code integer,
    error text,
    CONSTRAINT webhook_delivery_attempts_attempt_check CHECK ((attempt >= 1)),
    CONSTRAINT webhook_delivery_attempts_duration_ms_check CHECK ((duration_ms >= 0)),
    CONSTRAINT webhook_delivery_attempts_error_check CHECK ((length(error) <= 1400))
);


--
-- Name: webhook_events; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.webhook_events (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    organization_id uuid NOT NULL,
    type text NOT NULL,
    data jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT public.now_ms() NOT NULL,
    CONSTRAINT webhook_events_data_check CHECK ((jsonb_typeof(data) = 'object'::text))
);


--
-- Name: webhooks; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.webhooks (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    organization_id uuid NOT NULL,
    url text NOT NULL,
    events text[] NOT NULL,
    secret_sealed jsonb NOT NULL,
    created_at timestamp with time zone DEFAULT public.now_ms() NOT NULL,
    failing_since timestamp with time zone,
    disabled_at timestamp with time zone,
    CONSTRAINT webhooks_events_check CHECK ((cardinality(events) >= 1)),
    CONSTRAINT webhooks_secret_sealed_check CHECK ((jsonb_typeof(secret_sealed) = 'object'::text)),
    CONSTRAINT webhooks_url_check CHECK (((length(url) >= 1) AND (length(url) <= 2048)))
);


--
-- Name: worker_heartbeats; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.worker_heartbeats (
    worker_id text NOT NULL,
    host text NOT NULL,
    pid integer NOT NULL,
    seen_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: workspace_merkmale; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.workspace_merkmale (
    workspace text NOT NULL,
    merkmal text NOT NULL
);


--
-- Name: workspaces; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.workspaces (
    key text NOT NULL,
    name text NOT NULL
);


--
-- Name: activation_codes activation_codes_code_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.activation_codes
    ADD CONSTRAINT activation_codes_code_key UNIQUE (code);


--
-- Name: activation_codes activation_codes_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.activation_codes
    ADD CONSTRAINT activation_codes_pkey PRIMARY KEY (organization_id);


--
-- Name: activation_failure_counts activation_failure_counts_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.activation_failure_counts
    ADD CONSTRAINT activation_failure_counts_pkey PRIMARY KEY (client_key);


--
-- Name: api_keys api_keys_key_hash_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.api_keys
    ADD CONSTRAINT api_keys_key_hash_key UNIQUE (key_hash);


--
-- Name: api_keys api_keys_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.api_keys
    ADD CONSTRAINT api_keys_pkey PRIMARY KEY (id);


--
-- Name: audit_events audit_events_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.audit_events
    ADD CONSTRAINT audit_events_pkey PRIMARY KEY (id);


--
-- Name: backends backends_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.backends
    ADD CONSTRAINT backends_pkey PRIMARY KEY (key);


--
-- Name: blueprints blueprints_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.blueprints
    ADD CONSTRAINT blueprints_pkey PRIMARY KEY (merkmal, backend);


--
-- Name: bootstrap_tokens bootstrap_tokens_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.bootstrap_tokens
    ADD CONSTRAINT bootstrap_tokens_pkey PRIMARY KEY (device_id);


--
-- Name: bootstrap_tokens bootstrap_tokens_token_hash_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.bootstrap_tokens
    ADD CONSTRAINT bootstrap_tokens_token_hash_key UNIQUE (token_hash);


--
-- Name: device_actions device_actions_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.device_actions
    ADD CONSTRAINT device_actions_pkey PRIMARY KEY (id);


--
-- Name: device_bulk_jobs device_bulk_jobs_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.device_bulk_jobs
    ADD CONSTRAINT device_bulk_jobs_pkey PRIMARY KEY (id);


--
-- Name: device_fleet device_fleet_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.device_fleet
    ADD CONSTRAINT device_fleet_pkey PRIMARY KEY (device_id);


--
-- Name: device_hardware device_hardware_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.device_hardware
    ADD CONSTRAINT device_hardware_pkey PRIMARY KEY (device_id);


--
-- Name: device_heartbeats device_heartbeats_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.device_heartbeats
    ADD CONSTRAINT device_heartbeats_pkey PRIMARY KEY (device_id);


--
-- Name: device_inventories device_inventories_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.device_inventories
    ADD CONSTRAINT device_inventories_pkey PRIMARY KEY (device_id);


--
-- Name: device_merkmal_events device_merkmal_events_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.device_merkmal_events
    ADD CONSTRAINT device_merkmal_events_pkey PRIMARY KEY (id);


--
-- Name: device_merkmal_outcomes device_merkmal_outcomes_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.device_merkmal_outcomes
    ADD CONSTRAINT device_merkmal_outcomes_pkey PRIMARY KEY (device_id, merkmal);


--
-- Name: device_merkmale device_merkmale_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.device_merkmale
    ADD CONSTRAINT device_merkmale_pkey PRIMARY KEY (device_id, merkmal);


--
-- Name: device_stale_marks device_stale_marks_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.device_stale_marks
    ADD CONSTRAINT device_stale_marks_pkey PRIMARY KEY (device_id);


--
-- Name: devices devices_agent_secret_hash_excl; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.devices
    ADD CONSTRAINT devices_agent_secret_hash_excl EXCLUDE USING hash (agent_secret_hash WITH =);


--
-- Name: devices devices_id_organization_id_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.devices
    ADD CONSTRAINT devices_id_organization_id_key UNIQUE (id, organization_id);


--
-- Name: devices devices_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.devices
    ADD CONSTRAINT devices_pkey PRIMARY KEY (id);


--
-- Name: disk_keys disk_keys_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.disk_keys
    ADD CONSTRAINT disk_keys_pkey PRIMARY KEY (id);


--
-- Name: enrollment_sessions enrollment_sessions_id_organization_id_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.enrollment_sessions
    ADD CONSTRAINT enrollment_sessions_id_organization_id_key UNIQUE (id, organization_id);


--
-- Name: enrollment_sessions enrollment_sessions_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.enrollment_sessions
    ADD CONSTRAINT enrollment_sessions_pkey PRIMARY KEY (id);


--
-- Name: group_members group_members_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.group_members
    ADD CONSTRAINT group_members_pkey PRIMARY KEY (group_id, device_id);


--
-- Name: group_merkmale group_merkmale_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.group_merkmale
    ADD CONSTRAINT group_merkmale_pkey PRIMARY KEY (group_id, merkmal);


--
-- Name: groups groups_id_organization_id_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.groups
    ADD CONSTRAINT groups_id_organization_id_key UNIQUE (id, organization_id);


--
-- Name: groups groups_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.groups
    ADD CONSTRAINT groups_pkey PRIMARY KEY (id);


--
-- Name: iso_builds iso_builds_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.iso_builds
    ADD CONSTRAINT iso_builds_pkey PRIMARY KEY (id);


--
-- Name: kategorien kategorien_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.kategorien
    ADD CONSTRAINT kategorien_pkey PRIMARY KEY (key);


--
-- Name: merkmale merkmale_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.merkmale
    ADD CONSTRAINT merkmale_pkey PRIMARY KEY (key);


--
-- Name: org_unit_merkmale org_unit_merkmale_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.org_unit_merkmale
    ADD CONSTRAINT org_unit_merkmale_pkey PRIMARY KEY (org_unit_id, merkmal);


--
-- Name: org_units org_units_id_organization_id_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.org_units
    ADD CONSTRAINT org_units_id_organization_id_key UNIQUE (id, organization_id);


--
-- Name: org_units org_units_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.org_units
    ADD CONSTRAINT org_units_pkey PRIMARY KEY (id);


--
-- Name: organization_vulnerabilities organization_vulnerabilities_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.organization_vulnerabilities
    ADD CONSTRAINT organization_vulnerabilities_pkey PRIMARY KEY (organization_id, cve);


--
-- Name: organizations organizations_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.organizations
    ADD CONSTRAINT organizations_pkey PRIMARY KEY (id);


--
-- Name: override_versions override_versions_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.override_versions
    ADD CONSTRAINT override_versions_pkey PRIMARY KEY (organization_id);


--
-- Name: package_set_packages package_set_packages_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.package_set_packages
    ADD CONSTRAINT package_set_packages_pkey PRIMARY KEY (set_id, name, arch);


--
-- Name: package_sets package_sets_content_hash_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.package_sets
    ADD CONSTRAINT package_sets_content_hash_key UNIQUE (content_hash);


--
-- Name: package_sets package_sets_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.package_sets
    ADD CONSTRAINT package_sets_pkey PRIMARY KEY (id);


--
-- Name: portal_sessions portal_sessions_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.portal_sessions
    ADD CONSTRAINT portal_sessions_pkey PRIMARY KEY (token_hash);


--
-- Name: rollout_devices rollout_devices_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.rollout_devices
    ADD CONSTRAINT rollout_devices_pkey PRIMARY KEY (rollout_id, device_id);


--
-- Name: rollout_rings rollout_rings_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.rollout_rings
    ADD CONSTRAINT rollout_rings_pkey PRIMARY KEY (rollout_id, ring);


--
-- Name: rollouts rollouts_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.rollouts
    ADD CONSTRAINT rollouts_pkey PRIMARY KEY (id);


--
-- Name: schema_migrations schema_migrations_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.schema_migrations
    ADD CONSTRAINT schema_migrations_pkey PRIMARY KEY (version);


--
-- Name: templates templates_name_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.templates
    ADD CONSTRAINT templates_name_key UNIQUE (name);


--
-- Name: templates templates_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.templates
    ADD CONSTRAINT templates_pkey PRIMARY KEY (id);


--
-- Name: vulnerability_entry_lists vulnerability_entry_lists_feed_version_release_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.vulnerability_entry_lists
    ADD CONSTRAINT vulnerability_entry_lists_feed_version_release_key UNIQUE (feed, version, release);


--
-- Name: vulnerability_entry_lists vulnerability_entry_lists_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.vulnerability_entry_lists
    ADD CONSTRAINT vulnerability_entry_lists_pkey PRIMARY KEY (id);


--
-- Name: vulnerability_feeds vulnerability_feeds_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.vulnerability_feeds
    ADD CONSTRAINT vulnerability_feeds_pkey PRIMARY KEY (name);


--
-- Name: vulnerability_matched_sets vulnerability_matched_sets_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.vulnerability_matched_sets
    ADD CONSTRAINT vulnerability_matched_sets_pkey PRIMARY KEY (package_set_id, release);


--
-- Name: webhook_deliveries webhook_deliveries_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.webhook_deliveries
    ADD CONSTRAINT webhook_deliveries_pkey PRIMARY KEY (id);


--
-- Name: webhook_delivery_attempts webhook_delivery_attempts_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.webhook_delivery_attempts
    ADD CONSTRAINT webhook_delivery_attempts_pkey PRIMARY KEY (delivery_id, attempt);


--
-- Name: webhook_events webhook_events_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.webhook_events
    ADD CONSTRAINT webhook_events_pkey PRIMARY KEY (id);


--
-- Name: webhooks webhooks_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.webhooks
    ADD CONSTRAINT webhooks_pkey PRIMARY KEY (id);


--
-- Name: worker_heartbeats worker_heartbeats_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.worker_heartbeats
    ADD CONSTRAINT worker_heartbeats_pkey PRIMARY KEY (worker_id);


--
-- Name: workspace_merkmale workspace_merkmale_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.workspace_merkmale
    ADD CONSTRAINT workspace_merkmale_pkey PRIMARY KEY (workspace, merkmal);


--
-- Name: workspaces workspaces_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.workspaces
    ADD CONSTRAINT workspaces_pkey PRIMARY KEY (key);


--
-- Name: api_keys_organization; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX api_keys_organization ON public.api_keys USING btree (organization_id, created_at, id);


--
-- Name: audit_events_newest; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX audit_events_newest ON public.audit_events USING btree (organization_id, seq DESC);


--
-- Name: audit_events_target; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX audit_events_target ON public.audit_events USING btree (organization_id, target_id, seq DESC);


--
-- Name: backends_one_preferred; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX backends_one_preferred ON public.backends USING btree (preferred) WHERE preferred;


--
-- Name: device_actions_by_device; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX device_actions_by_device ON public.device_actions USING btree (device_id, created_at DESC, id DESC);


--
-- Name: device_actions_by_rollout; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX device_actions_by_rollout ON public.device_actions USING btree (rollout_id, device_id) WHERE (rollout_id IS NOT NULL);


--
-- Name: device_actions_expiry; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX device_actions_expiry ON public.device_actions USING btree (expires_at) WHERE (status = ANY (ARRAY['pending'::text, 'delivered'::text]));


--
-- Name: device_actions_open; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX device_actions_open ON public.device_actions USING btree (device_id, created_at, id) WHERE (status = ANY (ARRAY['pending'::text, 'delivered'::text]));


--
-- Name: device_bulk_jobs_organization; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX device_bulk_jobs_organization ON public.device_bulk_jobs USING btree (organization_id, created_at DESC);


--
-- Name: device_fleet_convergence; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX device_fleet_convergence ON public.device_fleet USING btree (organization_id, convergence) WHERE (convergence IS NOT NULL);


--
-- Name: device_fleet_scope; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX device_fleet_scope ON public.device_fleet USING btree (organization_id, oe_id);


--
-- Name: device_heartbeats_organization; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX device_heartbeats_organization ON public.device_heartbeats USING btree (organization_id);


--
-- Name: device_inventories_organization; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX device_inventories_organization ON public.device_inventories USING btree (organization_id);


--
-- Name: device_inventories_reboot_required; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX device_inventories_reboot_required ON public.device_inventories USING btree (organization_id) WHERE reboot_required;


--
-- Name: device_inventories_security_pending; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX device_inventories_security_pending ON public.device_inventories USING btree (organization_id) WHERE (security_pending_count > 0);


--
-- Name: device_inventories_set; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX device_inventories_set ON public.device_inventories USING btree (package_set_id, release);


--
-- Name: device_merkmal_events_device_seq; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX device_merkmal_events_device_seq ON public.device_merkmal_events USING btree (device_id, seq DESC);


--
-- Name: devices_hostname_prefix; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX devices_hostname_prefix ON public.devices USING btree (organization_id, lower(hostname) text_pattern_ops) WHERE (archived_at IS NULL);


--
-- Name: devices_hostname_trigrams; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX devices_hostname_trigrams ON public.devices USING gin (lower(hostname) public.gin_trgm_ops);


--
-- Name: devices_live_serial; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX devices_live_serial ON public.devices USING btree (organization_id, serial) WHERE (archived_at IS NULL);


--
-- Name: devices_oe; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX devices_oe ON public.devices USING btree (oe_id);


--
-- Name: devices_org_live; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX devices_org_live ON public.devices USING btree (organization_id, created_at, id) WHERE (archived_at IS NULL);


--
-- Name: devices_serial_prefix; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX devices_serial_prefix ON public.devices USING btree (organization_id, lower(serial) text_pattern_ops) INCLUDE (serial) WHERE (archived_at IS NULL);


--
-- Name: devices_serial_trigrams; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX devices_serial_trigrams ON public.devices USING gin (lower(serial) public.gin_trgm_ops);


--
-- Name: disk_keys_device; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX disk_keys_device ON public.disk_keys USING btree (device_id, escrowed_at, id);


--
-- Name: disk_keys_organization; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX disk_keys_organization ON public.disk_keys USING btree (organization_id, device_id) WHERE (status <> 'rotated'::text);


--
-- Name: disk_keys_rotation_due; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX disk_keys_rotation_due ON public.disk_keys USING btree (device_id, revealed_at) WHERE ((revealed_at IS NOT NULL) AND (status = ANY (ARRAY['escrowed'::text, 'verified'::text])));


--
-- Name: disk_keys_slot; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX disk_keys_slot ON public.disk_keys USING btree (device_id, luks_uuid, keyslot) WHERE (status <> 'rotated'::text);


--
-- Name: enrollment_sessions_org_created; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX enrollment_sessions_org_created ON public.enrollment_sessions USING btree (organization_id, created_at, id);


--
-- Name: group_members_device_group; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX group_members_device_group ON public.group_members USING btree (device_id, group_id);


--
-- Name: groups_name_key; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX groups_name_key ON public.groups USING btree (organization_id, public.fleet_name_key(name));


--
-- Name: groups_org_created; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX groups_org_created ON public.groups USING btree (organization_id, created_at, id);


--
-- Name: iso_builds_expiry; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX iso_builds_expiry ON public.iso_builds USING btree (expires_at) WHERE (status = 'completed'::text);


--
-- Name: iso_builds_org_newest; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX iso_builds_org_newest ON public.iso_builds USING btree (organization_id, created_at DESC, id DESC);


--
-- Name: org_units_one_protected_per_org; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX org_units_one_protected_per_org ON public.org_units USING btree (organization_id) WHERE protected;


--
-- Name: org_units_org_created; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX org_units_org_created ON public.org_units USING btree (organization_id, created_at, id);


--
-- Name: org_units_parent; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX org_units_parent ON public.org_units USING btree (parent_id);


--
-- Name: org_units_sibling_name_key; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX org_units_sibling_name_key ON public.org_units USING btree (organization_id, parent_id, public.fleet_name_key(name)) NULLS NOT DISTINCT;


--
-- Name: organization_vulnerabilities_list; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX organization_vulnerabilities_list ON public.organization_vulnerabilities USING btree (organization_id, devices_affected DESC, cve) WHERE (devices_affected > 0);


--
-- Name: package_set_packages_name; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX package_set_packages_name ON public.package_set_packages USING btree (name, set_id);


--
-- Name: package_set_packages_source; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX package_set_packages_source ON public.package_set_packages USING btree (source, set_id);


--
-- Name: portal_sessions_expires; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX portal_sessions_expires ON public.portal_sessions USING btree (expires_at);


--
-- Name: rollout_devices_applied; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX rollout_devices_applied ON public.rollout_devices USING btree (device_id) WHERE applied;


--
-- Name: rollout_devices_by_ring; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX rollout_devices_by_ring ON public.rollout_devices USING btree (rollout_id, ring);


--
-- Name: rollouts_active; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX rollouts_active ON public.rollouts USING btree (id) WHERE (status = 'running'::text);


--
-- Name: rollouts_active_per_scope; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX rollouts_active_per_scope ON public.rollouts USING btree (scope_id, merkmal) WHERE (status = ANY (ARRAY['running'::text, 'paused'::text]));


--
-- Name: rollouts_by_organization; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX rollouts_by_organization ON public.rollouts USING btree (organization_id, created_at DESC, id DESC);


--
-- Name: templates_one_default_per_backend; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX templates_one_default_per_backend ON public.templates USING btree (backend) WHERE is_default;


--
-- Name: vulnerability_entries_release; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX vulnerability_entries_release ON public.vulnerability_entries USING btree (feed, release);


--
-- Name: vulnerability_matched_sets_list; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX vulnerability_matched_sets_list ON public.vulnerability_matched_sets USING btree (list_id);


--
-- Name: webhook_deliveries_event; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX webhook_deliveries_event ON public.webhook_deliveries USING btree (event_id);


--
-- Name: webhook_deliveries_finished; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX webhook_deliveries_finished ON public.webhook_deliveries USING btree (created_at) WHERE (status <> 'pending'::text);


--
-- Name: webhook_deliveries_newest; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX webhook_deliveries_newest ON public.webhook_deliveries USING btree (webhook_id, seq DESC);


--
-- Name: webhook_deliveries_pending; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX webhook_deliveries_pending ON public.webhook_deliveries USING btree (next_attempt_at) WHERE (status = 'pending'::text);


--
-- Name: webhook_deliveries_pending_by_webhook; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX webhook_deliveries_pending_by_webhook ON public.webhook_deliveries USING btree (webhook_id) WHERE (status = 'pending'::text);


--
-- Name: webhooks_organization; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX webhooks_organization ON public.webhooks USING btree (organization_id, created_at, id);


--
-- Name: device_actions device_actions_insert_open; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER device_actions_insert_open AFTER INSERT ON public.device_actions REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.device_actions_inserted();


--
-- Name: device_actions device_actions_update_open; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER device_actions_update_open AFTER UPDATE ON public.device_actions REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.device_actions_updated();


--
-- Name: device_actions device_actions_webhook_events; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER device_actions_webhook_events AFTER UPDATE OF status ON public.device_actions FOR EACH ROW WHEN (((old.status IS DISTINCT FROM new.status) AND (new.status = ANY (ARRAY['succeeded'::text, 'failed'::text, 'expired'::text])))) EXECUTE FUNCTION public.device_actions_webhook_events();


--
-- Name: device_inventories device_inventories_set_inserted; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER device_inventories_set_inserted AFTER INSERT ON public.device_inventories REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.device_inventories_set_copied();


--
-- Name: device_inventories device_inventories_set_updated; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER device_inventories_set_updated AFTER UPDATE ON public.device_inventories REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.device_inventories_set_copied();


--
-- Name: device_merkmal_events device_merkmal_events_webhook_events; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER device_merkmal_events_webhook_events AFTER INSERT ON public.device_merkmal_events FOR EACH ROW WHEN ((new.type = ANY (ARRAY['applied'::text, 'apply_failed'::text, 'removed'::text, 'remove_failed'::text]))) EXECUTE FUNCTION public.device_merkmal_events_webhook_events();


--
-- Name: device_merkmal_events device_merkmal_outcomes_record; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER device_merkmal_outcomes_record AFTER INSERT ON public.device_merkmal_events REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION public.device_merkmal_outcomes_record();


--
-- Name: device_merkmale device_merkmale_delete_state_texts; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER device_merkmale_delete_state_texts AFTER DELETE ON public.device_merkmale REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION public.device_state_rows_changed();


--
-- Name: device_merkmale device_merkmale_insert_state_texts; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER device_merkmale_insert_state_texts AFTER INSERT ON public.device_merkmale REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION public.device_state_rows_changed();


--
-- Name: device_merkmale device_merkmale_update_state_texts; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER device_merkmale_update_state_texts AFTER UPDATE ON public.device_merkmale REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.device_state_rows_updated();


--
-- Name: devices devices_cancel_actions; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER devices_cancel_actions AFTER UPDATE OF archived_at, deprovisioned_at ON public.devices FOR EACH ROW WHEN ((((old.archived_at IS NULL) AND (new.archived_at IS NOT NULL)) OR ((old.deprovisioned_at IS NULL) AND (new.deprovisioned_at IS NOT NULL)))) EXECUTE FUNCTION public.devices_cancel_actions();


--
-- Name: devices devices_fleet_insert; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER devices_fleet_insert AFTER INSERT ON public.devices REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.device_fleet_devices_written();


--
-- Name: devices devices_fleet_update; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER devices_fleet_update AFTER UPDATE ON public.devices REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.device_fleet_devices_written();


--
-- Name: devices devices_webhook_events; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER devices_webhook_events AFTER UPDATE OF archived_at, deprovisioned_at, agent_secret_hash ON public.devices FOR EACH ROW EXECUTE FUNCTION public.devices_webhook_events();


--
-- Name: group_members group_members_delete_state_texts; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER group_members_delete_state_texts AFTER DELETE ON public.group_members REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION public.device_state_rows_changed();


--
-- Name: group_members group_members_insert_state_texts; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER group_members_insert_state_texts AFTER INSERT ON public.group_members REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION public.device_state_rows_changed();


--
-- Name: group_members group_members_update_state_texts; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER group_members_update_state_texts AFTER UPDATE ON public.group_members REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.device_state_rows_updated();


--
-- Name: group_merkmale group_merkmale_delete_override_version; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER group_merkmale_delete_override_version AFTER DELETE ON public.group_merkmale REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION public.group_merkmale_changed();


--
-- Name: group_merkmale group_merkmale_insert_override_version; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER group_merkmale_insert_override_version AFTER INSERT ON public.group_merkmale REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION public.group_merkmale_changed();


--
-- Name: group_merkmale group_merkmale_update_override_version; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER group_merkmale_update_override_version AFTER UPDATE ON public.group_merkmale REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION public.group_merkmale_changed();


--
-- Name: groups groups_delete_override_version; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER groups_delete_override_version AFTER DELETE ON public.groups REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION public.organization_rows_changed();


--
-- Name: groups groups_insert_override_version; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER groups_insert_override_version AFTER INSERT ON public.groups REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION public.organization_rows_changed();


--
-- Name: groups groups_update_override_version; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER groups_update_override_version AFTER UPDATE ON public.groups REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION public.organization_rows_changed();


--
-- Name: iso_builds iso_builds_webhook_events; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER iso_builds_webhook_events AFTER UPDATE OF status ON public.iso_builds FOR EACH ROW WHEN (((old.status IS DISTINCT FROM new.status) AND (new.status = ANY (ARRAY['completed'::text, 'failed'::text])))) EXECUTE FUNCTION public.iso_builds_webhook_events();


--
-- Name: org_unit_merkmale org_unit_merkmale_delete_override_version; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER org_unit_merkmale_delete_override_version AFTER DELETE ON public.org_unit_merkmale REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION public.org_unit_merkmale_changed();


--
-- Name: org_unit_merkmale org_unit_merkmale_insert_override_version; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER org_unit_merkmale_insert_override_version AFTER INSERT ON public.org_unit_merkmale REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION public.org_unit_merkmale_changed();


--
-- Name: org_unit_merkmale org_unit_merkmale_update_override_version; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER org_unit_merkmale_update_override_version AFTER UPDATE ON public.org_unit_merkmale REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION public.org_unit_merkmale_changed();


--
-- Name: org_units org_units_delete_override_version; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER org_units_delete_override_version AFTER DELETE ON public.org_units REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION public.organization_rows_changed();


--
-- Name: org_units org_units_insert_override_version; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER org_units_insert_override_version AFTER INSERT ON public.org_units REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION public.organization_rows_changed();


--
-- Name: org_units org_units_update_override_version; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER org_units_update_override_version AFTER UPDATE ON public.org_units REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION public.organization_rows_changed();


--
-- Name: rollout_devices rollout_devices_delete_text; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER rollout_devices_delete_text AFTER DELETE ON public.rollout_devices REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION public.rollout_devices_deleted();


--
-- Name: rollout_devices rollout_devices_insert_text; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER rollout_devices_insert_text AFTER INSERT ON public.rollout_devices REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION public.rollout_devices_inserted();


--
-- Name: rollout_devices rollout_devices_update_text; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER rollout_devices_update_text AFTER UPDATE ON public.rollout_devices REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION public.rollout_devices_updated();


--
-- Name: activation_codes activation_codes_organization_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.activation_codes
    ADD CONSTRAINT activation_codes_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES public.organizations(id) ON DELETE CASCADE;


--
-- Name: api_keys api_keys_organization_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.api_keys
    ADD CONSTRAINT api_keys_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES public.organizations(id) ON DELETE CASCADE;


--
-- Name: blueprints blueprints_backend_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.blueprints
    ADD CONSTRAINT blueprints_backend_fkey FOREIGN KEY (backend) REFERENCES public.backends(key);


--
-- Name: blueprints blueprints_merkmal_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.blueprints
    ADD CONSTRAINT blueprints_merkmal_fkey FOREIGN KEY (merkmal) REFERENCES public.merkmale(key);


--
-- Name: bootstrap_tokens bootstrap_tokens_device_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.bootstrap_tokens
    ADD CONSTRAINT bootstrap_tokens_device_id_fkey FOREIGN KEY (device_id) REFERENCES public.devices(id) ON DELETE CASCADE;


--
-- Name: device_actions device_actions_device_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.device_actions
    ADD CONSTRAINT device_actions_device_id_fkey FOREIGN KEY (device_id) REFERENCES public.devices(id) ON DELETE CASCADE;


--
-- Name: device_actions device_actions_organization_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.device_actions
    ADD CONSTRAINT device_actions_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES public.organizations(id) ON DELETE CASCADE;


--
-- Name: device_actions device_actions_rollout_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.device_actions
    ADD CONSTRAINT device_actions_rollout_id_fkey FOREIGN KEY (rollout_id) REFERENCES public.rollouts(id) ON DELETE SET NULL;


--
-- Name: device_bulk_jobs device_bulk_jobs_organization_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.device_bulk_jobs
    ADD CONSTRAINT device_bulk_jobs_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES public.organizations(id) ON DELETE CASCADE;


--
-- Name: device_fleet device_fleet_device_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.device_fleet
    ADD CONSTRAINT device_fleet_device_id_fkey FOREIGN KEY (device_id) REFERENCES public.devices(id) ON DELETE CASCADE;


--
-- Name: device_hardware device_hardware_device_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.device_hardware
    ADD CONSTRAINT device_hardware_device_id_fkey FOREIGN KEY (device_id) REFERENCES public.devices(id) ON DELETE CASCADE;


--
-- Name: device_heartbeats device_heartbeats_device_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.device_heartbeats
    ADD CONSTRAINT device_heartbeats_device_id_fkey FOREIGN KEY (device_id) REFERENCES public.devices(id) ON DELETE CASCADE;


--
-- Name: device_inventories device_inventories_device_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.device_inventories
    ADD CONSTRAINT device_inventories_device_id_fkey FOREIGN KEY (device_id) REFERENCES public.devices(id) ON DELETE CASCADE;


--
-- Name: device_inventories device_inventories_organization_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.device_inventories
    ADD CONSTRAINT device_inventories_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES public.organizations(id) ON DELETE CASCADE;


--
-- Name: device_inventories device_inventories_package_set_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.device_inventories
    ADD CONSTRAINT device_inventories_package_set_id_fkey FOREIGN KEY (package_set_id) REFERENCES public.package_sets(id);


--
-- Name: device_merkmal_events device_merkmal_events_device_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.device_merkmal_events
    ADD CONSTRAINT device_merkmal_events_device_id_fkey FOREIGN KEY (device_id) REFERENCES public.devices(id) ON DELETE CASCADE;


--
-- Name: device_merkmal_events device_merkmal_events_merkmal_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.device_merkmal_events
    ADD CONSTRAINT device_merkmal_events_merkmal_fkey FOREIGN KEY (merkmal) REFERENCES public.merkmale(key);


--
-- Name: device_merkmal_outcomes device_merkmal_outcomes_device_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.device_merkmal_outcomes
    ADD CONSTRAINT device_merkmal_outcomes_device_id_fkey FOREIGN KEY (device_id) REFERENCES public.devices(id) ON DELETE CASCADE;


--
-- Name: device_merkmal_outcomes device_merkmal_outcomes_merkmal_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.device_merkmal_outcomes
    ADD CONSTRAINT device_merkmal_outcomes_merkmal_fkey FOREIGN KEY (merkmal) REFERENCES public.merkmale(key);


--
-- Name: device_merkmale device_merkmale_device_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.device_merkmale
    ADD CONSTRAINT device_merkmale_device_id_fkey FOREIGN KEY (device_id) REFERENCES public.devices(id) ON DELETE CASCADE;


--
-- Name: device_merkmale device_merkmale_merkmal_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.device_merkmale
    ADD CONSTRAINT device_merkmale_merkmal_fkey FOREIGN KEY (merkmal) REFERENCES public.merkmale(key);


--
-- Name: device_stale_marks device_stale_marks_device_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.device_stale_marks
    ADD CONSTRAINT device_stale_marks_device_id_fkey FOREIGN KEY (device_id) REFERENCES public.devices(id) ON DELETE CASCADE;


--
-- Name: devices devices_enrollment_session_id_organization_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.devices
    ADD CONSTRAINT devices_enrollment_session_id_organization_id_fkey FOREIGN KEY (enrollment_session_id, organization_id) REFERENCES public.enrollment_sessions(id, organization_id);


--
-- Name: devices devices_oe_id_organization_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.devices
    ADD CONSTRAINT devices_oe_id_organization_id_fkey FOREIGN KEY (oe_id, organization_id) REFERENCES public.org_units(id, organization_id);


--
-- Name: devices devices_organization_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.devices
    ADD CONSTRAINT devices_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES public.organizations(id) ON DELETE CASCADE;


--
-- Name: devices devices_template_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.devices
    ADD CONSTRAINT devices_template_id_fkey FOREIGN KEY (template_id) REFERENCES public.templates(id);


--
-- Name: disk_keys disk_keys_device_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.disk_keys
    ADD CONSTRAINT disk_keys_device_id_fkey FOREIGN KEY (device_id) REFERENCES public.devices(id) ON DELETE CASCADE;


--
-- Name: disk_keys disk_keys_organization_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.disk_keys
    ADD CONSTRAINT disk_keys_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES public.organizations(id) ON DELETE CASCADE;


--
-- Name: disk_keys disk_keys_replaced_by_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.disk_keys
    ADD CONSTRAINT disk_keys_replaced_by_fkey FOREIGN KEY (replaced_by) REFERENCES public.disk_keys(id) ON DELETE SET NULL;


--
-- Name: enrollment_sessions enrollment_sessions_organization_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.enrollment_sessions
    ADD CONSTRAINT enrollment_sessions_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES public.organizations(id) ON DELETE CASCADE;


--
-- Name: enrollment_sessions enrollment_sessions_template_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.enrollment_sessions
    ADD CONSTRAINT enrollment_sessions_template_id_fkey FOREIGN KEY (template_id) REFERENCES public.templates(id);


--
-- Name: group_members group_members_device_id_organization_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.group_members
    ADD CONSTRAINT group_members_device_id_organization_id_fkey FOREIGN KEY (device_id, organization_id) REFERENCES public.devices(id, organization_id) ON DELETE CASCADE;


--
-- Name: group_members group_members_group_id_organization_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.group_members
    ADD CONSTRAINT group_members_group_id_organization_id_fkey FOREIGN KEY (group_id, organization_id) REFERENCES public.groups(id, organization_id) ON DELETE CASCADE;


--
-- Name: group_merkmale group_merkmale_group_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.group_merkmale
    ADD CONSTRAINT group_merkmale_group_id_fkey FOREIGN KEY (group_id) REFERENCES public.groups(id) ON DELETE CASCADE;


--
-- Name: group_merkmale group_merkmale_merkmal_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.group_merkmale
    ADD CONSTRAINT group_merkmale_merkmal_fkey FOREIGN KEY (merkmal) REFERENCES public.merkmale(key);


--
-- Name: groups groups_organization_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.groups
    ADD CONSTRAINT groups_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES public.organizations(id) ON DELETE CASCADE;


--
-- Name: iso_builds iso_builds_enrollment_session_id_organization_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.iso_builds
    ADD CONSTRAINT iso_builds_enrollment_session_id_organization_id_fkey FOREIGN KEY (enrollment_session_id, organization_id) REFERENCES public.enrollment_sessions(id, organization_id) ON DELETE CASCADE;


--
-- Name: iso_builds iso_builds_organization_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.iso_builds
    ADD CONSTRAINT iso_builds_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES public.organizations(id) ON DELETE CASCADE;


--
-- Name: iso_builds iso_builds_template_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.iso_builds
    ADD CONSTRAINT iso_builds_template_id_fkey FOREIGN KEY (template_id) REFERENCES public.templates(id);


--
-- Name: merkmale merkmale_kategorie_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.merkmale
    ADD CONSTRAINT merkmale_kategorie_fkey FOREIGN KEY (kategorie) REFERENCES public.kategorien(key);


--
-- Name: org_unit_merkmale org_unit_merkmale_merkmal_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.org_unit_merkmale
    ADD CONSTRAINT org_unit_merkmale_merkmal_fkey FOREIGN KEY (merkmal) REFERENCES public.merkmale(key);


--
-- Name: org_unit_merkmale org_unit_merkmale_org_unit_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.org_unit_merkmale
    ADD CONSTRAINT org_unit_merkmale_org_unit_id_fkey FOREIGN KEY (org_unit_id) REFERENCES public.org_units(id) ON DELETE CASCADE;


--
-- Name: org_units org_units_organization_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.org_units
    ADD CONSTRAINT org_units_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES public.organizations(id) ON DELETE CASCADE;


--
-- Name: org_units org_units_parent_id_organization_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.org_units
    ADD CONSTRAINT org_units_parent_id_organization_id_fkey FOREIGN KEY (parent_id, organization_id) REFERENCES public.org_units(id, organization_id);


--
-- Name: organization_vulnerabilities organization_vulnerabilities_organization_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.organization_vulnerabilities
    ADD CONSTRAINT organization_vulnerabilities_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES public.organizations(id) ON DELETE CASCADE;


--
-- Name: override_versions override_versions_organization_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.override_versions
    ADD CONSTRAINT override_versions_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES public.organizations(id) ON DELETE CASCADE;


--
-- Name: package_set_packages package_set_packages_set_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.package_set_packages
    ADD CONSTRAINT package_set_packages_set_id_fkey FOREIGN KEY (set_id) REFERENCES public.package_sets(id) ON DELETE CASCADE;


--
-- Name: portal_sessions portal_sessions_api_key_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.portal_sessions
    ADD CONSTRAINT portal_sessions_api_key_id_fkey FOREIGN KEY (api_key_id) REFERENCES public.api_keys(id) ON DELETE CASCADE;


--
-- Name: portal_sessions portal_sessions_organization_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.portal_sessions
    ADD CONSTRAINT portal_sessions_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES public.organizations(id) ON DELETE CASCADE;


--
-- Name: rollout_devices rollout_devices_device_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.rollout_devices
    ADD CONSTRAINT rollout_devices_device_id_fkey FOREIGN KEY (device_id) REFERENCES public.devices(id) ON DELETE CASCADE;


--
-- Name: rollout_devices rollout_devices_rollout_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.rollout_devices
    ADD CONSTRAINT rollout_devices_rollout_id_fkey FOREIGN KEY (rollout_id) REFERENCES public.rollouts(id) ON DELETE CASCADE;


--
-- Name: rollout_rings rollout_rings_rollout_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.rollout_rings
    ADD CONSTRAINT rollout_rings_rollout_id_fkey FOREIGN KEY (rollout_id) REFERENCES public.rollouts(id) ON DELETE CASCADE;


--
-- Name: rollouts rollouts_merkmal_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.rollouts
    ADD CONSTRAINT rollouts_merkmal_fkey FOREIGN KEY (merkmal) REFERENCES public.merkmale(key);


--
-- Name: rollouts rollouts_organization_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.rollouts
    ADD CONSTRAINT rollouts_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES public.organizations(id) ON DELETE CASCADE;


--
-- Name: templates templates_backend_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.templates
    ADD CONSTRAINT templates_backend_fkey FOREIGN KEY (backend) REFERENCES public.backends(key);


--
-- Name: templates templates_workspace_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.templates
    ADD CONSTRAINT templates_workspace_fkey FOREIGN KEY (workspace) REFERENCES public.workspaces(key);


--
-- Name: vulnerability_entries vulnerability_entries_feed_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.vulnerability_entries
    ADD CONSTRAINT vulnerability_entries_feed_fkey FOREIGN KEY (feed) REFERENCES public.vulnerability_feeds(name);


--
-- Name: vulnerability_entry_lists vulnerability_entry_lists_feed_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.vulnerability_entry_lists
    ADD CONSTRAINT vulnerability_entry_lists_feed_fkey FOREIGN KEY (feed) REFERENCES public.vulnerability_feeds(name);


--
-- Name: vulnerability_matched_sets vulnerability_matched_sets_feed_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.vulnerability_matched_sets
    ADD CONSTRAINT vulnerability_matched_sets_feed_fkey FOREIGN KEY (feed) REFERENCES public.vulnerability_feeds(name);


--
-- Name: vulnerability_matched_sets vulnerability_matched_sets_list_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.vulnerability_matched_sets
    ADD CONSTRAINT vulnerability_matched_sets_list_id_fkey FOREIGN KEY (list_id) REFERENCES public.vulnerability_entry_lists(id);


--
-- Name: vulnerability_matched_sets vulnerability_matched_sets_package_set_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.vulnerability_matched_sets
    ADD CONSTRAINT vulnerability_matched_sets_package_set_id_fkey FOREIGN KEY (package_set_id) REFERENCES public.package_sets(id) ON DELETE CASCADE;


--
-- Name: webhook_deliveries webhook_deliveries_event_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.webhook_deliveries
    ADD CONSTRAINT webhook_deliveries_event_id_fkey FOREIGN KEY (event_id) REFERENCES public.webhook_events(id) ON DELETE CASCADE;


--
-- Name: webhook_deliveries webhook_deliveries_webhook_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.webhook_deliveries
    ADD CONSTRAINT webhook_deliveries_webhook_id_fkey FOREIGN KEY (webhook_id) REFERENCES public.webhooks(id) ON DELETE CASCADE;


--
-- Name: webhook_delivery_attempts webhook_delivery_attempts_delivery_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.webhook_delivery_attempts
    ADD CONSTRAINT webhook_delivery_attempts_delivery_id_fkey FOREIGN KEY (delivery_id) REFERENCES public.webhook_deliveries(id) ON DELETE CASCADE;


--
-- Name: webhook_events webhook_events_organization_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.webhook_events
    ADD CONSTRAINT webhook_events_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES public.organizations(id) ON DELETE CASCADE;


--
-- Name: webhooks webhooks_organization_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.webhooks
    ADD CONSTRAINT webhooks_organization_id_fkey FOREIGN KEY (organization_id) REFERENCES public.organizations(id) ON DELETE CASCADE;


--
-- Name: workspace_merkmale workspace_merkmale_merkmal_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.workspace_merkmale
    ADD CONSTRAINT workspace_merkmale_merkmal_fkey FOREIGN KEY (merkmal) REFERENCES public.merkmale(key);


--
-- Name: workspace_merkmale workspace_merkmale_workspace_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.workspace_merkmale
    ADD CONSTRAINT workspace_merkmale_workspace_fkey FOREIGN KEY (workspace) REFERENCES public.workspaces(key);


--
-- PostgreSQL database dump complete
--

\unrestrict dbmate


--
-- Dbmate schema migrations
--

INSERT INTO public.schema_migrations (version) VALUES
    ('20261121000001'),
    ('20261121000002'),
    ('20261121000003'),
    ('20261121800000'),
    ('20261121900000'),
    ('20261121950000'),
    ('20261122100000'),
    ('20261122110000'),
    ('20261122110100'),
    ('20261122140000'),
    ('20261123100000'),
    ('20261124020000'),
    ('20261124060000'),
    ('20261125010000'),
    ('20261125010100'),
    ('20261125020000'),
    ('20261125100000'),
    ('20261125200000'),
    ('20261126050000'),
    ('20261126100000'),
    ('20261126110000'),
    ('20261126140000'),
    ('20261126150000'),
    ('20261126160000'),
    ('20261126170000'),
    ('20261126170100'),
    ('20261126170200'),
    ('20261128090000'),
    ('20261128100000'),
    ('20261128110000'),
    ('20261128120000'),
    ('20261128130000'),
    ('20261128130100'),
    ('20261128150000'),
    ('20261129080000'),
    ('20261129080100'),
    ('20261129090000'),
    ('20261129090100'),
    ('20261129090200'),
    ('20261129090300'),
    ('20261129100000');
