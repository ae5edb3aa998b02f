-- migrate:up
-- The agent version the device's last check-in sent (`agent_version` of the check-in body),
-- shown on the device. Written only when it differs from the one kept: an agent sends it
-- with every check-in, and the device row is not written on an unchanged one.
alter table devices add column agent_version text check (length(agent_version) <= 100);

-- migrate:down
