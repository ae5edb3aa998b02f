-- migrate:up
-- The seed catalog of CONTRACT §4, the same in every installation. The standard templates
-- are stored with the legacy partitioning value "default", as they were in the field;
-- the next migration converts it.

insert into backends (key, name, distribution, preferred) values
  ('debian', 'Debian', 'Debian 12', true),
  ('ubuntu', 'Ubuntu', 'Ubuntu 24.04 LTS', false);

insert into kategorien (key, name) values
  ('system', 'System'),
  ('app-store', 'App-Store'),
  ('individuelle-systemkonfiguration', 'Individuelle Systemkonfiguration');

insert into merkmale (key, name, kategorie, im_auftragskatalog) values
  ('basis', 'Basissystem', 'system', false),
  ('desktop', 'Desktop-Umgebung', 'system', false),
  ('provisioning-agent', 'Provisioning-Agent', 'system', false),
  ('firefox', 'Firefox', 'app-store', true),
  ('libreoffice', 'LibreOffice', 'app-store', true),
  ('onlyoffice', 'ONLYOFFICE', 'app-store', true),
  ('qgis', 'QGIS', 'app-store', true),
  ('gastsitzung', 'Gastsitzung', 'individuelle-systemkonfiguration', true);

-- Role names are distribution-independent: both backends share each role.
insert into blueprints (merkmal, backend, ansible_role)
select m.merkmal, b.key, m.ansible_role
from (values
  ('basis', 'base'),
  ('desktop', 'desktop'),
  ('provisioning-agent', 'provisioning_agent'),
  ('firefox', 'firefox'),
  ('libreoffice', 'libreoffice'),
  ('onlyoffice', 'onlyoffice'),
  ('qgis', 'qgis'),
  ('gastsitzung', 'guest_session')
) as m (merkmal, ansible_role)
cross join backends b;

insert into workspaces (key, name) values ('standard', 'Standard-Arbeitsplatz');

insert into workspace_merkmale (workspace, merkmal) values
  ('standard', 'basis'),
  ('standard', 'desktop'),
  ('standard', 'provisioning-agent'),
  ('standard', 'firefox');

insert into templates (id, name, backend, workspace, partitioning, installation, is_default) values
  ('6d1f4c2a-3b5e-4f70-9a1d-0c2e8b7a5d01', 'Debian Standard', 'debian', 'standard', '"default"',
   '{"locale": "de_DE.UTF-8", "keyboard": "de", "timezone": "Europe/Berlin", "encryption": false, "packages": []}', true),
  ('6d1f4c2a-3b5e-4f70-9a1d-0c2e8b7a5d02', 'Ubuntu Standard', 'ubuntu', 'standard', '"default"',
   '{"locale": "de_DE.UTF-8", "keyboard": "de", "timezone": "Europe/Berlin", "encryption": false, "packages": []}', true),
  ('6d1f4c2a-3b5e-4f70-9a1d-0c2e8b7a5d03', 'Debian Verschlüsselt', 'debian', 'standard',
   '{"scheme": "luks-lvm", "root_filesystem": "ext4"}',
   '{"locale": "de_DE.UTF-8", "keyboard": "de", "timezone": "Europe/Berlin", "encryption": true, "packages": []}', false);

-- migrate:down
