-- migrate:up
-- Failed activations per client address, one row per address holding the times of its
-- failures in the window. Every attempt reserves its failure in one upsert on this row
-- (the row lock orders concurrent attempts), so a burst cannot pass the limit; an attempt
-- that turns out not to be a guess gives its reservation back. Replaces the row-per-failure
-- table, whose count was read and written in two steps.
create table activation_failure_counts (
  client_key text primary key,
  failures   timestamptz[] not null
);
drop table activation_failures;

-- migrate:down
create table activation_failures (
  client_key text not null,
  failed_at  timestamptz not null default now()
);
create index activation_failures_client on activation_failures (client_key, failed_at);
drop table activation_failure_counts;
