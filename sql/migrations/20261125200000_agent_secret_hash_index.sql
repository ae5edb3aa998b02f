-- migrate:up
-- Every check-in finds its device by the SHA-256 of its secret: an equality probe of a
-- random 32-byte key. A hash index answers it from one bucket page and is smaller than the
-- unique B-tree, so more of it and of the device rows stays in the buffers of a large
-- fleet. An exclusion constraint over that index keeps the hashes unique (PostgreSQL has no
-- unique hash index), so the index count stays the same. The build locks `devices`: check-ins
-- wait for it, so run it in a quiet hour (README, production).
alter table devices
  add constraint devices_agent_secret_hash_excl exclude using hash (agent_secret_hash with =),
  drop constraint devices_agent_secret_hash_key;

-- migrate:down
