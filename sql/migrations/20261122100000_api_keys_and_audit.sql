-- migrate:up
-- Organization API keys (CONTRACT §12): only the SHA-256 hash of a key is stored; `prefix`
-- (its first 12 characters) lets a person recognise it in a list.
create table api_keys (
  id              uuid primary key default gen_random_uuid(),
  organization_id uuid not null references organizations on delete cascade,
  name            text not null check (length(name) between 1 and 200),
  role            text not null check (role in ('admin', 'viewer')),
  prefix          text not null,
  key_hash        bytea not null unique check (octet_length(key_hash) = 32),
  created_at      timestamptz not null default now(),
  expires_at      timestamptz,
  last_used_at    timestamptz,
  revoked_at      timestamptz
);
create index api_keys_organization on api_keys (organization_id, created_at, id);

-- The audit log (CONTRACT §13): one row per successful write by the operator or an
-- organization key, written in the transaction of the change. `organization_id` is kept
-- without a foreign key on purpose: deleting an organization must not erase who did what.
create table audit_events (
  id              uuid primary key default gen_random_uuid(),
  seq             bigint generated always as identity,
  organization_id uuid not null,
  actor           jsonb not null check (jsonb_typeof(actor) = 'object'),
  action          text not null,
  target_type     text not null,
  target_id       uuid,
  request_id      text not null,
  details         jsonb not null default '{}' check (jsonb_typeof(details) = 'object'),
  created_at      timestamptz not null default now()
);
create unique index audit_events_newest on audit_events (organization_id, seq desc);
create index audit_events_target on audit_events (organization_id, target_id, seq desc);

-- migrate:down
