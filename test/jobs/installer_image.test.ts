/**
 * Installer-ready images (CONTRACT §10): images built by the real task with xorriso, read
 * back with xorriso, their answer files checked with Debian's debconf and a YAML parser, and
 * their /fleet/handshake.sh run with dash (curl) and busybox ash (busybox wget) against the
 * service served on a loopback port over the test file's database.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { serve } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { createEnrollmentSession, newSerial, TEMPLATES } from '../support/activation.ts';
import { useTestApp } from '../support/app.ts';
import { activationCodeOf, createOrganization } from '../support/builders.ts';
import {
  extractFromIso,
  getBuild,
  isoFiles,
  runJobs,
  tempIsoDir,
  triggerBuild,
  workerDeps,
} from '../support/iso_builds.ts';
import { missingTools, type Tool } from '../support/tools.ts';

/** Every image is built with xorriso; the scripts run under dash (with curl) and busybox. */
const withoutXorriso = missingTools('xorriso');
const SHELL_TOOLS: Record<'dash' | 'busybox', Tool[]> = { dash: ['dash', 'curl'], busybox: ['busybox'] };
const without = (...shells: Array<'dash' | 'busybox'>) => missingTools(...shells.flatMap((s) => SHELL_TOOLS[s]));
const withoutDebconf = () => missingTools('debconf-set-selections');

const isoDir = tempIsoDir();
const ctx = useTestApp({ isoDir });
let server: ReturnType<typeof serve>;
let apiUrl: string;
const scratch = mkdtemp(join(tmpdir(), 'fleet-installer-'));

beforeAll(async () => {
  await new Promise<void>((ready) => {
    server = serve({ fetch: ctx.app.fetch, port: 0, hostname: '127.0.0.1' }, () => ready());
  });
  apiUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((done) => server?.close(done));
  await rm(dirname(isoDir), { recursive: true, force: true });
  await rm(await scratch, { recursive: true, force: true });
});

/** Triggers a build, runs it with the worker pointed at the loopback service, returns the image path. */
async function buildImage(organizationId: string, body: Record<string, unknown> = {}): Promise<string> {
  const queued = await triggerBuild(ctx, organizationId, body);
  await runJobs(ctx, workerDeps(ctx, { publicBaseUrl: apiUrl }));
  const build = (await getBuild(ctx, queued.id)).body;
  expect(build.status, build.error).toBe('completed');
  return join(isoDir, `fleet-installer-${queued.id}.iso`);
}

/** The image's /fleet folder extracted into a fresh folder. */
async function extractFleet(image: string): Promise<string> {
  const dir = join(await mkdtemp(join(await scratch, 'x-')), 'fleet');
  const args = ['-osirrox', 'on', '-indev', image, '-extract', '/fleet', dir];
  const out = spawnSync('xorriso', args, { encoding: 'utf8' });
  expect(out.status, out.stderr).toBe(0);
  return dir;
}

interface Run {
  code: number;
  stdout: string;
  stderr: string;
  ms: number;
  out: string;
  /** Still running a second after `poweredOff` appeared, so ended by the test. */
  stillWaiting: boolean;
}

/** Busybox applets only: the PATH of an installer without curl or GNU tools. */
let busyboxPath: string | null = null;
async function busyboxBin(): Promise<string> {
  if (busyboxPath) return busyboxPath;
  const dir = join(await scratch, 'busybox-bin');
  await mkdir(dir, { recursive: true });
  const made = spawnSync('busybox', ['--install', '-s', dir], { encoding: 'utf8' });
  expect(made.status, made.stderr).toBe(0);
  expect(existsSync(join(dir, 'curl'))).toBe(false);
  busyboxPath = dir;
  return dir;
}

/**
 * Runs a script of the extracted /fleet folder, asynchronously: the service answers from this
 * process. With `poweredOff` (the file the script's FLEET_POWEROFF touches) a script that must
 * never return is ended a second after it powered off, however slow the machine is.
 */
async function runScript(
  shell: 'dash' | 'busybox',
  script: string,
  args: string[],
  env: Record<string, string>,
  poweredOff?: string,
): Promise<Run> {
  const out = env.FLEET_OUT ?? join(await mkdtemp(join(await scratch, 'out-')), 'fleet');
  const fullEnv: Record<string, string> = {
    PATH: shell === 'busybox' ? await busyboxBin() : process.env.PATH!,
    FLEET_OUT: out,
    FLEET_RETRIES: '2',
    FLEET_RETRY_DELAY: '1',
    ...env,
  };
  // The busybox binary by its full path: the PATH given to the script holds only its applets.
  const busybox = spawnSync('sh', ['-c', 'command -v busybox'], { encoding: 'utf8' }).stdout.trim();
  const [cmd, cmdArgs] = shell === 'dash' ? ['dash', [script, ...args]] : [busybox, ['ash', script, ...args]];
  const started = Date.now();
  // Its own process group, ended as a whole: the `sleep`s a stopped script leaves behind hold
  // the output pipes open.
  const child = spawn(cmd, cmdArgs, { env: fullEnv, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  let stillWaiting = false;
  const endGroup = () => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {} // already gone
  };
  const deadline = setTimeout(endGroup, 60_000);
  const watch = setInterval(() => {
    if (!poweredOff || !existsSync(poweredOff)) return;
    clearInterval(watch);
    setTimeout(() => {
      stillWaiting = child.exitCode === null && child.signalCode === null;
      endGroup();
    }, 1_000);
  }, 50);
  return new Promise((resolve) => {
    child.on('close', (code) => {
      clearTimeout(deadline);
      clearInterval(watch);
      resolve({ code: code ?? -1, stdout, stderr, ms: Date.now() - started, out, stillWaiting });
    });
  });
}

function handshake(shell: 'dash' | 'busybox', fleet: string, env: Record<string, string> = {}) {
  return runScript(shell, join(fleet, 'handshake.sh'), [], { FLEET_SERIAL: newSerial(), ...env });
}

async function entries(dir: string): Promise<string[]> {
  return existsSync(dir) ? readdir(dir) : [];
}

async function mode(path: string): Promise<number> {
  return (await stat(path)).mode & 0o777;
}

/** A copy of the image's provisioning.json with some fields replaced. */
async function configWith(fleet: string, changes: Record<string, unknown>): Promise<string> {
  const config = { ...JSON.parse(await readFile(join(fleet, 'provisioning.json'), 'utf8')), ...changes };
  const path = join(await mkdtemp(join(await scratch, 'conf-')), 'provisioning.json');
  await writeFile(path, JSON.stringify(config, null, 2));
  return path;
}

describe.skipIf(withoutXorriso)('a Debian image bound to nothing (the organization code)', () => {
  let org: { id: string };
  let image: string;
  let fleet: string;

  beforeAll(async () => {
    org = await createOrganization(ctx);
    image = await buildImage(org.id);
    fleet = await extractFleet(image);
  });

  it('carries provisioning.json with the contract fields, the code as credential and no template', async () => {
    const provisioning = JSON.parse(await extractFromIso(image, '/fleet/provisioning.json'));
    expect(provisioning).toMatchObject({
      schema_version: 2,
      organization_id: org.id,
      credential: await activationCodeOf(ctx, org.id),
      template_id: null,
      base_url: apiUrl,
      api_url: `${apiUrl}/api/v1`,
      backend: 'debian',
    });
    expect(provisioning.build_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(Date.parse(provisioning.built_at)).not.toBeNaN();
    expect(isoFiles(image)).toEqual(
      expect.arrayContaining([
        '/fleet/handshake.sh',
        '/fleet/install.sh',
        '/preseed.cfg',
        '/isolinux/isolinux.cfg',
        '/boot/grub/grub.cfg',
      ]),
    );
    expect(await mode(join(fleet, 'handshake.sh'))).toBe(0o755);
  });

  it('boots the preseeded installer by default from BIOS (isolinux) and UEFI (grub), with its kernel', async () => {
    const files = isoFiles(image);
    const isolinux = await extractFromIso(image, '/isolinux/isolinux.cfg');
    expect(isolinux).toMatch(/^default fleet$/m);
    const fleetLabel = isolinux.split(/^label /m).find((l) => l.startsWith('fleet'))!;
    expect(fleetLabel).toContain('kernel /install.amd/vmlinuz');
    expect(fleetLabel).toMatch(/append .*auto=true priority=critical preseed\/file=\/cdrom\/preseed\.cfg /);
    expect(fleetLabel).toMatch(/append .*initrd=\/install\.amd\/initrd\.gz/);
    const grub = await extractFromIso(image, '/boot/grub/grub.cfg');
    expect(grub).toMatch(/^set default=0$/m);
    const first = grub.split('menuentry ')[1]!;
    expect(first).toContain('preseed/file=/cdrom/preseed.cfg');
    expect(first).toContain('linux /install.amd/vmlinuz');
    expect(first).toContain('initrd /install.amd/initrd.gz');
    expect(files).toEqual(expect.arrayContaining(['/install.amd/vmlinuz', '/install.amd/initrd.gz']));
  });

  it.skipIf(withoutDebconf())(
    'has a preseed.cfg that debconf-set-selections --checkonly accepts, handshake before partitioning',
    async () => {
      const preseed = await extractFromIso(image, '/preseed.cfg');
      const path = join(await scratch, `preseed-${Date.now()}.cfg`);
      await writeFile(path, preseed);
      const check = spawnSync('debconf-set-selections', ['--checkonly', path], { encoding: 'utf8' });
      expect(check.status, check.stderr).toBe(0);
      expect(check.stderr).toBe('');
      expect(preseed).toContain('d-i partman/early_command string sh /cdrom/fleet/install.sh debian-early');
      expect(preseed).toContain('d-i preseed/late_command string sh /cdrom/fleet/install.sh late /target');
      expect(preseed).toContain('d-i debian-installer/locale string de_DE.UTF-8');
      expect(preseed).toContain('d-i keyboard-configuration/xkb-keymap select de');
      expect(preseed).toContain('d-i time/zone string Europe/Berlin');
      expect(preseed).not.toMatch(/^d-i partman-crypto\/passphrase/m);
    },
  );

  for (const shell of ['dash', 'busybox'] as const) {
    const how = shell === 'dash' ? 'dash with curl' : 'busybox ash with busybox wget';
    it.skipIf(without(shell))(`handshake.sh under ${how} writes blueprint.json and agent.json (0600)`, async () => {
      const serial = newSerial();
      const run = await handshake(shell, fleet, { FLEET_SERIAL: serial });
      expect(run.code, run.stderr).toBe(0);
      expect((await entries(run.out)).sort()).toEqual(['agent.json', 'blueprint.json']);
      expect(await mode(join(run.out, 'agent.json'))).toBe(0o600);
      expect(await mode(join(run.out, 'blueprint.json'))).toBe(0o600);
      const blueprint = JSON.parse(await readFile(join(run.out, 'blueprint.json'), 'utf8'));
      const agent = JSON.parse(await readFile(join(run.out, 'agent.json'), 'utf8'));
      expect(blueprint.template.id).toBe(TEMPLATES.debianStandard); // the activation's default
      expect(blueprint.organization_id).toBe(org.id);
      expect(agent).toEqual(blueprint.agent);
      expect(Object.keys(agent).sort()).toEqual(['base_url', 'bootstrap_token', 'device_id']);
      const [device] = await ctx.sql`
        select id, serial, template_id from devices where organization_id = ${org.id} and serial = ${serial}`;
      expect(device).toEqual({ id: agent.device_id, serial, template_id: TEMPLATES.debianStandard });
      // The token the installer got bootstraps the agent.
      const boot = await ctx.request('POST', '/api/v1/agent/bootstrap', {
        token: null,
        body: { device_id: agent.device_id, bootstrap_token: agent.bootstrap_token },
      });
      expect(boot.status, JSON.stringify(boot.body)).toBe(201);
    });

    it.skipIf(without(shell))(
      `handshake.sh under ${shell} exits 3 for a wrong code, printing the refusal and writing nothing`,
      async () => {
        const config = await configWith(fleet, { credential: 'AAAAA-BBBBB-CCCCC-DDDDD' });
        const run = await handshake(shell, fleet, { FLEET_CONFIG: config });
        expect(run.code, run.stderr).toBe(3);
        if (shell === 'dash') {
          expect(run.stderr).toContain('(invalid_activation_code): the activation code is not valid');
        } else {
          // busybox wget drops the body of an error answer: the status is all it can show.
          expect(run.stderr).toContain('HTTP 403');
        }
        expect(await entries(run.out)).toEqual([]);
      },
    );
  }

  it.skipIf(without('dash', 'busybox'))(
    'handshake.sh exits 4 when the service cannot be reached, after its retries with backoff',
    async () => {
      const config = await configWith(fleet, { api_url: 'http://127.0.0.1:9/api/v1' });
      for (const shell of ['dash', 'busybox'] as const) {
        const run = await handshake(shell, fleet, { FLEET_CONFIG: config, FLEET_RETRIES: '3', FLEET_RETRY_DELAY: '1' });
        expect(run.code, run.stderr).toBe(4);
        // Three attempts: waits of 1 s and 2 s between them.
        expect(run.stderr.match(/retrying in/g)).toHaveLength(2);
        expect(run.stderr).toContain('retrying in 2s');
        expect(run.ms).toBeGreaterThanOrEqual(3000);
        expect(await entries(run.out)).toEqual([]);
      }
    },
  );

  it.skipIf(without('dash') || withoutDebconf())(
    'install.sh turns the blueprint into partman selections debconf accepts: single and luks-lvm',
    async () => {
      for (const [templateId, method] of [
        [TEMPLATES.debianStandard, 'regular'],
        [TEMPLATES.debianEncrypted, 'crypto'],
      ] as const) {
        const config = await configWith(fleet, { template_id: templateId });
        const run = await handshake('dash', fleet, { FLEET_CONFIG: config });
        expect(run.code, run.stderr).toBe(0);
        const sel = await runScript('dash', join(fleet, 'install.sh'), ['selections'], { FLEET_OUT: run.out });
        expect(sel.code, sel.stderr).toBe(0);
        expect(sel.stdout).toContain(`d-i partman-auto/method string ${method}`);
        expect(sel.stdout).toContain('d-i partman/default_filesystem string ext4');
        expect(sel.stdout).not.toContain('passphrase');
        expect(sel.stdout).toContain('d-i pkgsel/include string curl git python3 python3-apt ansible-core');
        if (method === 'crypto') expect(sel.stdout).toContain('d-i partman-auto-crypto/erase_disks boolean false');
        const path = join(await scratch, `sel-${method}.cfg`);
        await writeFile(path, sel.stdout);
        const check = spawnSync('debconf-set-selections', ['--checkonly', path], { encoding: 'utf8' });
        expect(check.status, check.stderr).toBe(0);
      }
    },
  );
});

describe.skipIf(withoutXorriso)('an image bound to an enrollment session', () => {
  let org: { id: string };
  let session: { id: string };
  let image: string;
  let fleet: string;

  beforeAll(async () => {
    org = await createOrganization(ctx);
    session = await createEnrollmentSession(ctx, org.id, { template_id: TEMPLATES.debianEncrypted, max_devices: 2 });
    const wlan = { ssid: 'Rollout', psk: 'rollout-passphrase' };
    image = await buildImage(org.id, { enrollment_session_id: session.id, wlan });
    fleet = await extractFleet(image);
  });

  it('its preseed encrypts with partman-crypto (LVM on LUKS) and holds no passphrase', async () => {
    const preseed = await extractFromIso(image, '/preseed.cfg');
    expect(preseed).toContain('d-i partman-auto/method string crypto');
    expect(preseed).toContain('d-i partman-auto-crypto/erase_disks boolean false');
    expect(preseed).toMatch(/^d-i pkgsel\/include string .*clevis clevis-luks clevis-tpm2 clevis-initramfs/m);
    expect(preseed).not.toMatch(/^d-i partman-crypto\/passphrase/m);
  });

  it('holds the session id and not the organization code, anywhere in its bytes', async () => {
    const bytes = await readFile(image);
    const code = await activationCodeOf(ctx, org.id);
    expect(bytes.includes(Buffer.from(session.id))).toBe(true);
    for (const form of [code, code.toLowerCase(), code.replace(/-/g, '')]) {
      expect(bytes.includes(Buffer.from(form))).toBe(false);
    }
    const provisioning = JSON.parse(await readFile(join(fleet, 'provisioning.json'), 'utf8'));
    expect(provisioning).toMatchObject({ credential: session.id, template_id: TEMPLATES.debianEncrypted });
  });

  it.skipIf(without('dash'))(
    'activations through it count against the session quota; a full session exits 3, nothing written',
    async () => {
      for (const used of [1, 2]) {
        const run = await handshake('dash', fleet);
        expect(run.code, run.stderr).toBe(0);
        const blueprint = JSON.parse(await readFile(join(run.out, 'blueprint.json'), 'utf8'));
        expect(blueprint.partitioning).toEqual({
          scheme: 'luks-lvm',
          root_filesystem: 'ext4',
          encryption: { type: 'luks2', unlock: 'tpm2' },
        });
        // The install passphrase stays in the installer's memory, out of blueprint.json.
        const passphrase = await readFile(join(run.out, 'install-passphrase'), 'utf8');
        expect(passphrase).toMatch(/^[A-Za-z0-9_-]{43}$/);
        expect(JSON.stringify(blueprint)).not.toContain(passphrase);
        const [row] = await ctx.sql`select devices_used from enrollment_sessions where id = ${session.id}`;
        expect(row!.devices_used).toBe(used);
      }
      const full = await handshake('dash', fleet);
      expect(full.code, full.stderr).toBe(3);
      expect(full.stderr).toContain('enrollment session is revoked, expired or used up');
      expect(await entries(full.out)).toEqual([]);
    },
  );

  it.skipIf(without('dash', 'busybox'))(
    "a revoked session exits 3 with the service's message and nothing written (dash and busybox)",
    async () => {
      const other = await createEnrollmentSession(ctx, org.id, { max_devices: 5 });
      const config = await configWith(fleet, { credential: other.id, template_id: TEMPLATES.debianStandard });
      await ctx.request('POST', `/api/v1/enrollment-sessions/${other.id}/revoke`);
      for (const shell of ['dash', 'busybox'] as const) {
        const run = await handshake(shell, fleet, { FLEET_CONFIG: config });
        expect(run.code, run.stderr).toBe(3);
        expect(await entries(run.out)).toEqual([]);
      }
      const [row] = await ctx.sql`select devices_used from enrollment_sessions where id = ${other.id}`;
      expect(row!.devices_used).toBe(0);
    },
  );

  it.skipIf(without('busybox'))(
    'install.sh late installs agent.json, blueprint.json and the WLAN profile into the target, 0600',
    async () => {
      // An unencrypted template: the key swap of an encrypted one is test/disk_keys/disk_key_swap.test.ts's.
      const fresh = await createEnrollmentSession(ctx, org.id, {
        template_id: TEMPLATES.debianStandard,
        max_devices: 1,
      });
      const config = await configWith(fleet, { credential: fresh.id, template_id: TEMPLATES.debianStandard });
      const run = await handshake('busybox', fleet, { FLEET_CONFIG: config });
      expect(run.code, run.stderr).toBe(0);
      const target = await mkdtemp(join(await scratch, 'target-'));
      const late = await runScript('busybox', join(fleet, 'install.sh'), ['late', target], { FLEET_OUT: run.out });
      expect(late.code, late.stderr).toBe(0);
      const installed = await readFile(join(target, 'etc/fleet/agent.json'), 'utf8');
      expect(installed).toBe(await readFile(join(run.out, 'agent.json'), 'utf8'));
      expect(await mode(join(target, 'etc/fleet'))).toBe(0o700);
      expect(await mode(join(target, 'etc/fleet/agent.json'))).toBe(0o600);
      expect(await mode(join(target, 'etc/fleet/blueprint.json'))).toBe(0o600);
      const profile = join(target, 'etc/NetworkManager/system-connections/fleet-wlan.nmconnection');
      expect(await readFile(profile, 'utf8')).toContain('ssid=Rollout\n');
      expect(await mode(profile)).toBe(0o600);
    },
  );

  it.skipIf(without('dash'))(
    'install.sh early never returns when the handshake is refused: it powers off, nothing written',
    async () => {
      const config = await configWith(fleet, { credential: crypto.randomUUID() });
      const marker = join(await mkdtemp(join(await scratch, 'off-')), 'powered-off');
      const consoleFile = join(await scratch, `console-${Date.now()}`);
      const env = {
        FLEET_CONFIG: config,
        FLEET_SERIAL: newSerial(),
        FLEET_POWEROFF: `touch ${marker}`,
        FLEET_POWEROFF_DELAY: '0',
        FLEET_CONSOLE: consoleFile,
      };
      const run = await runScript('dash', join(fleet, 'install.sh'), ['early'], env, marker);
      expect(existsSync(marker)).toBe(true);
      expect(run.stillWaiting).toBe(true); // it never returns after the power-off
      expect(run.stderr).toContain('installation stopped before partitioning');
      expect(await readFile(consoleFile, 'utf8')).toContain('NO DISK WAS TOUCHED');
      expect(await entries(run.out)).toEqual([]);
    },
  );
});

describe.skipIf(withoutXorriso)('a managed device (one that bootstrapped)', () => {
  it.skipIf(without('dash'))(
    'is refused: handshake.sh exits 3, nothing written (activate: 409 device_already_enrolled)',
    async (test) => {
      const doc = await ctx.request('GET', '/api/v1/openapi.json', { token: null });
      // The 409 of CONTRACT §5 lands with the change that makes activate refuse managed devices.
      if (!doc.body.paths['/api/v1/activate'].post.responses['409']) test.skip();
      const org = await createOrganization(ctx);
      const fleet = await extractFleet(await buildImage(org.id));
      const serial = newSerial();
      const first = await handshake('dash', fleet, { FLEET_SERIAL: serial });
      expect(first.code, first.stderr).toBe(0);
      const agent = JSON.parse(await readFile(join(first.out, 'agent.json'), 'utf8'));
      const boot = await ctx.request('POST', '/api/v1/agent/bootstrap', {
        token: null,
        body: { device_id: agent.device_id, bootstrap_token: agent.bootstrap_token },
      });
      expect(boot.status).toBe(201);
      const again = await handshake('dash', fleet, { FLEET_SERIAL: serial });
      expect(again.code, again.stderr).toBe(3);
      expect(again.stderr).toContain('device_already_enrolled');
      expect(await entries(again.out)).toEqual([]);
    },
  );
});

describe.skipIf(withoutXorriso)('an Ubuntu image (bound to the Ubuntu template)', () => {
  let org: { id: string };
  let image: string;

  beforeAll(async () => {
    org = await createOrganization(ctx);
    image = await buildImage(org.id, { template_id: TEMPLATES.ubuntuStandard });
  });

  it('is made from the Ubuntu base and boots the installer with autoinstall by default', async () => {
    const files = isoFiles(image);
    const expected = ['/autoinstall.yaml', '/boot/grub/grub.cfg', '/casper/vmlinuz', '/casper/initrd'];
    expect(files).toEqual(expect.arrayContaining(expected));
    expect(files).not.toContain('/preseed.cfg');
    expect(await extractFromIso(image, '/README.TXT')).toContain('development base image (ubuntu)');
    const grub = await extractFromIso(image, '/boot/grub/grub.cfg');
    expect(grub).toMatch(/^set default=0$/m);
    const first = grub.split('menuentry ')[1]!;
    expect(first).toMatch(/linux \/casper\/vmlinuz autoinstall ---/);
    expect(first).toContain('initrd /casper/initrd');
    const provisioning = JSON.parse(await extractFromIso(image, '/fleet/provisioning.json'));
    expect(provisioning).toMatchObject({ template_id: TEMPLATES.ubuntuStandard, backend: 'ubuntu' });
  });

  it('has an autoinstall.yaml that parses, with the keys subiquity requires and the handshake first', async () => {
    const doc = parseYaml(await extractFromIso(image, '/autoinstall.yaml'));
    const config = doc.autoinstall;
    expect(config.version).toBe(1);
    // Subiquity needs an identity or user-data section to run without questions.
    expect(config['user-data'] ?? config.identity).toBeTypeOf('object');
    expect(config).toMatchObject({
      locale: 'de_DE.UTF-8',
      keyboard: { layout: 'de' },
      timezone: 'Europe/Berlin',
      storage: { layout: { name: 'direct' } },
      'early-commands': ['sh /cdrom/fleet/install.sh ubuntu-early single ext4'],
      'late-commands': ['sh /cdrom/fleet/install.sh late /target'],
    });
    expect(config['interactive-sections']).toBeUndefined();
  });

  it.skipIf(without('dash', 'busybox'))(
    "its early command runs the handshake and checks the blueprint against the image's layout",
    async () => {
      const fleet = await extractFleet(image);
      const script = join(fleet, 'install.sh');
      const ok = await runScript('busybox', script, ['ubuntu-early', 'single', 'ext4'], { FLEET_SERIAL: newSerial() });
      expect(ok.code, ok.stderr).toBe(0);
      const blueprint = JSON.parse(await readFile(join(ok.out, 'blueprint.json'), 'utf8'));
      expect(blueprint.backend.key).toBe('ubuntu');
      const args = ['ubuntu-early', 'luks-lvm', 'ext4'];
      const marker = join(await mkdtemp(join(await scratch, 'off-')), 'powered-off');
      const stop = {
        FLEET_SERIAL: newSerial(),
        FLEET_POWEROFF: `touch ${marker}`,
        FLEET_POWEROFF_DELAY: '0',
        FLEET_CONSOLE: '/dev/null',
      };
      const mismatch = await runScript('dash', script, args, stop, marker);
      expect(mismatch.stillWaiting).toBe(true); // never returned: it stopped for good
      expect(mismatch.stderr).toContain('the blueprint asks for single/ext4 but this image installs luks-lvm/ext4');
    },
  );
});

describe.skipIf(withoutXorriso)('an Ubuntu image bound to Ubuntu Verschlüsselt', () => {
  let image: string;

  beforeAll(async () => {
    const org = await createOrganization(ctx);
    image = await buildImage(org.id, { template_id: TEMPLATES.ubuntuEncrypted });
  });

  it('its autoinstall has the lvm layout without a password, which the early command fills in from the resolve', async () => {
    const text = await extractFromIso(image, '/autoinstall.yaml');
    const config = parseYaml(text).autoinstall;
    expect(config.storage).toEqual({ layout: { name: 'lvm' } });
    expect(config['interactive-sections']).toBeUndefined();
    expect(config.packages).toEqual(
      expect.arrayContaining(['clevis', 'clevis-luks', 'clevis-tpm2', 'clevis-initramfs']),
    );
    expect(text).not.toMatch(/^\s*password:/m);
    if (without('dash')) return;
    const fleet = await extractFleet(image);
    const copy = join(await mkdtemp(join(await scratch, 'autoinstall-')), 'autoinstall.yaml');
    await writeFile(copy, text);
    const run = await runScript('dash', join(fleet, 'install.sh'), ['ubuntu-early', 'luks-lvm', 'ext4'], {
      FLEET_SERIAL: newSerial(),
      FLEET_AUTOINSTALL: copy,
    });
    expect(run.code, run.stderr).toBe(0);
    const passphrase = await readFile(join(run.out, 'install-passphrase'), 'utf8');
    const filled = parseYaml(await readFile(copy, 'utf8')).autoinstall;
    expect(filled.storage).toEqual({ layout: { name: 'lvm', password: passphrase } });
    expect(await mode(copy)).toBe(0o600);
    expect(run.stderr).not.toContain(passphrase);
  });
});

describe.skipIf(withoutXorriso)('base image per backend', () => {
  it('takes ISO_BASE_IMAGE_UBUNTU for an Ubuntu template, failing clearly when it is no Ubuntu installer', async () => {
    const org = await createOrganization(ctx);
    const dir = await mkdtemp(join(await scratch, 'base-'));
    await mkdir(join(dir, 'root', 'install.amd'), { recursive: true });
    await writeFile(join(dir, 'root', 'install.amd', 'vmlinuz'), 'k');
    await writeFile(join(dir, 'root', 'install.amd', 'initrd.gz'), 'i');
    const debianLike = join(dir, 'debian.iso');
    const args = ['-as', 'mkisofs', '-o', debianLike, '-V', 'D', join(dir, 'root')];
    const made = spawnSync('xorriso', args, { encoding: 'utf8' });
    expect(made.status, made.stderr).toBe(0);
    await chmod(debianLike, 0o644);
    const deps = workerDeps(ctx, { isoBaseImages: { debian: debianLike, ubuntu: debianLike } });

    const ubuntu = await triggerBuild(ctx, org.id, { template_id: TEMPLATES.ubuntuStandard });
    await runJobs(ctx, deps);
    const failed = (await getBuild(ctx, ubuntu.id)).body;
    expect(failed.status).toBe('failed');
    expect(failed.error).toBe(`base image ${debianLike} is not a ubuntu installer image: it has no /casper/vmlinuz`);

    const debian = await triggerBuild(ctx, org.id, { template_id: TEMPLATES.debianStandard });
    await runJobs(ctx, deps);
    expect((await getBuild(ctx, debian.id)).body.status).toBe('completed');
    const files = isoFiles(join(isoDir, `fleet-installer-${debian.id}.iso`));
    expect(files).toContain('/preseed.cfg');
    expect(files).not.toContain('/README.TXT'); // not the development image
  });

  it('fails a build whose session was revoked after the trigger, without writing its image', async () => {
    const org = await createOrganization(ctx);
    const session = await createEnrollmentSession(ctx, org.id);
    const queued = await triggerBuild(ctx, org.id, { enrollment_session_id: session.id });
    await ctx.request('POST', `/api/v1/enrollment-sessions/${session.id}/revoke`);
    await runJobs(ctx, workerDeps(ctx));
    const build = (await getBuild(ctx, queued.id)).body;
    expect(build).toMatchObject({ status: 'failed' });
    expect(build.error).toContain('the enrollment session of this build is revoked');
    expect((await readdir(isoDir)).filter((n) => n.includes(queued.id))).toEqual([]);
  });
});
