-- migrate:up
-- A bulk action of the device list over more than 1,000 devices runs as a job: its devices
-- are fixed when it is started (the filter's matches then, by serial), and the worker
-- changes them a chunk at a time, each chunk's changes, audit events and progress in one
-- transaction (a chunk retried after a crash changes nothing twice). `caller` is who
-- started it (the audit actor of every change; no secret); `request_id` the request that
-- started it, carried by every audit event.
create table device_bulk_jobs (
  id              uuid primary key default gen_random_uuid(),
  organization_id uuid not null references organizations on delete cascade,
  action          text not null check (action in ('move', 'group-add', 'group-remove', 'select', 'deselect', 'unset')),
  target          text not null check (length(target) between 1 and 200),
  target_name     text not null check (length(target_name) <= 400),
  filter          jsonb not null check (jsonb_typeof(filter) = 'object'),
  caller          jsonb not null check (jsonb_typeof(caller) = 'object'),
  request_id      text not null,
  device_ids      uuid[] not null,
  total           integer not null check (total = cardinality(device_ids)),
  done            integer not null default 0 check (done between 0 and total),
  changed         integer not null default 0 check (changed >= 0),
  refused         integer not null default 0 check (refused >= 0 and changed + refused = done),
  -- The refused devices with their reason ({ device_id, code, message }), the first 1,000.
  refusals        jsonb not null default '[]' check (jsonb_typeof(refusals) = 'array'),
  status          text not null default 'queued' check (status in ('queued', 'running', 'completed', 'failed')),
  error           text check (length(error) <= 1000),
  created_at      timestamptz not null default now_ms(),
  finished_at     timestamptz,
  check ((status in ('completed', 'failed')) = (finished_at is not null)),
  check (status <> 'completed' or done = total)
);
create index device_bulk_jobs_organization on device_bulk_jobs (organization_id, created_at desc);

-- migrate:down
