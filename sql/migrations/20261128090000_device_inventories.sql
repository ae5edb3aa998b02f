-- migrate:up
-- What software a device runs, as its agent last reported it.
--
-- Package lists are stored by content: a fleet installed from a few images has a few
-- distinct lists, so devices with the same list share one package_sets row and its
-- package rows, and storage grows with distinct lists, not devices. content_hash is the
-- SHA-256 of the canonical JSON of the sorted package list (not the whole inventory: two
-- devices with the same packages but another kernel share the set).
create table package_sets (
  id bigint generated always as identity primary key,
  content_hash bytea not null unique check (octet_length(content_hash) = 32),
  packages_count integer not null check (packages_count >= 0),
  created_at timestamptz not null default now_ms()
);

create table package_set_packages (
  set_id bigint not null references package_sets (id) on delete cascade,
  name text not null,
  arch text not null,
  version text not null,
  source text not null,
  source_version text not null,
  primary key (set_id, name, arch)
);
-- The device list's `package` filter and matching by source package.
create index package_set_packages_name on package_set_packages (name, set_id);
create index package_set_packages_source on package_set_packages (source, set_id);

-- One row per device that has sent an inventory. `release` is the key the security data
-- is matched on: Debian's codename (bookworm), Ubuntu's VERSION_ID (24.04).
create table device_inventories (
  device_id uuid primary key references devices (id) on delete cascade,
  organization_id uuid not null references organizations (id) on delete cascade,
  package_set_id bigint not null references package_sets (id),
  os_id text not null,
  os_version_id text not null,
  os_codename text not null,
  release text not null,
  kernel text not null,
  pending jsonb not null default '[]' check (jsonb_typeof(pending) = 'array'),
  security_pending_count integer not null default 0,
  reboot_required boolean not null default false,
  luks jsonb check (luks is null or jsonb_typeof(luks) = 'array'),
  inventory_at timestamptz not null default now_ms()
);
create index device_inventories_set on device_inventories (package_set_id, release);
create index device_inventories_organization on device_inventories (organization_id);

-- The hash of the inventory the service holds, on the device row the check-in already
-- reads: comparing the check-in's inventory_hash with it costs no statement of its own.
alter table devices add column inventory_hash bytea check (octet_length(inventory_hash) = 32);

-- migrate:down
