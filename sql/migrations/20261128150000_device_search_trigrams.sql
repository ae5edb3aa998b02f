-- migrate:up
-- The device list's search (`q`: serial or hostname, ignoring case) by index instead of
-- reading every device of the organization. A prefix (what `q` matches) is a range of a
-- B-tree in pattern order: a few pages, where the trigrams of a prefix most serials share
-- ("bench-0000") read every device's posting lists. The trigram indexes find a pattern
-- anywhere in the text and serve a plan made without the pattern's value. pg_trgm is a
-- trusted extension that ships with PostgreSQL (Debian's postgresql-15 and the embedded
-- one alike), so the database's owner may create it.
create extension if not exists pg_trgm;
create index devices_serial_prefix on devices (organization_id, lower(serial) text_pattern_ops);
create index devices_hostname_prefix on devices (organization_id, lower(hostname) text_pattern_ops);
create index devices_serial_trigrams on devices using gin (lower(serial) gin_trgm_ops);
create index devices_hostname_trigrams on devices using gin (lower(hostname) gin_trgm_ops);

-- migrate:down
