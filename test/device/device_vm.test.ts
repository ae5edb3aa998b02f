/**
 * A real device (issue 44): a Debian 12 system boots in QEMU (TCG, no KVM), systemd starts
 * the agent the installer's own scripts put there, and it bootstraps, installs a real
 * package with apt, reports, and comes back after a power-off and boot.
 *
 * - The root filesystem is built once by `debootstrap` (as root: `sudo -n` when the test
 *   is not) and cached outside the clone in `${XDG_CACHE_HOME:-~/.cache}/fleet-vm/<key>`,
 *   the key a hash of the suite, the package list and the setup below: a change of either
 *   builds a new one. Each run copies it, prepares it with `handshake.sh` (under dash,
 *   against the real service) and `install.sh late <root>`, and makes a disk image of it
 *   with `mkfs.ext4 -d` (no loop mount).
 * - The guest reaches only forwarded ports (`-nic user,restrict=on,guestfwd=…`, each a
 *   `socat` to a loopback port of this test): the service, the role repository over git's
 *   smart HTTP (`git http-backend`) and an HTTP proxy that passes only to the Debian mirror
 *   of the host's apt configuration.
 * - The test drives the guest through a root shell on its second serial port (a unit of
 *   the cached image, not of the product) and reads its journal there.
 * - The software inventory (issue 51): `fleet-test-pkg`, built here with dpkg-deb, 1.0-1
 *   installed into the image and 1.1-1 in a small apt repository of the test (forwarded like
 *   the rest) whose Release names it `bookworm-security`: the agent's inventory holds the
 *   guest's packages and that pending security update, and the service matches it against
 *   the Debian sample data (CVE-2099-0001, fixed in 1.1-1).
 *
 * - Disk encryption on an emulated TPM 2.0 (issue 53; `swtpm` on a socket, QEMU's `tpm-tis`,
 *   its state kept across the test's two boots): a second disk, LUKS2 with only the install
 *   passphrase of a handshake against the encrypted template, gets its recovery key and clevis
 *   binding from `install.sh late` in the guest; clevis unlocks it without a key, in that boot
 *   and after a power-off, and not once PCR 7 was extended; the escrowed key opens it.
 *
 * Run with `npm run test:vm` (not part of `npm test`). The phase times are printed at the
 * end, nothing is asserted about them.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import { type AddressInfo, connect, type Socket } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { serve } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { newSerial, TEMPLATES } from '../support/activation.ts';
import { refreshFeed } from '../../api/vulnerabilities/feeds.ts';
import { matchOutdated } from '../../api/vulnerabilities/matching.ts';
import { DEBIAN_SAMPLE } from '../support/vulnerabilities.ts';
import { useTestApp } from '../support/app.ts';
import { activationCodeOf, createOrganization } from '../support/builders.ts';
import { inventoryHash } from '../support/inventory_hash.ts';
import { git, ROLES } from '../support/role_repository.ts';
import { missingTools } from '../support/tools.ts';
import { hostMirror, mirrorProxy } from '../support/vm.ts';

const SUITE = 'bookworm';
/**
 * A minimal system with the agent's packages, and those of an encrypted template's disk
 * (cryptsetup, clevis with its LUKS and TPM 2.0 pins: the TPM test below). python3-cffi-backend
 * must be named: debootstrap does not resolve python3-cryptography's virtual dependency on it.
 */
const PACKAGES = [
  'systemd-sysv',
  'systemd-resolved',
  'udev',
  'dbus',
  'linux-image-amd64',
  'initramfs-tools',
  'curl',
  'git',
  'python3',
  'python3-cffi-backend',
  'python3-apt',
  'ansible-core',
  'ca-certificates',
  'iproute2',
  'procps',
  'cryptsetup',
  'clevis',
  'clevis-luks',
  'clevis-tpm2',
  'tpm2-tools',
];

/** The guest's addresses of the forwarded ports (QEMU refuses a guestfwd on 10.0.2.2 with restrict=on). */
const HOST = '10.0.2.100';
const GUEST_PORTS = { service: 8080, roles: 8081, proxy: 3128, repo: 8083 };
/** The test's package: installed at this version, the next one in the test's security suite. */
const TEST_PKG = { name: 'fleet-test-pkg', installed: '1.0-1', candidate: '1.1-1' };
const GUEST_HOSTNAME = 'fleet-vm-device';
const POLL_SECONDS = 20;
/**
 * An apply under TCG: about 2.5 min on an idle host, over 7 on a host whose two cores are
 * shared by many jobs.
 */
const APPLY_MS = 20 * 60_000;
/** A boot to multi-user.target under TCG: 25 s to 3 min idle, over 5 min on a crowded host. */
const BOOT_MS = 20 * 60_000;
/** The qgis order's optionen value: it must appear in no journal line of the guest. */
const OPTION_VALUE = 'optionen-value-never-in-the-journal-0815';

/** What the cached image gets besides the packages (part of the cache key). */
const SETUP = [
  'set -e',
  'echo "/dev/vda / ext4 defaults 0 1" >/etc/fstab',
  'mkdir -p /etc/systemd/network /var/log/journal',
  'printf "[Match]\\nName=en* eth*\\n\\n[Network]\\nDHCP=ipv4\\n" >/etc/systemd/network/20-wired.network',
  // The test's control shell on the second serial port (ttyS1), raw and without echo.
  'cat >/etc/systemd/system/vm-control.service <<EOF',
  '[Unit]',
  'Description=Root shell on ttyS1 for the VM test',
  '[Service]',
  // No prompts in the output the test reads.
  'Environment=PS1= PS2=',
  "ExecStart=/bin/sh -c 'stty -F /dev/ttyS1 raw -echo && exec /bin/sh </dev/ttyS1 >/dev/ttyS1 2>&1'",
  'Restart=always',
  '[Install]',
  'WantedBy=multi-user.target',
  'EOF',
  'systemctl enable systemd-networkd.service systemd-networkd-wait-online.service vm-control.service',
  // No apt run of its own while the role runs apt.
  'systemctl mask apt-daily.timer apt-daily-upgrade.timer',
  'apt-get clean',
].join('\n');

const CACHE_KEY = createHash('sha256')
  .update(JSON.stringify({ suite: SUITE, variant: 'minbase', packages: [...PACKAGES].sort(), setup: SETUP }))
  .digest('hex')
  .slice(0, 16);
const CACHE = join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'fleet-vm', CACHE_KEY);

const SCRIPTS = join(import.meta.dirname, '../../jobs/iso/installer');
const asRoot = process.getuid?.() === 0 ? [] : ['sudo', '-n'];

/** The role repository: every role a no-op, except qgis, which installs or removes `hello`. */
const NOOP_ROLE = `- name: Nothing to do in this test
  ansible.builtin.debug:
    msg: "{{ role_name }} {{ fleet_state }}"
`;
const HELLO_ROLE = `- name: hello installed or removed, as ordered
  ansible.builtin.apt:
    name: hello
    state: "{{ 'present' if fleet_state == 'present' else 'absent' }}"
    update_cache: "{{ fleet_state == 'present' }}"
    cache_valid_time: 3600
`;

interface Run {
  code: number | null;
  out: string;
}

/** Runs a command (prefixed by `sudo -n` with root); rejects with its output on failure. */
function run(cmd: string[], options: { root?: boolean; env?: Record<string, string>; log?: string } = {}) {
  // sudo keeps no environment: the variables go on env's command line (never a secret here).
  const vars = Object.entries(options.env ?? {}).map(([k, v]) => `${k}=${v}`);
  const argv = options.root ? [...asRoot, 'env', ...vars, ...cmd] : cmd;
  return new Promise<Run>((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), {
      env: { ...process.env, ...options.env } as Record<string, string>,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => (out += c));
    child.on('error', reject);
    child.on('close', async (code) => {
      if (options.log) await writeFile(options.log, out);
      if (code === 0) resolve({ code, out });
      else reject(new Error(`${argv.join(' ')} exited ${code}: ${out.slice(-3000)}`));
    });
  });
}

/** The cached root filesystem, built by debootstrap when its key is new. */
async function rootfs(mirrorUrl: string): Promise<string> {
  const root = join(CACHE, 'rootfs');
  if (existsSync(join(CACHE, 'ready'))) return root;
  await mkdir(CACHE, { recursive: true });
  if (!existsSync(join(CACHE, 'debootstrap.done'))) {
    await run(['rm', '-rf', root], { root: true });
    await run(['debootstrap', '--variant=minbase', `--include=${PACKAGES.join(',')}`, SUITE, root, mirrorUrl], {
      root: true,
      log: join(CACHE, 'debootstrap.log'),
    });
    await writeFile(join(CACHE, 'debootstrap.done'), '');
  }
  await run(['chroot', root, '/bin/sh', '-c', SETUP], { root: true, env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' } });
  await writeFile(join(CACHE, 'ready'), `${new Date().toISOString()}\n`);
  return root;
}

/** A smart-HTTP git server (`git http-backend` as CGI) for the bare repositories in `dir`. */
async function gitServer(dir: string, requests: string[]): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://roles');
    requests.push(`${req.method} ${url.pathname}${url.search}`);
    const header = (name: string) => {
      const v = req.headers[name];
      return typeof v === 'string' ? v : undefined;
    };
    const env: Record<string, string> = {
      PATH: process.env.PATH!,
      GIT_PROJECT_ROOT: dir,
      GIT_HTTP_EXPORT_ALL: '1',
      REQUEST_METHOD: req.method ?? 'GET',
      PATH_INFO: decodeURIComponent(url.pathname),
      QUERY_STRING: url.search.slice(1),
      CONTENT_TYPE: header('content-type') ?? '',
      REMOTE_ADDR: '127.0.0.1',
    };
    if (header('content-length')) env.CONTENT_LENGTH = header('content-length')!;
    if (header('content-encoding')) env.HTTP_CONTENT_ENCODING = header('content-encoding')!;
    if (header('git-protocol')) env.GIT_PROTOCOL = header('git-protocol')!;
    const cgi = spawn('git', ['http-backend'], { env, stdio: ['pipe', 'pipe', 'ignore'] });
    req.pipe(cgi.stdin);
    let head = Buffer.alloc(0);
    let started = false;
    cgi.stdout.on('data', (chunk: Buffer) => {
      if (started) {
        res.write(chunk);
        return;
      }
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      started = true;
      let status = 200;
      const headers: Record<string, string> = {};
      for (const line of head.subarray(0, end).toString('latin1').split('\r\n')) {
        const i = line.indexOf(':');
        const [name, value] = [line.slice(0, i).trim(), line.slice(i + 1).trim()];
        if (name.toLowerCase() === 'status') status = Number.parseInt(value, 10);
        else headers[name] = value;
      }
      res.writeHead(status, headers);
      res.write(head.subarray(end + 4));
    });
    cgi.on('close', () => {
      if (!started) res.writeHead(500);
      res.end();
    });
  });
  await new Promise<void>((ready) => server.listen(0, '127.0.0.1', () => ready()));
  return { server, port: (server.address() as AddressInfo).port };
}

/** A root shell on the guest's ttyS1: one command at a time, its output and exit status. */
class Control {
  private buffer = '';
  private count = 0;
  private waiter: (() => void) | null = null;

  private constructor(private readonly socket: Socket) {
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      this.buffer += chunk;
      this.waiter?.();
    });
  }

  static async open(path: string, deadline: number): Promise<Control> {
    for (;;) {
      try {
        const socket = await new Promise<Socket>((resolve, reject) => {
          const s = connect(path, () => resolve(s));
          s.once('error', reject);
        });
        return new Control(socket);
      } catch (err) {
        if (Date.now() > deadline) throw err;
        await sleep(200);
      }
    }
  }

  /**
   * Sends `command` (one line) and waits for its end marker, which the shell computes
   * ($((n+0))), so an echo of the input before the shell set the line raw never matches it.
   */
  async sh(command: string, timeoutMs = 60_000): Promise<Run> {
    const n = ++this.count + 1000;
    const marker = new RegExp(`@@${n} (\\d+)@@\\n`);
    this.buffer = '';
    // The marker line has no quotes: a line cut short while the guest's tty came up cannot
    // leave the shell inside an open quote.
    this.socket.write(`\n${command}\necho @@$((${n}+0)) $?@@\n`);
    const end = Date.now() + timeoutMs;
    for (;;) {
      const m = marker.exec(this.buffer);
      if (m) {
        const out = this.buffer.slice(0, m.index).replace(/\r/g, '');
        this.buffer = this.buffer.slice(m.index + m[0].length);
        return { code: Number(m[1]), out };
      }
      if (Date.now() > end) throw new Error(`no answer from the guest to: ${command}\n${this.buffer.slice(-2000)}`);
      await new Promise<void>((wake) => {
        this.waiter = wake;
        setTimeout(wake, 500);
      });
      this.waiter = null;
    }
  }

  /** Waits until the shell answers (it starts with multi-user.target). */
  async ready(deadline: number): Promise<void> {
    for (;;) {
      try {
        await this.sh('true', 5_000);
        return;
      } catch (err) {
        if (Date.now() > deadline) throw err;
      }
    }
  }

  close() {
    this.socket.destroy();
  }
}

function sleep(ms: number) {
  return new Promise((done) => setTimeout(done, ms));
}

/** The host's cryptsetup (in /usr/sbin, which a user's PATH may lack). */
const CRYPTSETUP = '/usr/sbin/cryptsetup';
/** The install passphrase's key slot of the TPM test: a fast PBKDF, as the disk key tests use. */
const FAST_PBKDF = ['--pbkdf', 'pbkdf2', '--pbkdf-force-iterations', '1000'];

/** Runs a command with `input` on its stdin (a key never goes on a command line); rejects on failure. */
function runWithInput(cmd: string[], input: string): Promise<Run> {
  return new Promise<Run>((resolve, reject) => {
    const child = spawn(cmd[0]!, cmd.slice(1), {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (c) => (out += c));
    child.stderr!.on('data', (c) => (out += c));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve({ code, out }) : reject(new Error(`${cmd.join(' ')} exited ${code}: ${out.slice(-2000)}`)),
    );
    child.stdin!.end(input);
  });
}

/** Whether `key` opens the LUKS volume in `file` (`cryptsetup open --test-passphrase`, the key on stdin). */
function opensWith(file: string, key: string): Promise<boolean> {
  return runWithInput([CRYPTSETUP, 'open', '--test-passphrase', '--key-file=-', file], key).then(
    () => true,
    () => false,
  );
}

/** fleet-test-pkg at `version` (architecture all, nothing in it but its documentation), built with dpkg-deb. */
async function buildTestPackage(dir: string, version: string): Promise<string> {
  const tree = join(dir, `${TEST_PKG.name}-${version}`);
  await mkdir(join(tree, 'DEBIAN'), { recursive: true });
  await mkdir(join(tree, 'usr/share/doc', TEST_PKG.name), { recursive: true });
  await writeFile(
    join(tree, 'DEBIAN/control'),
    [
      `Package: ${TEST_PKG.name}`,
      `Version: ${version}`,
      'Architecture: all',
      'Maintainer: Fleet tests <tests@fleet.invalid>',
      'Section: misc',
      'Priority: optional',
      'Description: a package of the fleet VM test',
      '',
    ].join('\n'),
  );
  await writeFile(join(tree, 'usr/share/doc', TEST_PKG.name, 'README'), `${TEST_PKG.name} ${version}\n`);
  const deb = join(dir, `${TEST_PKG.name}_${version}_all.deb`);
  await run(['dpkg-deb', '--root-owner-group', '-Zgzip', '--build', tree, deb]);
  return deb;
}

/**
 * An apt repository on a loopback port: the suite `bookworm-security` (its Release says so,
 * which makes it a security suite to the agent) with one package, unsigned (the guest names
 * it `[trusted=yes]`). `requests` collects the paths asked for.
 */
async function testRepository(deb: string, requests: string[]): Promise<{ server: Server; port: number }> {
  const data = await readFile(deb);
  const sha256 = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
  const pool = `pool/main/${TEST_PKG.name}_${TEST_PKG.candidate}_all.deb`;
  const packages = [
    `Package: ${TEST_PKG.name}`,
    `Version: ${TEST_PKG.candidate}`,
    'Architecture: all',
    'Maintainer: Fleet tests <tests@fleet.invalid>',
    'Priority: optional',
    'Section: misc',
    `Filename: ${pool}`,
    `Size: ${data.length}`,
    `SHA256: ${sha256(data)}`,
    'Description: a package of the fleet VM test',
    '',
    '',
  ].join('\n');
  const index = 'main/binary-amd64/Packages';
  const release = [
    'Origin: Fleet Test',
    'Label: Fleet Test',
    'Suite: bookworm-security',
    'Codename: bookworm-security',
    `Date: ${new Date().toUTCString()}`,
    'Architectures: amd64 all',
    'Components: main',
    'SHA256:',
    ` ${sha256(packages)} ${Buffer.byteLength(packages)} ${index}`,
    '',
  ].join('\n');
  const files: Record<string, Buffer | string> = {
    '/dists/bookworm-security/Release': release,
    [`/dists/bookworm-security/${index}`]: packages,
    [`/${pool}`]: data,
  };
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://repo').pathname;
    requests.push(`${req.method} ${path}`);
    const body = files[path];
    if (body === undefined) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-length': Buffer.byteLength(body) });
    res.end(req.method === 'HEAD' ? undefined : body);
  });
  await new Promise<void>((ready) => server.listen(0, '127.0.0.1', () => ready()));
  return { server, port: (server.address() as AddressInfo).port };
}

const ctx = useTestApp({
  publicBaseUrl: `http://${HOST}:${GUEST_PORTS.service}`,
  roleRepositoryUrl: `http://${HOST}:${GUEST_PORTS.roles}/roles.git`,
  agentPollIntervalSeconds: POLL_SECONDS,
});

describe.skipIf(missingTools('qemu-system-x86_64', 'debootstrap', 'socat', 'dash', 'git'))(
  'a Debian 12 device in QEMU: the agent under systemd, real packages, a reboot',
  () => {
    const mirror = hostMirror();
    const proxied: string[] = [];
    const gitRequests: string[] = [];
    const repoRequests: string[] = [];
    const servers: Server[] = [];
    const vms: ChildProcess[] = [];
    const figures: Array<[string, string]> = [];
    let service: ReturnType<typeof serve>;
    let servicePort = 0;
    let gitPort = 0;
    let proxyPort = 0;
    let repoPort = 0;
    let testDebs: Record<string, string> = {};
    let scratch = '';
    let disk = '';
    let kernel = '';
    let initrd = '';

    beforeAll(async () => {
      scratch = await mkdtemp(join(tmpdir(), 'fleet-device-vm-'));
      await new Promise<void>((ready) => {
        service = serve({ fetch: ctx.app.fetch, port: 0, hostname: '127.0.0.1' }, () => ready());
      });
      servicePort = (service.address() as AddressInfo).port;
      const proxy = await mirrorProxy(mirror, proxied);
      servers.push(proxy.server);
      proxyPort = proxy.port;

      // The role repository, bare, served over smart HTTP.
      const work = join(scratch, 'roles-work');
      for (const role of ROLES) {
        await mkdir(join(work, 'roles', role, 'tasks'), { recursive: true });
        await writeFile(join(work, 'roles', role, 'tasks', 'main.yml'), role === 'qgis' ? HELLO_ROLE : NOOP_ROLE);
      }
      git(work, 'init', '-q');
      git(work, 'add', '.');
      git(work, 'commit', '-qm', 'roles of the VM test');
      git(scratch, 'clone', '-q', '--bare', work, join(scratch, 'git', 'roles.git'));
      const roles = await gitServer(join(scratch, 'git'), gitRequests);
      servers.push(roles.server);
      gitPort = roles.port;

      // fleet-test-pkg: 1.0-1 for the image, 1.1-1 in the test's security suite.
      await mkdir(join(scratch, 'debs'));
      testDebs = {
        installed: await buildTestPackage(join(scratch, 'debs'), TEST_PKG.installed),
        candidate: await buildTestPackage(join(scratch, 'debs'), TEST_PKG.candidate),
      };
      const repo = await testRepository(testDebs.candidate!, repoRequests);
      servers.push(repo.server);
      repoPort = repo.port;

      const started = Date.now();
      const cached = existsSync(join(CACHE, 'ready'));
      await rootfs(`http://${mirror.host}${mirror.directory}`);
      figures.push([
        'root filesystem',
        cached ? `cached (${CACHE_KEY})` : `debootstrap ${((Date.now() - started) / 1000).toFixed(0)} s (${CACHE_KEY})`,
      ]);
    }, 40 * 60_000);

    afterAll(async () => {
      for (const vm of vms) vm.kill('SIGKILL');
      await new Promise((done) => service?.close(done));
      for (const s of servers) await new Promise((done) => s.close(done));
      if (scratch && process.env.FLEET_KEEP_VM !== '1') await run(['rm', '-rf', scratch], { root: true });
    });

    /** The guest's network: user networking with only the three forwards. */
    function nic(): string {
      const fwd = (guest: number, host: number) => `guestfwd=tcp:${HOST}:${guest}-cmd:socat - TCP:127.0.0.1:${host}`;
      return [
        'user,model=virtio-net-pci,restrict=on',
        fwd(GUEST_PORTS.service, servicePort),
        fwd(GUEST_PORTS.roles, gitPort),
        fwd(GUEST_PORTS.proxy, proxyPort),
        fwd(GUEST_PORTS.repo, repoPort),
      ].join(',');
    }

    interface Vm {
      child: ChildProcess;
      exited: Promise<number | null>;
      console: string;
      control: Control;
      startedAt: number;
    }

    /** Boots `options.disk` (default: the device's image) with `options.args` added to QEMU's. */
    async function boot(name: string, serial: string, options: { disk?: string; args?: string[] } = {}): Promise<Vm> {
      const consoleLog = join(scratch, `console-${name}.log`);
      const sock = join(scratch, `control-${name}.sock`);
      const args = [
        ...['-machine', 'q35,accel=tcg', '-m', '1536', '-smp', '2', '-no-reboot', '-display', 'none'],
        ...['-monitor', 'none', '-kernel', kernel, '-initrd', initrd],
        ...['-append', 'root=/dev/vda rw console=ttyS0 systemd.show_status=1'],
        ...['-drive', `file=${options.disk ?? disk},format=raw,if=virtio`, '-nic', nic()],
        ...['-serial', `file:${consoleLog}`],
        ...['-chardev', `socket,id=control,path=${sock},server=on,wait=off`, '-serial', 'chardev:control'],
        ...['-smbios', `type=1,serial=${serial}`],
        ...(options.args ?? []),
      ];
      const startedAt = Date.now();
      const child = spawn('qemu-system-x86_64', args, { stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr!.on('data', (c) => (stderr += c));
      vms.push(child);
      const exited = new Promise<number | null>((resolve) =>
        child.on('exit', (code) => {
          if (code !== 0 && stderr) console.warn(`qemu (${name}): ${stderr}`);
          resolve(code);
        }),
      );
      const control = await Control.open(sock, Date.now() + 30_000);
      return { child, exited, console: consoleLog, control, startedAt };
    }

    /**
     * A disk image of `root` (`mkfs.ext4 -d`, no loop mount), which is removed; the kernel and
     * initrd taken from the first one.
     */
    async function diskImage(root: string, name: string): Promise<string> {
      const file = join(scratch, name);
      await run(['mkfs.ext4', '-q', '-F', '-L', 'root', '-d', root, file, '3G'], { root: true });
      const owned = [file];
      if (kernel === '') {
        const boot0 = join(scratch, 'boot');
        await mkdir(boot0);
        const bootFiles = (await run(['ls', join(root, 'boot')], { root: true })).out.split('\n');
        kernel = join(boot0, 'vmlinuz');
        initrd = join(boot0, 'initrd.img');
        await run(['cp', join(root, 'boot', bootFiles.find((f) => f.startsWith('vmlinuz-'))!), kernel], { root: true });
        await run(['cp', join(root, 'boot', bootFiles.find((f) => f.startsWith('initrd.img-'))!), initrd], {
          root: true,
        });
        owned.push(kernel, initrd);
      }
      if (asRoot.length > 0)
        await run(['chown', `${process.getuid!()}:${process.getgid!()}`, ...owned], { root: true });
      await run(['rm', '-rf', root], { root: true });
      return file;
    }

    async function consoleTail(vm: Vm, lines = 80): Promise<string> {
      if (!existsSync(vm.console)) return '(no console output)';
      return (await readFile(vm.console, 'latin1')).split('\n').slice(-lines).join('\n');
    }

    /** Polls `check` every 2 s until it yields a value, or fails after `ms` with the console's end. */
    async function until<T>(vm: Vm, what: string, ms: number, check: () => Promise<T | undefined>): Promise<T> {
      const end = Date.now() + ms;
      for (;;) {
        const value = await check();
        if (value !== undefined) return value;
        if (Date.now() > end) {
          const journal = await vm.control.sh(
            'journalctl -b -u fleet-agent -o short-monotonic --no-pager | tail -n 40',
          );
          throw new Error(
            `timed out waiting for ${what}\n--- agent journal\n${journal.out}\n--- console\n${await consoleTail(vm)}`,
          );
        }
        await sleep(2000);
      }
    }

    async function events(deviceId: string): Promise<Array<{ merkmal: string; type: string; payload: any }>> {
      const res = await ctx.request('GET', `/api/v1/devices/${deviceId}/events?limit=500`);
      expect(res.status).toBe(200);
      return res.body.items;
    }

    async function ok(method: string, path: string, body?: unknown) {
      const res = await ctx.request(method, path, { body });
      expect(res.status, `${method} ${path}: ${JSON.stringify(res.body)}`).toBeLessThan(300);
      return res.body;
    }

    /** The agent's journal lines of this boot, as `<seconds since boot> <message>`. */
    async function agentJournal(vm: Vm, boot = '-b'): Promise<string[]> {
      const j = await vm.control.sh(`journalctl ${boot} -u fleet-agent -o short-monotonic --no-pager`);
      return j.out.split('\n').filter((l) => l.includes('fleet-agent'));
    }

    /** A systemd property of a unit. */
    async function prop(vm: Vm, unit: string, name: string): Promise<string> {
      return (await vm.control.sh(`systemctl show -P ${name} ${unit}`)).out.trim();
    }

    it(
      'boots, bootstraps, installs and removes hello with apt, reports, survives a reboot, obeys a deprovision',
      async () => {
        // -- image: handshake.sh under dash against the service, install.sh late into a copy.
        const imageStarted = Date.now();
        const org = await createOrganization(ctx);
        const code = await activationCodeOf(ctx, org.id);
        const fleet = join(scratch, 'fleet');
        await mkdir(join(fleet, 'agent'), { recursive: true });
        for (const file of ['handshake.sh', 'install.sh']) await cp(join(SCRIPTS, file), join(fleet, file));
        for (const file of await readdir(join(SCRIPTS, 'agent'))) {
          await cp(join(SCRIPTS, 'agent', file), join(fleet, 'agent', file));
        }
        await writeFile(
          join(fleet, 'provisioning.json'),
          JSON.stringify({
            schema_version: 2,
            build_id: crypto.randomUUID(),
            organization_id: null,
            credential: code,
            template_id: null,
            base_url: `http://127.0.0.1:${servicePort}`,
            api_url: `http://127.0.0.1:${servicePort}/api/v1`,
            backend: 'debian',
          }),
        );
        const serial = newSerial();
        const out = join(scratch, 'run-fleet');
        const env = { FLEET_OUT: out, FLEET_SERIAL: serial, FLEET_RETRIES: '2' };
        await run(['dash', join(fleet, 'handshake.sh')], { env });
        const root = join(scratch, 'root');
        await run(['cp', '-a', join(CACHE, 'rootfs'), root], { root: true });
        await run(['dash', join(fleet, 'install.sh'), 'late', root], { root: true, env });
        // This run's own files: the host name, and apt's proxy (the test's, to the mirror only).
        const extra = join(scratch, 'extra');
        await mkdir(join(extra, 'etc/apt/apt.conf.d'), { recursive: true });
        await writeFile(join(extra, 'etc/hostname'), `${GUEST_HOSTNAME}\n`);
        // The test's repository is reached directly, the mirror through the proxy.
        await writeFile(
          join(extra, 'etc/apt/apt.conf.d/01fleet-vm-proxy'),
          `Acquire::http::Proxy "http://${HOST}:${GUEST_PORTS.proxy}/";\nAcquire::http::Proxy::${HOST} "DIRECT";\n`,
        );
        await mkdir(join(extra, 'etc/apt/sources.list.d'), { recursive: true });
        await writeFile(
          join(extra, 'etc/apt/sources.list.d/fleet-test.list'),
          `deb [trusted=yes] http://${HOST}:${GUEST_PORTS.repo}/ bookworm-security main\n`,
        );
        await run(['cp', '-r', `${extra}/.`, root], { root: true });
        // fleet-test-pkg 1.0-1 installed, as a package of the device's own.
        await run(['cp', testDebs.installed!, join(root, 'tmp/fleet-test-pkg.deb')], { root: true });
        await run(['chroot', root, 'dpkg', '-i', '/tmp/fleet-test-pkg.deb'], {
          root: true,
          env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' },
        });
        await run(['rm', '-f', join(root, 'tmp/fleet-test-pkg.deb')], { root: true });
        const agentConf = JSON.parse((await run(['cat', join(root, 'etc/fleet/agent.json')], { root: true })).out);
        expect(agentConf.base_url).toBe(`http://${HOST}:${GUEST_PORTS.service}`);
        const deviceId: string = agentConf.device_id;
        disk = await diskImage(root, 'disk.img');
        figures.push([
          'image (copy, handshake, install.sh late, mkfs.ext4 -d)',
          `${(Date.now() - imageStarted) / 1000} s`,
        ]);

        // The order the first apply installs: qgis at the device's org unit, with optionen.
        const device = await ok('GET', `/api/v1/devices/${deviceId}`);
        expect(device.hostname).toBeNull();
        await ok('POST', `/api/v1/org-units/${device.oe_id}/catalog/qgis/select`, { optionen: { note: OPTION_VALUE } });

        // -- first boot
        const vm = await boot('first', serial);
        await vm.control.ready(Date.now() + BOOT_MS);
        const multiUser = await until(vm, 'multi-user.target', 5 * 60_000, async () => {
          const at = Number(await prop(vm, 'multi-user.target', 'ActiveEnterTimestampMonotonic'));
          return at > 0 ? at : undefined;
        });
        figures.push([
          'boot to multi-user.target',
          `${(multiUser / 1e6).toFixed(1)} s guest (${((Date.now() - vm.startedAt) / 1000).toFixed(0)} s from QEMU's start to the control shell)`,
        ]);
        expect(await prop(vm, 'fleet-agent.service', 'ActiveState')).toBe('active');
        const agentStart = Number(await prop(vm, 'fleet-agent.service', 'ExecMainStartTimestampMonotonic'));
        const online = Number(await prop(vm, 'network-online.target', 'ActiveEnterTimestampMonotonic'));
        expect(online).toBeGreaterThan(0);
        expect(agentStart).toBeGreaterThanOrEqual(online);
        figures.push(['agent started after network-online.target', `${((agentStart - online) / 1e6).toFixed(2)} s`]);

        // bootstrap → check-in → apply → report: hello installed, qgis reported applied.
        const applied = await until(vm, 'the first report', APPLY_MS, async () =>
          (await events(deviceId)).find((e) => e.merkmal === 'qgis' && e.type === 'applied'),
        );
        expect(applied.payload.detail).toMatchObject({ role: 'qgis', changed: true });
        const hello = await vm.control.sh(`dpkg-query -W -f='\${Status}' hello && hello`);
        expect(hello.out).toContain('install ok installed');
        expect(hello.out).toContain('Hello, world!');
        let journal = await agentJournal(vm);
        const text = () => journal.join('\n');
        expect(text()).toContain('bootstrapped');
        expect(gitRequests.some((r) => r.startsWith('POST /roles.git/git-upload-pack'))).toBe(true);
        expect(proxied.some((p) => p.endsWith('.deb') && p.includes('/hello_'))).toBe(true);

        // The next poll: a 304. Then the CPU of the agent's unit over two more 304 cycles.
        await until(vm, 'a 304', 3 * 60_000, async () => {
          journal = await agentJournal(vm);
          return text().includes('(304)') ? true : undefined;
        });
        const cpu0 = Number(await prop(vm, 'fleet-agent.service', 'CPUUsageNSec'));
        const count304 = () => journal.filter((l) => l.includes('(304)')).length;
        const n0 = count304();
        await until(vm, 'two more 304s', 3 * 60_000, async () => {
          journal = await agentJournal(vm);
          return count304() >= n0 + 2 ? true : undefined;
        });
        const cpu1 = Number(await prop(vm, 'fleet-agent.service', 'CPUUsageNSec'));
        const cycles = count304() - n0;
        // Whether those cycles read the inventory again (python3 and dpkg-query): they should not.
        const collected = journal.slice(journal.findIndex((l) => l.includes('(304)')) + 1);
        figures.push([
          'agent CPU per 304 cycle (guest, unit accounting)',
          `${((cpu1 - cpu0) / 1e6 / cycles).toFixed(0)} ms (${collected.filter((l) => l.includes('inventory: ')).length} inventories collected in them)`,
        ]);
        figures.push([
          'first apply (check-in to report accepted)',
          span(journal, 'checked in: new desired state', 'accepted'),
        ]);
        figures.push(['304 cycle (wall, guest)', cycleSpan(journal)]);
        const firstCycle = journal.slice(0, journal.findIndex((l) => l.includes('(304)')) + 2);

        // The device's host name, from the agent's hardware report.
        expect((await ok('GET', `/api/v1/devices/${deviceId}`)).hostname).toBe(GUEST_HOSTNAME);

        // -- the software inventory: the guest's packages, fleet-test-pkg's pending security update.
        const guestCount = Number((await vm.control.sh('dpkg-query -W | wc -l')).out.trim());
        expect(guestCount).toBeGreaterThan(100);
        const kept = JSON.parse((await vm.control.sh('cat /var/lib/fleet/inventory.json', 120_000)).out);
        expect(kept.hash).toBe(inventoryHash(kept));
        expect(kept.packages).toHaveLength(guestCount);
        expect(kept.packages).toContainEqual({
          name: TEST_PKG.name,
          version: TEST_PKG.installed,
          arch: 'all',
          source: TEST_PKG.name,
          source_version: TEST_PKG.installed,
        });
        expect(kept.os).toEqual({ id: 'debian', version_id: '12', codename: SUITE });
        expect(kept.kernel).toBe((await vm.control.sh('uname -r')).out.trim());
        expect(kept.pending).toContainEqual({
          name: TEST_PKG.name,
          installed: TEST_PKG.installed,
          candidate: TEST_PKG.candidate,
          security: true,
        });
        expect(repoRequests).toContain('GET /dists/bookworm-security/Release');
        expect(text()).toMatch(/inventory: \d+ packages, \d+ pending \([1-9]\d* security\)/);
        figures.push(['inventory (guest)', `${kept.packages.length} packages, ${kept.pending.length} pending`]);
        // The service holds the same inventory, and matches it against the Debian data.
        const held = await ctx.request('GET', `/api/v1/devices/${deviceId}/inventory`);
        expect(held.status, JSON.stringify(held.body)).toBe(200);
        expect(text()).toContain('inventory sent');
        expect(held.body).toMatchObject({
          os: kept.os,
          kernel: kept.kernel,
          packages_count: guestCount,
          reboot_required: kept.reboot_required,
        });
        expect(held.body.pending).toContainEqual({
          name: TEST_PKG.name,
          installed: TEST_PKG.installed,
          candidate: TEST_PKG.candidate,
          security: true,
        });
        expect(held.body.security_pending_count).toBeGreaterThanOrEqual(1);
        // CVE-2099-0001 of the Debian sample names fleet-test-pkg, fixed in 1.1-1 for bookworm:
        // the feed job's import and the matching it starts, as the worker runs them.
        expect((await refreshFeed(ctx.sql, 'debian', DEBIAN_SAMPLE)).outcome).not.toBe('failed');
        await matchOutdated(ctx.sql);
        const cve = await until(vm, 'CVE-2099-0001 matched', 5 * 60_000, async () => {
          const res = await ctx.request('GET', `/api/v1/devices/${deviceId}/vulnerabilities`);
          if (res.status !== 200) return undefined;
          return (res.body.items as Array<{ cve: string }>).find((v) => v.cve === 'CVE-2099-0001');
        });
        expect(cve).toEqual({
          cve: 'CVE-2099-0001',
          urgency: 'high',
          status: 'fixed_available',
          source: TEST_PKG.name,
          installed_version: TEST_PKG.installed,
          fixed_version: TEST_PKG.candidate,
          binaries: [TEST_PKG.name],
        });

        // -- an `apply_updates` action (issue 52): real apt upgrades fleet-test-pkg from the
        // test's security suite, the result lists it, the new inventory has 1.1-1 and
        // CVE-2099-0001 is gone from the device's vulnerabilities.
        const queuedAt = Date.now();
        const updates = await ok('POST', `/api/v1/devices/${deviceId}/actions`, { type: 'apply_updates' });
        expect(updates).toMatchObject({ status: 'pending', parameters: { security_only: true } });
        const updated = await until(vm, 'the apply_updates result', APPLY_MS, async () => {
          const action = await ok('GET', `/api/v1/actions/${updates.id}`);
          return ['succeeded', 'failed'].includes(action.status) ? action : undefined;
        });
        expect(updated.status, JSON.stringify(updated.result)).toBe('succeeded');
        expect(updated.result.details.upgraded).toContainEqual({
          name: TEST_PKG.name,
          from: TEST_PKG.installed,
          to: TEST_PKG.candidate,
        });
        figures.push(['apply_updates (queued to result)', `${((Date.now() - queuedAt) / 1000).toFixed(1)} s`]);
        expect((await vm.control.sh(`dpkg-query -W -f='\${Version}' ${TEST_PKG.name}`)).out.trim()).toBe(
          TEST_PKG.candidate,
        );
        expect(repoRequests).toContain(`GET /pool/main/${TEST_PKG.name}_${TEST_PKG.candidate}_all.deb`);
        // The inventory was sent before the result: the service holds 1.1-1 already.
        const after = await ctx.request('GET', `/api/v1/devices/${deviceId}/packages?q=${TEST_PKG.name}`);
        expect(after.status, JSON.stringify(after.body)).toBe(200);
        expect(after.body.items).toContainEqual(
          expect.objectContaining({ name: TEST_PKG.name, version: TEST_PKG.candidate }),
        );
        await until(vm, 'CVE-2099-0001 gone from the device', 5 * 60_000, async () => {
          const res = await ctx.request('GET', `/api/v1/devices/${deviceId}/vulnerabilities`);
          if (res.status !== 200) return undefined;
          return (res.body.items as Array<{ cve: string }>).some((v) => v.cve === 'CVE-2099-0001') ? undefined : true;
        });

        // -- a deselect at the org unit: hello removed, `removed` reported.
        await ok('POST', `/api/v1/org-units/${device.oe_id}/catalog/qgis/deselect`);
        const removed = await until(vm, 'the removal report', APPLY_MS, async () =>
          (await events(deviceId)).find((e) => e.merkmal === 'qgis' && e.type === 'removed'),
        );
        expect(removed.payload.detail).toMatchObject({ role: 'qgis', changed: true });
        // Not `command -v`: the shell remembers where it found hello before.
        const gone = await vm.control.sh(
          `dpkg-query -W -f='\${Status}' hello; test -e /usr/bin/hello && echo still-there`,
        );
        expect(gone.out).not.toContain('install ok installed');
        expect(gone.out).not.toContain('still-there');
        journal = await agentJournal(vm);
        const second = journal.slice(journal.findLastIndex((l) => l.includes('checked in: new desired state')));
        figures.push([
          'second apply (check-in to report accepted)',
          span(second, 'checked in: new desired state', 'accepted'),
        ]);

        // Nothing of a role's arguments in the journal: no module log, no optionen.
        const all = await vm.control.sh('journalctl -b --no-pager -o cat');
        expect(all.out).not.toContain('Invoked with');
        expect(all.out).not.toContain(OPTION_VALUE);

        // -- systemctl stop leaves the unit inactive, not failed.
        await vm.control.sh('systemctl stop fleet-agent.service', 120_000);
        expect(await prop(vm, 'fleet-agent.service', 'ActiveState')).toBe('inactive');
        expect(await prop(vm, 'fleet-agent.service', 'Result')).toBe('success');

        // -- a `reboot` action (issue 52): the agent restarts the guest (QEMU runs with
        // -no-reboot, so the restart ends its process), and after the boot the action is
        // reported succeeded, once; then a 304 without a bootstrap.
        await vm.control.sh('systemctl start fleet-agent.service', 120_000);
        const reboot = await ok('POST', `/api/v1/devices/${deviceId}/actions`, {
          type: 'reboot',
          parameters: { delay_seconds: 0, message: 'fleet VM test' },
        });
        const rebootAsked = Date.now();
        expect(await Promise.race([vm.exited, sleep(APPLY_MS).then(() => 'timeout')])).toBe(0);
        vm.control.close();
        expect(await readFile(vm.console, 'latin1')).toContain('reboot: Restarting system');
        expect((await ok('GET', `/api/v1/actions/${reboot.id}`)).status).toBe('running');

        const again = await boot('second', serial);
        await again.control.ready(Date.now() + BOOT_MS);
        const rebooted = await until(again, 'the reboot result', BOOT_MS, async () => {
          const action = await ok('GET', `/api/v1/actions/${reboot.id}`);
          return action.status === 'running' ? undefined : action;
        });
        expect(rebooted.status, JSON.stringify(rebooted.result)).toBe('succeeded');
        expect(Date.parse(rebooted.result.details.booted_at)).toBeGreaterThan(rebootAsked - 60_000);
        figures.push([
          'reboot action (queued to result after the boot)',
          `${((Date.now() - rebootAsked) / 1000).toFixed(1)} s`,
        ]);
        await until(again, 'a 304 after the reboot', BOOT_MS, async () => {
          journal = await agentJournal(again);
          return text().includes('(304)') ? true : undefined;
        });
        expect(text()).toContain(`action ${reboot.id} (reboot): the device is back`);
        expect(text()).not.toContain('bootstrapping');
        expect(text()).not.toContain('applying with');
        // The stop at the restart before: a clean end of the unit, not a failure.
        const before = (await again.control.sh('journalctl -b -1 -u fleet-agent --no-pager -o cat')).out;
        expect(before).not.toMatch(/Failed with result|status=143/);

        // -- deprovision: the agent says why and applies nothing.
        await ok('POST', `/api/v1/devices/${deviceId}/deprovision`);
        await until(again, 'the refusal', 3 * 60_000, async () => {
          journal = await agentJournal(again);
          // Wait for the agent's own explanation: it follows the refusal line in a separate write.
          return text().includes('the device is deprovisioned or archived') ? true : undefined;
        });
        expect(text()).toMatch(/check-in refused by the service \(HTTP 403\): device_deprovisioned/);
        expect(text()).toContain('the device is deprovisioned or archived');
        expect(text()).not.toContain('applying with');

        // -- a clean power-off.
        again.control.sh('systemctl poweroff', 5_000).catch(() => undefined);
        expect(await Promise.race([again.exited, sleep(180_000).then(() => 'timeout')])).toBe(0);
        again.control.close();
        expect(await readFile(again.console, 'latin1')).toContain('reboot: Power down');

        console.log(
          [
            `device VM figures (TCG, ${CACHE}):`,
            ...figures.map(([k, v]) => `  ${k}: ${v}`),
            'the agent journal of the first boot up to its first 304:',
            ...firstCycle.map((l) => `  ${l}`),
            'after the reboot and the deprovision:',
            ...journal.map((l) => `  ${l}`),
          ].join('\n'),
        );
      },
      80 * 60_000,
    );

    /**
     * An emulated TPM 2.0 for a boot: `swtpm` on a socket, its state in `dir` (kept across
     * boots, as a chip keeps its seeds), ended with QEMU (`--terminate`).
     */
    async function emulatedTpm(dir: string): Promise<string[]> {
      await mkdir(dir, { recursive: true });
      const sock = join(dir, 'swtpm.sock');
      const tpm = spawn(
        'swtpm',
        ['socket', '--tpm2', '--tpmstate', `dir=${dir}`, '--ctrl', `type=unixio,path=${sock}`, '--terminate'],
        { stdio: ['ignore', 'ignore', 'inherit'] },
      );
      vms.push(tpm);
      for (const end = Date.now() + 30_000; !existsSync(sock); await sleep(100)) {
        if (Date.now() > end || tpm.exitCode !== null) throw new Error(`swtpm did not start (exit ${tpm.exitCode})`);
      }
      return [
        ...['-chardev', `socket,id=chrtpm,path=${sock}`, '-tpmdev', 'emulator,id=tpm0,chardev=chrtpm'],
        ...['-device', 'tpm-tis,tpmdev=tpm0'],
      ];
    }

    it.skipIf(missingTools('swtpm', 'cryptsetup'))(
      'disk encryption on an emulated TPM: the late command binds the disk with clevis (PCR 7), clevis unlocks it without a key after a reboot, the escrowed key still opens it',
      async () => {
        const started = Date.now();
        const tpmFigures: Array<[string, string]> = [];
        const transcript: string[] = [];
        // Printed after a failure too: what ran in the guest (the scripts print no key).
        onTestFinished(() =>
          console.log(
            [
              `disk encryption on an emulated TPM (TCG, ${CACHE}):`,
              ...tpmFigures.map(([k, v]) => `  ${k}: ${v}`),
              'transcript (no key in it):',
              ...transcript
                .join('\n')
                .split('\n')
                .map((l) => `  ${l}`),
            ].join('\n'),
          ),
        );
        // -- the handshake of an image bound to the encrypted template (unlock: tpm2), on the host.
        const org = await createOrganization(ctx);
        const fleet = join(scratch, 'tpm-fleet');
        await mkdir(join(fleet, 'agent'), { recursive: true });
        for (const file of ['handshake.sh', 'install.sh']) await cp(join(SCRIPTS, file), join(fleet, file));
        for (const file of await readdir(join(SCRIPTS, 'agent'))) {
          await cp(join(SCRIPTS, 'agent', file), join(fleet, 'agent', file));
        }
        await writeFile(
          join(fleet, 'provisioning.json'),
          JSON.stringify({
            credential: await activationCodeOf(ctx, org.id),
            template_id: TEMPLATES.debianEncrypted,
            api_url: `http://127.0.0.1:${servicePort}/api/v1`,
          }),
        );
        const out = join(scratch, 'tpm-run-fleet');
        await run(['dash', join(fleet, 'handshake.sh')], { env: { FLEET_OUT: out, FLEET_SERIAL: newSerial() } });
        expect(JSON.parse(await readFile(join(out, 'blueprint.json'), 'utf8')).partitioning.encryption).toEqual({
          type: 'luks2',
          unlock: 'tpm2',
        });
        const passphrase = await readFile(join(out, 'install-passphrase'), 'utf8');
        const deviceId: string = JSON.parse(await readFile(join(out, 'agent.json'), 'utf8')).device_id;

        // -- the disk as the installer leaves it: LUKS2 with one slot, the install passphrase (a
        // fast PBKDF: the host's default would ask more memory than the guest has), a second disk.
        const luks = join(scratch, 'luks.img');
        await run(['truncate', '-s', '64M', luks]);
        await runWithInput(
          [CRYPTSETUP, 'luksFormat', '--type', 'luks2', '--batch-mode', ...FAST_PBKDF, '--key-file=-', luks],
          passphrase,
        );
        const luksUuid = (await run([CRYPTSETUP, 'luksUUID', luks])).out.trim();

        // -- the guest: the image's /fleet in /root/fleet, the handshake's /run/fleet in /root/fleet-run.
        const root = join(scratch, 'root-tpm');
        await run(['cp', '-a', join(CACHE, 'rootfs'), root], { root: true });
        await run(['cp', '-r', fleet, join(root, 'root/fleet')], { root: true });
        await run(['cp', '-r', out, join(root, 'root/fleet-run')], { root: true });
        const tpmDisk = await diskImage(root, 'disk-tpm.img');
        const tpmState = join(scratch, 'tpm-state');
        const drives = ['-drive', `file=${luks},format=raw,if=virtio`];
        tpmFigures.push([
          'image (handshake, LUKS2 container, copy, mkfs.ext4 -d)',
          `${(Date.now() - started) / 1000} s`,
        ]);

        const first = await boot('tpm-first', newSerial(), {
          disk: tpmDisk,
          args: [...(await emulatedTpm(tpmState)), ...drives],
        });
        await first.control.ready(Date.now() + BOOT_MS);
        tpmFigures.push([
          'boot with a TPM (QEMU start to the control shell)',
          `${(Date.now() - first.startedAt) / 1000} s`,
        ]);
        const chip = await first.control.sh('ls /dev/tpm0 /dev/tpmrm0 && tpm2_pcrread sha256:7', 120_000);
        expect(chip.code, chip.out).toBe(0);
        transcript.push(`$ tpm2_pcrread sha256:7\n${chip.out.trim()}`);
        const found = await first.control.sh('blkid -t TYPE=crypto_LUKS -o device');
        expect(found.out.trim()).toBe('/dev/vdb');

        // -- the late command, as the installer runs it (its own scripts, the LUKS volume found by blkid).
        const lateStarted = Date.now();
        const late = await first.control.sh(
          'FLEET_OUT=/root/fleet-run sh /root/fleet/install.sh late /root/target',
          20 * 60_000,
        );
        tpmFigures.push(['late command (key swap, escrow, clevis bind)', `${(Date.now() - lateStarted) / 1000} s`]);
        transcript.push(`$ install.sh late /root/target\n${late.out.trim()}`);
        expect(late.code, late.out).toBe(0);
        expect(late.out).toMatch(/recovery key of \/dev\/vdb escrowed \(HTTP 201\)/);
        expect(late.out).not.toContain('warning');
        expect((await first.control.sh('test -e /root/fleet-run/install-passphrase')).code).toBe(1);
        // clevis's binding: a tpm2 pin on PCR 7 in a LUKS2 token, beside the recovery key's slot.
        const list = await first.control.sh('clevis luks list -d /dev/vdb');
        transcript.push(`$ clevis luks list -d /dev/vdb\n${list.out.trim()}`);
        const binding = /^(\d+): tpm2 '(.+)'$/m.exec(list.out);
        expect(binding, list.out).not.toBeNull();
        expect(JSON.parse(binding![2]!)).toMatchObject({ pcr_bank: 'sha256', pcr_ids: '7' });
        const clevisSlot = Number(binding![1]);

        // -- unlocked by the TPM alone, in this boot.
        const unlock =
          'clevis luks unlock -d /dev/vdb -n fleet-tpm && cryptsetup status fleet-tpm | head -n 2 && cryptsetup close fleet-tpm';
        const unlockStarted = Date.now();
        const once = await first.control.sh(unlock, 5 * 60_000);
        tpmFigures.push([
          'clevis luks unlock, cryptsetup status and close',
          `${(Date.now() - unlockStarted) / 1000} s`,
        ]);
        transcript.push(`$ ${unlock}\n${once.out.trim()}`);
        expect(once.code, once.out).toBe(0);
        expect(once.out).toContain('/dev/mapper/fleet-tpm is active');
        let journal = (await first.control.sh('journalctl -b --no-pager -o cat', 120_000)).out;
        first.control.sh('systemctl poweroff', 5_000).catch(() => undefined);
        expect(await Promise.race([first.exited, sleep(180_000).then(() => 'timeout')])).toBe(0);
        first.control.close();

        // -- after a power-off, the same TPM: PCR 7 measured anew unlocks it; a changed PCR 7 does not.
        const second = await boot('tpm-second', newSerial(), {
          disk: tpmDisk,
          args: [...(await emulatedTpm(tpmState)), ...drives],
        });
        await second.control.ready(Date.now() + BOOT_MS);
        tpmFigures.push([
          'second boot (QEMU start to the control shell)',
          `${(Date.now() - second.startedAt) / 1000} s`,
        ]);
        const again = await second.control.sh(unlock, 5 * 60_000);
        transcript.push(`(power-off, boot)\n$ ${unlock}\n${again.out.trim()}`);
        expect(again.code, again.out).toBe(0);
        const extend = `tpm2_pcrextend 7:sha256=${'ab'.repeat(32)} && tpm2_pcrread sha256:7`;
        const extended = await second.control.sh(extend, 120_000);
        transcript.push(`$ ${extend}\n${extended.out.trim()}`);
        expect(extended.code, extended.out).toBe(0);
        const refused = await second.control.sh('clevis luks unlock -d /dev/vdb -n fleet-tpm', 5 * 60_000);
        transcript.push(`$ clevis luks unlock -d /dev/vdb -n fleet-tpm\n${refused.out.trim()}\n(exit ${refused.code})`);
        expect(refused.code).not.toBe(0);
        expect((await second.control.sh('test -e /dev/mapper/fleet-tpm')).code).toBe(1);
        journal += (await second.control.sh('journalctl -b --no-pager -o cat', 120_000)).out;
        second.control.sh('systemctl poweroff', 5_000).catch(() => undefined);
        expect(await Promise.race([second.exited, sleep(180_000).then(() => 'timeout')])).toBe(0);
        second.control.close();

        // -- on the host: the escrowed key opens the disk, the install passphrase no longer does.
        const listed = await ctx.request('GET', `/api/v1/devices/${deviceId}/disk-keys`);
        expect(listed.status).toBe(200);
        expect(listed.body.items).toHaveLength(1);
        const [key] = listed.body.items as Array<{ id: string; luks_uuid: string; keyslot: number; status: string }>;
        expect(key).toMatchObject({ luks_uuid: luksUuid, status: 'escrowed' });
        const dump = (await run([CRYPTSETUP, 'luksDump', luks])).out;
        const slots = [
          ...dump.slice(dump.indexOf('Keyslots:'), dump.indexOf('Tokens:')).matchAll(/^ {2}(\d+): luks2/gm),
        ];
        expect(slots.map((m) => Number(m[1])).sort()).toEqual([key!.keyslot, clevisSlot].sort());
        const revealed = await ctx.request('POST', `/api/v1/disk-keys/${key!.id}/reveal`, {
          body: { reason: 'VM test: the escrowed key opens a TPM-bound disk' },
        });
        const recoveryKey: string = revealed.body.recovery_key;
        expect(await opensWith(luks, recoveryKey)).toBe(true);
        expect(await opensWith(luks, passphrase)).toBe(false);
        // Neither key in the guest's journal (both boots) nor in the transcript.
        for (const secret of [recoveryKey, recoveryKey.replaceAll('-', ''), passphrase]) {
          expect(journal).not.toContain(secret);
          expect(transcript.join('\n')).not.toContain(secret);
        }
        tpmFigures.push(['whole test (image to the last power-off)', `${(Date.now() - started) / 1000} s`]);
      },
      60 * 60_000,
    );
  },
);

/** Seconds between the first line containing `from` and the next containing `to` (journal monotonic stamps). */
function span(lines: string[], from: string, to: string): string {
  const at = (line: string | undefined) => Number(/^\[\s*([\d.]+)\]/.exec(line ?? '')?.[1] ?? Number.NaN);
  const i = lines.findIndex((l) => l.includes(from));
  const j = lines.findIndex((l, k) => k > i && l.includes(to));
  return i < 0 || j < 0 ? 'not found' : `${(at(lines[j]) - at(lines[i])).toFixed(1)} s`;
}

/** A 304 cycle's wall time: from the end of the wait before it to its "next check-in" line. */
function cycleSpan(lines: string[]): string {
  const at = (line: string) => Number(/^\[\s*([\d.]+)\]/.exec(line)?.[1] ?? Number.NaN);
  const spans: number[] = [];
  for (let k = 1; k < lines.length; k++) {
    if (!lines[k]!.includes('(304)')) continue;
    const prev = lines.slice(0, k).findLast((l) => /next check-in in \d+s/.test(l));
    const next = lines.slice(k).find((l) => /next check-in in \d+s/.test(l));
    if (!prev || !next) continue;
    const waited = Number(/next check-in in (\d+)s/.exec(prev)![1]);
    spans.push(at(next) - at(prev) - waited);
  }
  return spans.length === 0 ? 'not found' : spans.map((s) => `${s.toFixed(2)} s`).join(', ');
}
