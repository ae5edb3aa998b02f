-- migrate:up
-- The legacy partitioning value "default" becomes { scheme: "single", root_filesystem: "ext4" };
-- from now on partitioning is always an object with both keys.
update templates
set partitioning = '{"scheme": "single", "root_filesystem": "ext4"}'
where partitioning = '"default"';

alter table templates add constraint templates_partitioning_object check (
  jsonb_typeof(partitioning) = 'object'
  and jsonb_typeof(partitioning -> 'scheme') = 'string'
  and jsonb_typeof(partitioning -> 'root_filesystem') = 'string'
);

-- migrate:down
