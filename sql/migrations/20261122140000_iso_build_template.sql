-- migrate:up
-- Installer-ready images (CONTRACT §10): a build may be bound to a template, or to an
-- enrollment session, which fixes the template to its own and becomes the image's credential.
alter table iso_builds
  add column template_id uuid references templates,
  add column enrollment_session_id uuid,
  add foreign key (enrollment_session_id, organization_id)
    references enrollment_sessions (id, organization_id) on delete cascade,
  add check (enrollment_session_id is null or template_id is not null);

-- migrate:down
