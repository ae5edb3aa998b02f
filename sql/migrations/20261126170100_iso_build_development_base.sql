-- migrate:up
-- Whether the image was built from the development base image (no ISO_BASE_IMAGE for its
-- backend on the build host): a valid ISO 9660 image that is not bootable. The build knows
-- it when it starts its script; the API and the portal say so before the download.
alter table iso_builds add column development_base boolean not null default false;

-- migrate:down
