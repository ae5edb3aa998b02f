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
