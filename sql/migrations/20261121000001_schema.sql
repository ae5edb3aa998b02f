-- migrate:up
-- The complete data model of spec.md and CONTRACT.md. Invariants live here where the
-- database can hold them: foreign keys that also pin the organization, partial unique
-- indexes, checks on states and quotas.

-- created_at columns are truncated to milliseconds so that a JavaScript Date round-trips
-- exactly and keyset cursors built from it stay exact.
create function now_ms() returns timestamptz
  language sql stable as $$ select date_trunc('milliseconds', now()) $$;

create table organizations (
  id            uuid primary key default gen_random_uuid(),
  name          text not null check (length(name) between 1 and 200),
  kontakt_name  text,
  adresse       text,
  telefon       text,
  kontakt_email text,
  notizen       text,
  created_at    timestamptz not null default now_ms()
);

-- One classic activation code per organization; rotation replaces it in place.
-- Stored normalized (upper case, with dashes) so the lookup is case-insensitive.
create table activation_codes (
  organization_id uuid primary key references organizations on delete cascade,
  code            text not null unique check (code ~ '^[0-9A-HJKMNP-TV-Z]{5}(-[0-9A-HJKMNP-TV-Z]{5}){3}$'),
  created_at      timestamptz not null default now_ms()
);

-- Org units form one tree per organization. The composite keys make every reference
-- stay inside the organization.
create table org_units (
  id              uuid primary key default gen_random_uuid(),
  organization_id uuid not null references organizations on delete cascade,
  parent_id       uuid,
  name            text not null check (length(name) between 1 and 200),
  protected       boolean not null default false,
  created_at      timestamptz not null default now_ms(),
  unique (id, organization_id),
  foreign key (parent_id, organization_id) references org_units (id, organization_id),
  check (parent_id is null or parent_id <> id),
  check (not protected or parent_id is null)
);
create unique index org_units_one_protected_per_org on org_units (organization_id) where protected;
create index org_units_parent on org_units (parent_id);
create index org_units_org_created on org_units (organization_id, created_at, id);

create table groups (
  id              uuid primary key default gen_random_uuid(),
  organization_id uuid not null references organizations on delete cascade,
  name            text not null check (length(name) between 1 and 200),
  created_at      timestamptz not null default now_ms(),
  unique (id, organization_id)
);
create index groups_org_created on groups (organization_id, created_at, id);

-- Catalog data (seeded; read-only through the API).
create table backends (
  key          text primary key,
  name         text not null,
  distribution text not null,
  preferred    boolean not null default false
);
create unique index backends_one_preferred on backends (preferred) where preferred;

create table kategorien (
  key  text primary key,
  name text not null
);

create table merkmale (
  key                text primary key,
  name               text not null,
  kategorie          text not null references kategorien,
  im_auftragskatalog boolean not null default false
);

-- Merkmal to Ansible role, per backend.
create table blueprints (
  merkmal      text not null references merkmale,
  backend      text not null references backends,
  ansible_role text not null,
  primary key (merkmal, backend)
);

create table workspaces (
  key  text primary key,
  name text not null
);

create table workspace_merkmale (
  workspace text not null references workspaces,
  merkmal   text not null references merkmale,
  primary key (workspace, merkmal)
);

create table templates (
  id           uuid primary key default gen_random_uuid(),
  name         text not null unique,
  backend      text not null references backends,
  workspace    text not null references workspaces,
  partitioning jsonb not null,
  installation jsonb not null default '{}' check (jsonb_typeof(installation) = 'object'),
  is_default   boolean not null default false,
  created_at   timestamptz not null default now_ms()
);
create unique index templates_one_default_per_backend on templates (backend) where is_default;

create table enrollment_sessions (
  id              uuid primary key default gen_random_uuid(),
  organization_id uuid not null references organizations on delete cascade,
  template_id     uuid not null references templates,
  expires_at      timestamptz not null,
  max_devices     integer not null check (max_devices >= 1),
  devices_used    integer not null default 0,
  revoked_at      timestamptz,
  created_at      timestamptz not null default now_ms(),
  unique (id, organization_id),
  -- The quota holds in the database, whatever the application does.
  check (devices_used between 0 and max_devices)
);
create index enrollment_sessions_org_created on enrollment_sessions (organization_id, created_at, id);

-- template_id null means "not yet resolved": the device behaves as if assigned the
-- default template of the preferred backend (see the device_templates view below).
create table devices (
  id                     uuid primary key default gen_random_uuid(),
  organization_id        uuid not null references organizations on delete cascade,
  serial                 text not null check (length(serial) between 1 and 128),
  hostname               text check (length(hostname) between 1 and 253),
  oe_id                  uuid not null,
  template_id            uuid references templates,
  enrollment_session_id  uuid,
  deprovisioned_at       timestamptz,
  archived_at            timestamptz,
  agent_secret_hash      bytea unique check (octet_length(agent_secret_hash) = 32),
  agent_secret_issued_at timestamptz,
  agent_last_checkin     timestamptz,
  created_at             timestamptz not null default now_ms(),
  unique (id, organization_id),
  foreign key (oe_id, organization_id) references org_units (id, organization_id),
  foreign key (enrollment_session_id, organization_id) references enrollment_sessions (id, organization_id),
  check ((agent_secret_hash is null) = (agent_secret_issued_at is null))
);
-- One non-archived device per organization and serial.
create unique index devices_live_serial on devices (organization_id, serial) where archived_at is null;
create index devices_org_live on devices (organization_id, created_at, id) where archived_at is null;
create index devices_oe on devices (oe_id);

-- Hardware as last reported, kept apart from the hot devices row.
create table device_hardware (
  device_id   uuid primary key references devices on delete cascade,
  hardware    jsonb not null check (jsonb_typeof(hardware) = 'object'),
  reported_at timestamptz not null default now()
);

create table group_members (
  group_id        uuid not null,
  device_id       uuid not null,
  organization_id uuid not null,
  created_at      timestamptz not null default now_ms(),
  primary key (group_id, device_id),
  foreign key (group_id, organization_id) references groups (id, organization_id) on delete cascade,
  foreign key (device_id, organization_id) references devices (id, organization_id) on delete cascade
);
create index group_members_device on group_members (device_id);

-- Sparse present/absent Merkmal overrides at three levels. No row = unset (inherit).
create table device_merkmale (
  device_id  uuid not null references devices on delete cascade,
  merkmal    text not null references merkmale,
  state      text not null check (state in ('present', 'absent')),
  optionen   jsonb not null default '{}' check (jsonb_typeof(optionen) = 'object'),
  updated_at timestamptz not null default clock_timestamp(),
  primary key (device_id, merkmal)
);

create table org_unit_merkmale (
  org_unit_id uuid not null references org_units on delete cascade,
  merkmal     text not null references merkmale,
  state       text not null check (state in ('present', 'absent')),
  optionen    jsonb not null default '{}' check (jsonb_typeof(optionen) = 'object'),
  updated_at  timestamptz not null default clock_timestamp(),
  primary key (org_unit_id, merkmal)
);

create table group_merkmale (
  group_id   uuid not null references groups on delete cascade,
  merkmal    text not null references merkmale,
  state      text not null check (state in ('present', 'absent')),
  optionen   jsonb not null default '{}' check (jsonb_typeof(optionen) = 'object'),
  updated_at timestamptz not null default clock_timestamp(),
  primary key (group_id, merkmal)
);

create table device_merkmal_events (
  id         uuid primary key default gen_random_uuid(),
  device_id  uuid not null references devices on delete cascade,
  merkmal    text not null references merkmale,
  type       text not null check (type in ('selected', 'deselected', 'applied', 'apply_failed', 'removed', 'remove_failed')),
  payload    jsonb not null default '{}' check (jsonb_typeof(payload) = 'object'),
  created_at timestamptz not null default now_ms()
);
create index device_merkmal_events_device_newest on device_merkmal_events (device_id, created_at desc, id desc);

-- One live bootstrap token per device: a new resolve replaces it, a bootstrap deletes it.
create table bootstrap_tokens (
  device_id  uuid primary key references devices on delete cascade,
  token_hash bytea not null unique check (octet_length(token_hash) = 32),
  expires_at timestamptz not null,
  created_at timestamptz not null default now_ms()
);

-- Failed activation attempts per client address, shared by every API instance.
create table activation_failures (
  client_key text not null,
  failed_at  timestamptz not null default now()
);
create index activation_failures_client on activation_failures (client_key, failed_at);

create table iso_builds (
  id              uuid primary key default gen_random_uuid(),
  organization_id uuid not null references organizations on delete cascade,
  status          text not null default 'pending' check (status in ('pending', 'running', 'completed', 'failed')),
  progress        integer not null default 0 check (progress between 0 and 100),
  created_at      timestamptz not null default now_ms(),
  started_at      timestamptz,
  finished_at     timestamptz,
  expires_at      timestamptz,
  size_bytes      bigint check (size_bytes >= 0),
  sha256          text check (sha256 ~ '^[0-9a-f]{64}$'),
  error           text,
  file_name       text,
  check (status <> 'completed' or (
    finished_at is not null and expires_at = finished_at + interval '7 days'
    and size_bytes is not null and sha256 is not null and file_name is not null and progress = 100)),
  check (status = 'completed' or expires_at is null)
);
create index iso_builds_org_newest on iso_builds (organization_id, created_at desc, id desc);
create index iso_builds_expiry on iso_builds (expires_at) where status = 'completed';

-- A device without an assignment behaves as if assigned the default template of the
-- preferred backend. This view is the one place that rule lives.
create view device_templates as
select d.id as device_id, t.id as template_id, t.backend, t.workspace
from devices d
join templates t on t.id = coalesce(d.template_id, (
  select dt.id from templates dt join backends b on b.key = dt.backend
  where b.preferred and dt.is_default));

-- migrate:down
