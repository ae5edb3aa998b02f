-- migrate:up
-- The device list's search (`q`: serial or hostname, ignoring case) by trigram indexes:
-- a pattern is looked up by its trigrams instead of reading every device of the
-- organization. pg_trgm is a trusted extension that ships with PostgreSQL (Debian's
-- postgresql-15 and the embedded one alike), so the database's owner may create it.
-- The trigrams find a pattern anywhere in the text, a prefix as well.
create extension if not exists pg_trgm;
create index devices_serial_trigrams on devices using gin (lower(serial) gin_trgm_ops);
create index devices_hostname_trigrams on devices using gin (lower(hostname) gin_trgm_ops);

-- migrate:down
