-- migrate:up
-- The fleet-wide reads of what each device has (the device object's convergence, the
-- device list's filters, the fleet status, the metrics) over the outcomes of migration
-- 20261126100000, with the rules in one place each.

-- A device's catalog as the fleet-wide reads see it: every Merkmal with im_auftragskatalog
-- and a blueprint for the device's backend, its state (the last change's, else the workspace
-- default) and its convergence by `merkmal_convergence`. A device's own catalog read
-- resolves the state itself (the override resolution); every change of the effective
-- state writes an event, so the two agree. Plain SQL of one select: the planner inlines it
-- into the calling query and may join the outcomes of many devices at once.
create function device_catalog_outcomes(
  device_id uuid, backend text, workspace text, bootstrapped_at timestamptz
) returns table (merkmal text, state text, convergence text) language sql stable parallel safe as $$
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

-- The worst of several convergences, in one place: failed > pending > converged.
create function worse_convergence(a text, b text) returns text language sql immutable parallel safe as $$
  select case
    when a = 'failed' or b = 'failed' then 'failed'
    when a = 'pending' or b = 'pending' then 'pending'
    else coalesce(a, b)
  end
$$;
create aggregate worst_convergence(text) (sfunc = worse_convergence, stype = text, parallel = safe);

-- migrate:down
