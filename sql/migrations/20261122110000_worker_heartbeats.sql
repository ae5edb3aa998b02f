-- migrate:up
-- Each Graphile Worker of a running build host writes its id here every few seconds. A
-- build whose job is locked by a worker silent for longer than the configured silence
-- (120 s by default) lost its worker: the reap_dead_builds task fails it within minutes,
-- instead of the hourly sweep's two-hour limit. Workers without a row are never reaped.
create table worker_heartbeats (
  worker_id text primary key,
  host      text not null,
  pid       integer not null,
  seen_at   timestamptz not null default now()
);

-- migrate:down
