/**
 * A system root in a folder where real apt and dpkg install packages, as apt's own test suite
 * does: dpkg runs with `--root` (and `--force-not-root`), apt reads only
 * this root's configuration (APT_CONFIG), and a local repository (`file:`) serves two
 * suites. What it holds:
 *
 * - `fleet-test-pkg` 1.0-1 installed (automatically, as a dependency would be), with a
 *   configuration file changed here; 1.1-1 in the suite `bookworm-security` (its Release
 *   says so: a security suite to the agent).
 * - `fleet-other-pkg` 1.0-1 installed; 1.1-1 in `bookworm-updates` (not a security suite).
 *
 * The agent's steps read it as they read a device: FLEET_DPKG_DIR `dpkgDir`, FLEET_APT_LISTS
 * `lists`, and `env` (APT_CONFIG) for apt's downloads and dpkg.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export const SECURITY_PKG = { name: 'fleet-test-pkg', installed: '1.0-1', candidate: '1.1-1' };
export const OTHER_PKG = { name: 'fleet-other-pkg', installed: '1.0-1', candidate: '1.1-1' };
/** The configuration file of fleet-test-pkg (in the root), changed after its install. */
export const CONFFILE = 'etc/fleet-test.conf';
export const CHANGED_CONF = 'changed on the device\n';

export interface AptRoot {
  root: string;
  dpkgDir: string;
  lists: string;
  /** The repository's folder (its pool holds the .deb files apt downloads). */
  repo: string;
  env: { APT_CONFIG: string };
}

async function buildPackage(dir: string, name: string, version: string): Promise<string> {
  const tree = join(dir, 'build', `${name}_${version}`);
  await mkdir(join(tree, 'DEBIAN'), { recursive: true });
  await mkdir(join(tree, 'usr/share/doc', name), { recursive: true });
  await writeFile(
    join(tree, 'DEBIAN/control'),
    [
      `Package: ${name}`,
      `Version: ${version}`,
      'Architecture: all',
      'Maintainer: Fleet tests <tests@fleet.invalid>',
      'Section: misc',
      'Priority: optional',
      'Description: a package of the fleet agent tests',
      '',
    ].join('\n'),
  );
  await writeFile(join(tree, 'usr/share/doc', name, 'README'), `${name} ${version}\n`);
  if (name === SECURITY_PKG.name) {
    await mkdir(join(tree, 'etc'), { recursive: true });
    await writeFile(join(tree, CONFFILE), `shipped with ${version}\n`);
    await writeFile(join(tree, 'DEBIAN/conffiles'), `/${CONFFILE}\n`);
  }
  const deb = join(dir, 'build', `${name}_${version}_all.deb`);
  await run('dpkg-deb', ['--root-owner-group', '-Zgzip', '--build', tree, deb]);
  return deb;
}

/** Runs dpkg-scanpackages for one suite of the repository. */
async function suite(repo: string, name: string, debs: string[], arch: string): Promise<void> {
  const pool = join(repo, 'pool', name);
  await mkdir(pool, { recursive: true });
  for (const deb of debs) await run('cp', [deb, pool]);
  const binary = join(repo, 'dists', name, 'main', `binary-${arch}`);
  await mkdir(binary, { recursive: true });
  const { stdout: packages } = await run('dpkg-scanpackages', ['-m', `pool/${name}`, '/dev/null'], { cwd: repo });
  await writeFile(join(binary, 'Packages'), packages);
  // With its date and the index's hash: apt keeps an index only when the Release names it.
  const sha256 = createHash('sha256').update(packages).digest('hex');
  await writeFile(
    join(repo, 'dists', name, 'Release'),
    [
      'Origin: Fleet Test',
      'Label: Fleet Test',
      `Suite: ${name}`,
      `Codename: ${name}`,
      `Date: ${new Date().toUTCString()}`,
      `Architectures: ${arch}`,
      'Components: main',
      'SHA256:',
      ` ${sha256} ${Buffer.byteLength(packages)} main/binary-${arch}/Packages`,
      '',
    ].join('\n'),
  );
}

export async function makeAptRoot(dir: string): Promise<AptRoot> {
  const root = join(dir, 'root');
  const repo = join(dir, 'repo');
  const arch = (await run('dpkg', ['--print-architecture'])).stdout.trim();
  for (const d of [
    'var/lib/dpkg/updates',
    'var/lib/dpkg/info',
    'var/log/apt',
    'var/cache/apt/archives/partial',
    'var/lib/apt/lists/partial',
    'etc/apt/apt.conf.d',
    'etc/apt/preferences.d',
    'etc/apt/sources.list.d',
  ]) {
    await mkdir(join(root, d), { recursive: true });
  }
  await writeFile(join(root, 'var/lib/dpkg/status'), '');
  await writeFile(join(root, 'var/lib/dpkg/available'), '');

  const debs = {
    securityOld: await buildPackage(dir, SECURITY_PKG.name, SECURITY_PKG.installed),
    securityNew: await buildPackage(dir, SECURITY_PKG.name, SECURITY_PKG.candidate),
    otherOld: await buildPackage(dir, OTHER_PKG.name, OTHER_PKG.installed),
    otherNew: await buildPackage(dir, OTHER_PKG.name, OTHER_PKG.candidate),
  };
  await suite(repo, 'bookworm-security', [debs.securityNew], arch);
  await suite(repo, 'bookworm-updates', [debs.otherNew], arch);

  // dpkg in this root (--force-not-root: a test that is not root installs as itself).
  const dpkg = join(dir, 'dpkg');
  await writeFile(
    dpkg,
    [
      '#!/bin/sh',
      `exec dpkg --root="${root}" --admindir="${root}/var/lib/dpkg" --log="${root}/var/log/dpkg.log" \\`,
      '  --force-not-root --force-bad-path "$@"',
      '',
    ].join('\n'),
  );
  await chmod(dpkg, 0o755);
  await writeFile(
    join(root, 'etc/apt/sources.list'),
    `deb [trusted=yes] file:${repo} bookworm-security main\ndeb [trusted=yes] file:${repo} bookworm-updates main\n`,
  );
  const aptConfig = join(dir, 'apt.conf');
  await writeFile(
    aptConfig,
    [
      `Dir "${root}/";`,
      `Dir::State::status "${root}/var/lib/dpkg/status";`,
      `Dir::Etc::parts "${root}/etc/apt/apt.conf.d";`,
      `Dir::Bin::dpkg "${dpkg}";`,
      `Dir::Bin::Methods "/usr/lib/apt/methods";`,
      `Dir::Log "${root}/var/log/apt";`,
      '',
    ].join('\n'),
  );
  const env = { APT_CONFIG: aptConfig };
  const opts = { env: { ...process.env, ...env } };
  await run(dpkg, ['-i', debs.securityOld, debs.otherOld], opts);
  await writeFile(join(root, CONFFILE), CHANGED_CONF);
  await run('apt-mark', ['auto', SECURITY_PKG.name], opts);
  await run('apt-get', ['-q', 'update'], opts);
  return { root, dpkgDir: join(root, 'var/lib/dpkg'), lists: join(root, 'var/lib/apt/lists'), repo, env };
}

/** The version of `name` installed in the root (empty when none). */
export async function installedVersion(apt: AptRoot, name: string): Promise<string> {
  const { stdout } = await run('dpkg-query', [`--admindir=${apt.dpkgDir}`, '-W', `-f=\${Version}`, name]).catch(() => ({
    stdout: '',
  }));
  return stdout;
}

/** The packages apt-mark counts as installed automatically in the root. */
export async function autoInstalled(apt: AptRoot): Promise<string[]> {
  const { stdout } = await run('apt-mark', ['showauto'], { env: { ...process.env, ...apt.env } });
  return stdout.split('\n').filter(Boolean);
}
