/**
 * The agent's `apply-updates` step (fleet_agent_helpers.py; CONTRACT §28 `apply_updates`)
 * with real apt, python3-apt and dpkg on a system root in a folder (test/support/apt_root.ts):
 * security updates only by default, by the inventory's rule (§27); everything with
 * `security_only: false`; changed configuration files kept; a package's automatic flag kept;
 * `details.upgraded` and `details.reboot_required`; apt's failure as exit 100. The upgrade on
 * a booted Debian device is the VM test's (test/device/).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type AptRoot,
  autoInstalled,
  CHANGED_CONF,
  CONFFILE,
  installedVersion,
  makeAptRoot,
  OTHER_PKG,
  SECURITY_PKG,
} from '../support/apt_root.ts';
import { missingTools } from '../support/tools.ts';

const HELPERS = fileURLToPath(new URL('../../jobs/iso/installer/agent/fleet_agent_helpers.py', import.meta.url));

const dir = mkdtempSync(join(tmpdir(), 'fleet-agent-updates-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

let counter = 0;

async function record(parameters: unknown): Promise<string> {
  const rec = join(dir, `rec${++counter}`);
  await mkdir(rec, { mode: 0o700 });
  await writeFile(
    join(rec, 'action.json'),
    JSON.stringify({ id: '6f1c2b7e-8d4a-4c55-9b1e-2a7d6c0f9e41', type: 'apply_updates', parameters }),
  );
  return rec;
}

/** The step as fleet-agent runs it, with the distribution's python3 (python3-apt is not on every PATH's python3). */
function applyUpdates(apt: AptRoot, rec: string) {
  const out = spawnSync('/usr/bin/python3', [HELPERS, 'apply-updates', rec, apt.dpkgDir, apt.lists], {
    encoding: 'utf8',
    timeout: 120_000,
    env: { ...process.env, ...apt.env },
  });
  return { code: out.status, stdout: out.stdout, stderr: out.stderr };
}

async function details(rec: string): Promise<any> {
  return JSON.parse(await readFile(join(rec, 'details.json'), 'utf8'));
}

/** What the helpers say of a reboot on this machine (the same rule the step applies). */
function rebootRequired(): boolean {
  const out = spawnSync(
    '/usr/bin/python3',
    [
      '-c',
      'import sys, os; sys.path.insert(0, sys.argv[1]); import fleet_agent_helpers as h, apt_pkg\n' +
        'apt_pkg.init_system()\nprint(h.reboot_required(apt_pkg.version_compare, os.uname().release))',
      join(HELPERS, '..'),
    ],
    { encoding: 'utf8' },
  );
  expect(out.status, out.stderr).toBe(0);
  return out.stdout.trim() === 'True';
}

describe.skipIf(missingTools('python3-apt', 'dpkg'))(
  'apply-updates, with real apt and dpkg',
  { timeout: 120_000 },
  () => {
    let apt: AptRoot;

    beforeAll(async () => {
      apt = await makeAptRoot(dir);
    }, 120_000);

    it('security only (the default): the security suite’s update, no other; the changed configuration file kept', async () => {
      expect(await installedVersion(apt, SECURITY_PKG.name)).toBe(SECURITY_PKG.installed);
      const rec = await record({});
      const run = applyUpdates(apt, rec);
      expect(run.code, run.stdout + run.stderr).toBe(0);
      expect(run.stdout).toContain(
        `1 security updates to apply\n  ${SECURITY_PKG.name} ${SECURITY_PKG.installed} -> ${SECURITY_PKG.candidate}\n`,
      );
      expect(run.stdout).toContain('Using current old file as you requested');
      expect(run.stdout.trim().split('\n').at(-1)).toMatch(/^1 packages upgraded(, reboot required)?$/);
      expect(await details(rec)).toEqual({
        upgraded: [{ name: SECURITY_PKG.name, from: SECURITY_PKG.installed, to: SECURITY_PKG.candidate }],
        reboot_required: rebootRequired(),
      });
      expect(await installedVersion(apt, SECURITY_PKG.name)).toBe(SECURITY_PKG.candidate);
      expect(await installedVersion(apt, OTHER_PKG.name)).toBe(OTHER_PKG.installed);
      // --force-confold: the device's change stays, the package's new file beside it.
      expect(await readFile(join(apt.root, CONFFILE), 'utf8')).toBe(CHANGED_CONF);
      expect(await readFile(join(apt.root, `${CONFFILE}.dpkg-dist`), 'utf8')).toBe(
        `shipped with ${SECURITY_PKG.candidate}\n`,
      );
      // An automatically installed package stays so (autoremove may still take it).
      expect(await autoInstalled(apt)).toEqual([SECURITY_PKG.name]);
    });

    it('security only, with nothing left to apply: exit 0, nothing upgraded', async () => {
      const rec = await record({ security_only: true });
      const run = applyUpdates(apt, rec);
      expect(run.code, run.stdout + run.stderr).toBe(0);
      expect(run.stdout).toContain('0 security updates to apply\n');
      expect((await details(rec)).upgraded).toEqual([]);
      expect(await installedVersion(apt, OTHER_PKG.name)).toBe(OTHER_PKG.installed);
    });

    it('security_only false: every pending update', async () => {
      const rec = await record({ security_only: false });
      const run = applyUpdates(apt, rec);
      expect(run.code, run.stdout + run.stderr).toBe(0);
      expect(run.stdout).toContain(
        `1 updates to apply\n  ${OTHER_PKG.name} ${OTHER_PKG.installed} -> ${OTHER_PKG.candidate}\n`,
      );
      expect((await details(rec)).upgraded).toEqual([
        { name: OTHER_PKG.name, from: OTHER_PKG.installed, to: OTHER_PKG.candidate },
      ]);
      expect(await installedVersion(apt, OTHER_PKG.name)).toBe(OTHER_PKG.candidate);
    });

    it('apt cannot download the package: exit 100 with apt’s reason, nothing upgraded', async () => {
      // A new candidate whose file is not in the pool.
      const list = (await readdir(apt.lists)).find((f) => f.includes('bookworm-updates') && f.endsWith('_Packages'));
      const packages = join(apt.lists, list!);
      const text = await readFile(packages, 'utf8');
      await writeFile(
        packages,
        text.replaceAll(OTHER_PKG.candidate, '1.2-1').replace(/Filename: .*/, 'Filename: pool/missing_1.2-1_all.deb'),
      );
      const rec = await record({ security_only: false });
      const run = applyUpdates(apt, rec);
      expect(run.code).toBe(100);
      expect(run.stdout).toContain(`1 updates to apply\n  ${OTHER_PKG.name} ${OTHER_PKG.candidate} -> 1.2-1\n`);
      expect(run.stdout).toMatch(/apt failed: .*missing_1\.2-1_all\.deb/);
      expect((await details(rec)).upgraded).toEqual([]);
      expect(await installedVersion(apt, OTHER_PKG.name)).toBe(OTHER_PKG.candidate);
    });

    it('security_only that is not a boolean: exit 1 naming the step, nothing done', async () => {
      const rec = await record({ security_only: 'yes' });
      expect(applyUpdates(apt, rec)).toEqual({
        code: 1,
        stdout: '',
        stderr: 'apply-updates: security_only must be true or false\n',
      });
    });
  },
);
