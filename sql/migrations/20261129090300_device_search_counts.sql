-- migrate:up
-- The device list's total for a search (`q`, a prefix of serial or hostname) read every
-- match's row in the heap (the two prefix B-trees OR'ed, then `archived_at` and the other
-- column). It is now the serials in the prefix's range, counted from their index alone
-- (index-only: PostgreSQL takes that only from an index that holds the column itself, not
-- just an expression of it, hence `include (serial)`), plus the hostnames in the range of
-- devices whose serial is not (each such row is read for its serial; a hostname rarely
-- matches where the serials share the prefix). Both hold live devices only: the list never
-- shows an archived one.
drop index devices_serial_prefix;
drop index devices_hostname_prefix;
create index devices_serial_prefix on devices (organization_id, lower(serial) text_pattern_ops)
  include (serial) where archived_at is null;
create index devices_hostname_prefix on devices (organization_id, lower(hostname) text_pattern_ops)
  where archived_at is null;

-- migrate:down
