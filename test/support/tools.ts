/**
 * The one rule for tests that need a tool of the build host or the device (xorriso, dash,
 * ansible-playbook, Chromium, QEMU, ...): on a machine without it they are skipped, and the
 * run ends with one line per missing tool naming the `apt-get install` that brings it; with
 * `CI=true` a missing tool fails the run instead (`.ci/run` installs them all).
 *
 *   describe.skipIf(missingTools('xorriso', 'dash'))('images', () => { ... });
 *
 * Skips are recorded as files in a folder the global setup provides, so the main process
 * can name them at the end of the run (test files run in forked workers).
 */
import { accessSync, constants, mkdirSync, writeFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { inject } from 'vitest';

/** Each tool a test may need: the Debian package that brings it, and how it is found. */
export const TOOLS = {
  xorriso: { apt: 'xorriso' },
  dash: { apt: 'dash' },
  busybox: { apt: 'busybox' },
  curl: { apt: 'curl' },
  dpkg: { apt: 'dpkg' },
  'debconf-set-selections': { apt: 'debconf' },
  'ansible-playbook': { apt: 'ansible-core' },
  git: { apt: 'git' },
  python3: { apt: 'python3' },
  // The distribution's python3 with apt_pkg (the device agent's pending upgrades).
  'python3-apt': { apt: 'python3-apt', path: '/usr/lib/python3/dist-packages/apt/__init__.py' },
  shellcheck: { apt: 'shellcheck' },
  'systemd-analyze': { apt: 'systemd' },
  chromium: { apt: 'chromium', path: '/usr/bin/chromium' },
  'qemu-system-x86_64': { apt: 'qemu-system-x86' },
  socat: { apt: 'socat' },
  // An emulated TPM 2.0 for QEMU (the VM test's disk bound with clevis).
  swtpm: { apt: 'swtpm' },
  cryptsetup: { apt: 'cryptsetup-bin', path: '/usr/sbin/cryptsetup' },
  blkid: { apt: 'util-linux', path: '/usr/sbin/blkid' },
  unshare: { apt: 'util-linux', path: '/usr/bin/unshare' },
  debootstrap: { apt: 'debootstrap', path: '/usr/sbin/debootstrap' },
  // Debian's PostgreSQL 15, not on PATH: .ci/schema.ts dumps the schema with it.
  'postgresql-15': { apt: 'postgresql-15', path: '/usr/lib/postgresql/15/bin/initdb' },
  'debian-installer-12-netboot-amd64': {
    apt: 'debian-installer-12-netboot-amd64',
    path: '/usr/lib/debian-installer/images/12/amd64/text/debian-installer/amd64/linux',
  },
} as const satisfies Record<string, { apt: string; path?: string }>;

export type Tool = keyof typeof TOOLS;

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function readable(path: string): boolean {
  try {
    accessSync(path, constants.R_OK);
    return true;
  } catch {
    return false;
  }
}

/** Whether the tool is here: its fixed path (packages that install files), else on PATH. */
export function hasTool(tool: Tool, env: NodeJS.ProcessEnv = process.env): boolean {
  const spec: { apt: string; path?: string } = TOOLS[tool];
  if (spec.path) return spec.path.startsWith('/usr/bin/') ? executable(spec.path) : readable(spec.path);
  return (env.PATH ?? '').split(delimiter).some((dir) => dir !== '' && executable(join(dir, tool)));
}

/** The line that names a missing tool and how to install it. */
export function installHint(tool: Tool): string {
  return `${tool} (apt-get install ${TOOLS[tool].apt})`;
}

/**
 * True when a test needing these tools must be skipped here (and records why); throws under
 * `CI=true`, so a CI machine without a tool fails instead of passing with less tested.
 */
export function missingTools(...tools: Tool[]): boolean {
  const missing = tools.filter((tool) => !hasTool(tool));
  if (missing.length === 0) return false;
  if (process.env.CI === 'true') {
    throw new Error(`CI=true and a required tool is missing: ${missing.map(installHint).join(', ')}`);
  }
  record(missing);
  return true;
}

function record(missing: Tool[]) {
  let dir: string | undefined;
  try {
    dir = inject('missingToolsDir');
  } catch {
    dir = undefined; // outside a vitest run with the global setup
  }
  if (!dir) return;
  mkdirSync(dir, { recursive: true });
  for (const tool of missing) writeFileSync(join(dir, tool), '');
}
