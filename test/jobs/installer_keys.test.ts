/**
 * Every debconf key the Debian image writes (the preseed, and the selections install.sh
 * feeds to debconf at partman/early_command) exists in Debian 12's installer, with a type
 * it accepts: held against Debian's own data, vendored under test/jobs/fixtures/debian12/
 * (the installation guide's example preseed, and the templates of the installer packages;
 * each file names its source). A key that d-i does not know is silently ignored, which is
 * how `partman-crypto/erase_disks` once went unnoticed.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { debianPreseed, type InstallTemplate } from '../../jobs/iso/installer_config.ts';

const FIXTURES = join(import.meta.dirname, 'fixtures/debian12');

/** Key → the types Debian 12 declares or uses for it. */
function known(): Map<string, Set<string>> {
  const types = new Map<string, Set<string>>();
  const add = (key: string, type: string) => types.set(key, (types.get(key) ?? new Set()).add(type));
  for (const line of readFileSync(join(FIXTURES, 'templates.txt'), 'utf8').split('\n')) {
    const m = /^([^#\s]\S*) (\S+)$/.exec(line);
    if (m) add(m[1]!, m[2]!);
  }
  // The example's lines, commented out or not: "#d-i partman-auto/disk string /dev/sda".
  for (const line of readFileSync(join(FIXTURES, 'example-preseed.txt'), 'utf8').split('\n')) {
    const m =
      /^#?\s*([a-z][a-z0-9-]*)\s+([a-z0-9][a-z0-9/_.-]*\/[a-z0-9/_.-]+)\s+(string|boolean|select|multiselect|password|note|text|error)\b/.exec(
        line,
      );
    if (m) add(m[2]!, m[3]!);
  }
  return types;
}

interface Answer {
  owner: string;
  key: string;
  type: string;
}

function answers(text: string): Answer[] {
  return text
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.startsWith('#'))
    .map((line) => {
      const [owner, key, type] = line.split(/\s+/);
      return { owner: owner!, key: key!, type: type! };
    });
}

/** The debconf lines install.sh writes at partman/early_command (its `echo "d-i ..."` lines). */
function selectionsOfInstallSh(): Answer[] {
  const source = readFileSync(join(import.meta.dirname, '../../jobs/iso/installer/install.sh'), 'utf8');
  return [...source.matchAll(/echo "(d-i \S+ \S+)/g)].flatMap((m) => answers(m[1]!));
}

function unknownAnswers(list: Answer[], types = known()): string[] {
  return list
    .filter((a) => !types.get(a.key)?.has(a.type))
    .map((a) => `${a.owner} ${a.key} ${a.type} (Debian 12: ${[...(types.get(a.key) ?? ['unknown'])].join('/')})`);
}

const template = (scheme: string, fs: string): InstallTemplate => ({
  id: '6d1f4c2a-3b5e-4f70-9a1d-0c2e8b7a5d03',
  backend: 'debian',
  partitioning: { scheme, root_filesystem: fs },
  installation: { locale: 'de_DE.UTF-8', keyboard: 'de', timezone: 'Europe/Berlin', packages: ['vim'] },
});

describe("the Debian image's debconf keys, against Debian 12's installer", () => {
  it('the vendored data is what it claims to be', () => {
    const types = known();
    expect(types.get('partman-auto-crypto/erase_disks')).toEqual(new Set(['boolean']));
    expect(types.get('partman/early_command')).toEqual(new Set(['string']));
    expect(types.size).toBeGreaterThan(500);
  });

  it.each([
    ['single', 'ext4'],
    ['luks-lvm', 'xfs'],
  ])('every key of the preseed (%s, %s) exists with its type', (scheme, fs) => {
    const list = answers(debianPreseed(template(scheme, fs)));
    expect(list.length).toBeGreaterThan(30);
    expect(unknownAnswers(list)).toEqual([]);
  });

  it("every key of install.sh's partman selections exists with its type", () => {
    const list = selectionsOfInstallSh();
    expect(list.map((a) => a.key)).toEqual(
      expect.arrayContaining(['partman-auto/disk', 'partman-auto-crypto/erase_disks', 'pkgsel/include']),
    );
    expect(unknownAnswers(list)).toEqual([]);
  });

  it('the check fails for a key d-i does not have, or a wrong type', () => {
    const wrong = answers('d-i partman-crypto/erase_disks boolean false\nd-i partman/early_command boolean true\n');
    expect(unknownAnswers(wrong)).toHaveLength(2);
  });

  it('leaves exactly one question on purpose: the disk passphrase is never preseeded', () => {
    for (const text of [
      debianPreseed(template('luks-lvm', 'ext4')),
      readFileSync(join(import.meta.dirname, '../../jobs/iso/installer/install.sh'), 'utf8'),
    ]) {
      expect(text).not.toMatch(/^d-i partman-crypto\/passphrase/m);
      expect(text).not.toMatch(/echo "d-i partman-crypto\/passphrase/);
    }
  });
});
