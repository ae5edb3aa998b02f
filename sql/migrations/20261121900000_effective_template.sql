-- migrate:up
-- The default-template rule as a function: a device without an assignment behaves as if
-- assigned the default template of the preferred backend. The device_templates view and
-- the check-in's cached template lookup both call it, so the rule lives here only.
create function effective_template_id(assigned uuid) returns uuid
  language sql stable as $$
    select coalesce(assigned, (
      select t.id from templates t join backends b on b.key = t.backend
      where b.preferred and t.is_default))
  $$;

create or replace view device_templates as
select d.id as device_id, t.id as template_id, t.backend, t.workspace
from devices d
join templates t on t.id = effective_template_id(d.template_id);

-- migrate:down
