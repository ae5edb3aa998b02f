-- migrate:up
-- Sessions of the customer portal (CONTRACT §21). The cookie's token is stored only as
-- its SHA-256 hash. A session signed in with an organization key names it, so revoking
-- or expiring the key ends the session (checked on every request, and the cascade
-- removes the sessions of a deleted key). An operator session has no key; it stores the
-- hash of the operator token it was opened with, so a changed ADMIN_TOKEN ends it, and
-- the organization it chose (null until chosen).
create table portal_sessions (
  token_hash          bytea primary key check (octet_length(token_hash) = 32),
  csrf_token          text not null check (length(csrf_token) >= 32),
  api_key_id          uuid references api_keys on delete cascade,
  operator_token_hash bytea check (octet_length(operator_token_hash) = 32),
  organization_id     uuid references organizations on delete cascade,
  created_at          timestamptz not null default now(),
  expires_at          timestamptz not null,
  check ((api_key_id is null) <> (operator_token_hash is null)),
  check (api_key_id is null or organization_id is not null)
);
create index portal_sessions_expires on portal_sessions (expires_at);

-- migrate:down
