-- migrate:up
-- The distributions' security data and what it finds on the devices.

-- One row per feed the worker reads (debian: the Security Tracker's JSON, ubuntu: OSV
-- records). A failed read keeps the last good entries and records its error here.
create table vulnerability_feeds (
  name text primary key check (name in ('debian', 'ubuntu')),
  source text,
  etag text,
  last_modified text,
  content_sha256 bytea check (octet_length(content_sha256) = 32),
  last_attempt_at timestamptz,
  last_success_at timestamptz,
  last_error text check (length(last_error) <= 1400),
  -- The (CVE, source package, release) entries of the last good read.
  entries integer not null default 0,
  -- Moves whenever the stored entries change: matches made at an older one are redone.
  version bigint not null default 0
);
insert into vulnerability_feeds (name) values ('debian'), ('ubuntu');

-- The entries that can affect a device: one per (CVE, source package, release). Entries
-- that say a release was never affected are counted, not stored. The urgency is already
-- the service's (critical, high, medium, low, unknown, unimportant).
create table vulnerability_entries (
  feed text not null references vulnerability_feeds (name),
  release text not null,
  source text not null,
  cve text not null,
  -- Affected from this version on (Ubuntu's `introduced`); null: every version.
  introduced text,
  -- null: no fix yet.
  fixed_version text,
  urgency text not null check (urgency in ('critical', 'high', 'medium', 'low', 'unknown', 'unimportant'))
);
create index vulnerability_entries_release on vulnerability_entries (feed, release);

-- The worst-first order of urgencies: 0 critical … 5 unimportant.
create function urgency_rank(p_urgency text) returns smallint
  language sql immutable parallel safe
  as $$ select (array_position(array['critical', 'high', 'medium', 'low', 'unknown', 'unimportant'], p_urgency) - 1)::smallint $$;

-- Concatenates arrays over rows (the source packages of a CVE over sets).
create aggregate array_cat_agg(anycompatiblearray) (sfunc = array_cat, stype = anycompatiblearray);

-- What the security data finds in a package set on a release, one row per CVE and source
-- package: stored per distinct set, never per device, so storage and matching time grow
-- with the sets a fleet has.
create table vulnerability_matches (
  package_set_id bigint not null references package_sets (id) on delete cascade,
  release text not null,
  cve text not null,
  source text not null,
  urgency text not null check (urgency_rank(urgency) is not null),
  status text not null check (status in ('fixed_available', 'no_fix')),
  installed_version text not null,
  fixed_version text,
  primary key (package_set_id, release, cve, source)
);
-- The device list's `cve` filter.
create index vulnerability_matches_cve on vulnerability_matches (cve);

-- Which (set, release) pairs are matched, against which version of their feed.
create table vulnerability_matched_sets (
  package_set_id bigint not null references package_sets (id) on delete cascade,
  release text not null,
  feed text not null references vulnerability_feeds (name),
  feed_version bigint not null,
  -- Per urgency, whether any row has it: fleet counts read this, not the matches.
  worst_urgency_rank smallint,
  matched_at timestamptz not null default now_ms(),
  primary key (package_set_id, release)
);

-- An organization's CVEs over its devices that are not archived, recounted after every
-- match that concerns it. A CVE keeps its row when no device is affected any more, so
-- `first_seen_at` and the one `vulnerability.detected` (notified_at) stay once per CVE.
create table organization_vulnerabilities (
  organization_id uuid not null references organizations (id) on delete cascade,
  cve text not null,
  urgency text not null check (urgency_rank(urgency) is not null),
  sources text[] not null,
  devices_affected integer not null check (devices_affected >= 0),
  devices_fix_available integer not null check (devices_fix_available >= 0),
  devices_no_fix integer not null check (devices_no_fix >= 0),
  first_seen_at timestamptz not null default now_ms(),
  notified_at timestamptz,
  primary key (organization_id, cve)
);
create index organization_vulnerabilities_list
  on organization_vulnerabilities (organization_id, devices_affected desc, cve) where devices_affected > 0;

-- migrate:down
