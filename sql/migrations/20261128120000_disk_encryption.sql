-- migrate:up
-- Disk encryption: a template's partitioning says how its disk is encrypted (`encryption`,
-- an object exactly when the scheme is luks-lvm, else null), and the service holds each
-- device's recovery keys, sealed (AES-256-GCM under DISK_KEY_ENCRYPTION_KEY; the plain key
-- never reaches the database).
update templates
set partitioning = partitioning || '{"encryption": {"type": "luks2", "unlock": "tpm2"}}'
where partitioning ->> 'scheme' = 'luks-lvm';
update templates
set partitioning = partitioning || '{"encryption": null}'
where partitioning ->> 'scheme' <> 'luks-lvm';

insert into templates (id, name, backend, workspace, partitioning, installation, is_default) values
  ('6d1f4c2a-3b5e-4f70-9a1d-0c2e8b7a5d04', 'Ubuntu Verschlüsselt', 'ubuntu', 'standard',
   '{"scheme": "luks-lvm", "root_filesystem": "ext4", "encryption": {"type": "luks2", "unlock": "tpm2"}}',
   '{"locale": "de_DE.UTF-8", "keyboard": "de", "timezone": "Europe/Berlin", "encryption": true, "packages": []}', false);

-- (Partitioning that is no object is templates_partitioning_object's to refuse.)
alter table templates add constraint templates_partitioning_encryption check (
  jsonb_typeof(partitioning) <> 'object' or case when partitioning ->> 'scheme' = 'luks-lvm'
    then coalesce(partitioning -> 'encryption' ->> 'type' = 'luks2'
                  and partitioning -> 'encryption' ->> 'unlock' in ('tpm2', 'passphrase'), false)
    else coalesce(partitioning -> 'encryption' = 'null'::jsonb, false)
  end
);

-- One row per escrowed recovery key. The sealed key is bound to (device, LUKS UUID, key
-- slot), which never change for a row: a sealed value copied onto another row does not open.
-- `replaced_by`: the key that an agent's rotation escrowed in its place.
create table disk_keys (
  id uuid primary key default gen_random_uuid(),
  organization_id uuid not null references organizations (id) on delete cascade,
  device_id uuid not null references devices (id) on delete cascade,
  device_path text not null check (length(device_path) between 1 and 256),
  luks_uuid text not null check (luks_uuid ~ '^[0-9a-f-]{1,64}$'),
  keyslot integer not null check (keyslot between 0 and 31),
  key_sealed jsonb not null check (jsonb_typeof(key_sealed) = 'object'),
  status text not null default 'escrowed' check (status in ('escrowed', 'verified', 'missing', 'rotated')),
  escrowed_at timestamptz not null default now_ms(),
  verified_at timestamptz,
  revealed_at timestamptz,
  rotated_at timestamptz,
  replaced_by uuid references disk_keys (id) on delete set null,
  check ((status = 'rotated') = (rotated_at is not null))
);
-- A retried escrow of the same slot (its 201 lost) replaces the row, never adds one.
create unique index disk_keys_slot on disk_keys (device_id, luks_uuid, keyslot) where status <> 'rotated';
create index disk_keys_device on disk_keys (device_id, escrowed_at, id);
create index disk_keys_organization on disk_keys (organization_id, device_id) where status <> 'rotated';
-- The check-in's probe for a revealed key to rotate: empty for nearly every device.
create index disk_keys_rotation_due on disk_keys (device_id, revealed_at)
  where revealed_at is not null and status in ('escrowed', 'verified');

-- migrate:down
