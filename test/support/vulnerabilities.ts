/**
 * SQL builders for software inventories (package sets stored by content, a device's
 * inventory row), and the security samples (test/fixtures/vulndata, copied from the
 * shared samples) as file:// URLs.
 */
import { createHash } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import type { Sql } from '../../api/db/client.ts';

export const DEBIAN_SAMPLE = pathToFileURL(
  new URL('../fixtures/vulndata/debian-tracker-sample.json', import.meta.url).pathname,
).href;
export const UBUNTU_SAMPLE_FOLDER = pathToFileURL(
  new URL('../fixtures/vulndata/ubuntu-osv', import.meta.url).pathname,
).href;

export interface TestPackage {
  name: string;
  version: string;
  source?: string;
  source_version?: string;
  arch?: string;
}

/** The package set of these packages (the existing one when a set has the same content). */
export async function insertPackageSet(sql: Sql, packages: TestPackage[]): Promise<number> {
  const rows = packages
    .map((p) => ({
      name: p.name,
      arch: p.arch ?? 'amd64',
      version: p.version,
      source: p.source ?? p.name,
      source_version: p.source_version ?? p.version,
    }))
    .sort((a, b) => (a.name === b.name ? (a.arch < b.arch ? -1 : 1) : a.name < b.name ? -1 : 1));
  const hash = createHash('sha256').update(JSON.stringify(rows)).digest();
  const [set] = await sql<{ id: number }[]>`
    insert into package_sets (content_hash, packages_count) values (${hash}, ${rows.length})
    on conflict (content_hash) do update set packages_count = excluded.packages_count
    returning id`;
  await sql`
    insert into package_set_packages (set_id, name, arch, version, source, source_version)
    select ${set!.id}, * from unnest(${rows.map((r) => r.name)}::text[], ${rows.map((r) => r.arch)}::text[],
      ${rows.map((r) => r.version)}::text[], ${rows.map((r) => r.source)}::text[],
      ${rows.map((r) => r.source_version)}::text[])
    on conflict do nothing`;
  return set!.id;
}

export interface TestOs {
  id: 'debian' | 'ubuntu';
  /** Debian: the codename; Ubuntu: VERSION_ID. */
  release: string;
}

export const BOOKWORM: TestOs = { id: 'debian', release: 'bookworm' };
export const TRIXIE: TestOs = { id: 'debian', release: 'trixie' };
export const NOBLE: TestOs = { id: 'ubuntu', release: '24.04' };
export const JAMMY: TestOs = { id: 'ubuntu', release: '22.04' };

/** Records (or replaces) the device's inventory: its package set on an OS release. */
export async function insertInventory(
  sql: Sql,
  device: { id: string; organization_id: string },
  setId: number,
  os: TestOs,
  extra: { security_pending_count?: number; reboot_required?: boolean } = {},
): Promise<void> {
  const codename = os.id === 'debian' ? os.release : os.release === '24.04' ? 'noble' : 'jammy';
  const versionId = os.id === 'debian' ? (os.release === 'bookworm' ? '12' : '13') : os.release;
  await sql`
    insert into device_inventories
      (device_id, organization_id, package_set_id, os_id, os_version_id, os_codename, release, kernel,
       security_pending_count, reboot_required)
    values (${device.id}, ${device.organization_id}, ${setId}, ${os.id}, ${versionId}, ${codename}, ${os.release},
            '6.1.0-28-amd64', ${extra.security_pending_count ?? 0}, ${extra.reboot_required ?? false})
    on conflict (device_id) do update
      set package_set_id = excluded.package_set_id, release = excluded.release, os_id = excluded.os_id,
          security_pending_count = excluded.security_pending_count, reboot_required = excluded.reboot_required`;
}
