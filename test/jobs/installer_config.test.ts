/** The installer setup written into images (jobs/iso/installer_config.ts): pure, no database. */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import {
  debianPreseed,
  installerFiles,
  InstallerConfigError,
  type InstallTemplate,
  ubuntuAutoinstall,
} from '../../jobs/iso/installer_config.ts';
import { missingTools } from '../support/tools.ts';

function template(overrides: Partial<InstallTemplate> = {}): InstallTemplate {
  return {
    id: '6d1f4c2a-3b5e-4f70-9a1d-0c2e8b7a5d01',
    backend: 'debian',
    partitioning: { scheme: 'single', root_filesystem: 'ext4' },
    installation: { locale: 'de_DE.UTF-8', keyboard: 'de', timezone: 'Europe/Berlin', packages: ['vim', 'htop'] },
    ...overrides,
  };
}

function checkonly(text: string): { status: number | null; stderr: string } {
  const dir = mkdtempSync(join(tmpdir(), 'fleet-preseed-'));
  try {
    writeFileSync(join(dir, 'preseed.cfg'), text);
    return spawnSync('debconf-set-selections', ['--checkonly', join(dir, 'preseed.cfg')], { encoding: 'utf8' });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('Debian preseed', () => {
  it.skipIf(missingTools('debconf-set-selections'))(
    "carries the template's packages and partitioning, and debconf accepts it",
    () => {
      const text = debianPreseed(template({ partitioning: { scheme: 'luks-lvm', root_filesystem: 'xfs' } }));
      expect(text).toContain('d-i pkgsel/include string curl git python3 python3-apt ansible-core vim htop');
      expect(text).toContain('d-i partman-auto-crypto/erase_disks boolean false');
      expect(text).not.toContain('partman-crypto/erase_disks');
      expect(text).toContain('d-i partman-auto/method string crypto');
      expect(text).toContain('d-i partman/default_filesystem string xfs');
      expect(checkonly(text).status).toBe(0);
    },
  );

  it.skipIf(missingTools('debconf-set-selections'))(
    'debconf rejects a broken line, so the check above can fail',
    () => {
      expect(checkonly('d-i partman-auto/method\n').status).not.toBe(0);
    },
  );

  it.each([
    ['a locale with a newline', { installation: { locale: 'de_DE\nd-i passwd/root-password string x' } }],
    ['a keyboard that is not a string', { installation: { keyboard: 7 } }],
    ['a package with a space', { installation: { packages: ['vim htop'] } }],
    ['an unknown scheme', { partitioning: { scheme: 'raid', root_filesystem: 'ext4' } }],
    ['an unknown file system', { partitioning: { scheme: 'single', root_filesystem: 'ntfs' } }],
  ])('refuses %s with an InstallerConfigError', (_case, overrides) => {
    expect(() => debianPreseed(template(overrides as Partial<InstallTemplate>))).toThrow(InstallerConfigError);
  });
});

describe('Ubuntu autoinstall', () => {
  it('encrypts luks-lvm with a password the early command fills in, and never stores one', () => {
    const text = ubuntuAutoinstall(
      template({ backend: 'ubuntu', partitioning: { scheme: 'luks-lvm', root_filesystem: 'ext4' } }),
    );
    const config = parseYaml(text).autoinstall;
    expect(config['interactive-sections']).toBeUndefined();
    expect(text).toContain('      # password: the install passphrase, set by the early command');
    expect(config.storage).toEqual({ layout: { name: 'lvm' } });
    expect(config.packages).toEqual([
      'curl',
      'git',
      'python3',
      'python3-apt',
      'ansible-core',
      'wpasupplicant',
      'vim',
      'htop',
    ]);
    // The storage screen could untick encryption: a late command refuses an unencrypted root.
    expect(config['late-commands']).toEqual([
      'sh /cdrom/fleet/install.sh ubuntu-check-crypt /target',
      'sh /cdrom/fleet/install.sh late /target',
    ]);
    expect(text).not.toMatch(/^\s*password:/m);
  });

  it('refuses a single layout other than ext4 (the direct layout makes ext4 only)', () => {
    const ubuntuXfs = template({ backend: 'ubuntu', partitioning: { scheme: 'single', root_filesystem: 'xfs' } });
    expect(() => installerFiles('ubuntu', ubuntuXfs)).toThrow(/ext4 only/);
  });
});
