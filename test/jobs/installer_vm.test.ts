/**
 * The Debian path in a VM (issue 21): Debian's own netboot installer (the package
 * debian-installer-12-netboot-amd64) boots in QEMU without KVM, with the preseed the image
 * carries and the scripts of /fleet put into its initrd, against the real service reached
 * from the guest at 10.0.2.2 (QEMU's user networking):
 *   - a refused credential: the installer powers the VM off, the disk is still all zeros;
 *   - an accepted one: the disk gets a partition table (the test stops the VM there).
 * The guest reaches the Debian mirror through a small HTTP proxy of this test, which
 * resolves names with the host's resolver; the mirror's name comes from the host's apt
 * configuration (nothing here names one). The serial console is kept; on failure the test
 * shows its last lines (d-i's syslog is copied there by the test's preseed/early_command).
 *
 * Slow by nature (minutes under TCG): it runs only where QEMU and the netboot package are
 * installed (test/support/tools.ts), with its own timeouts. Before partman the installer
 * loads its components from the mirror; where the mirror this host reaches cannot serve
 * them (a partial cache answers 404, and d-i stops at "Loading additional components"),
 * the tests are skipped with the missing files named, instead of running into that wall.
 * Fetching the same udebs with `apt-get download` (the mirror's `main/debian-installer`
 * component) does not help there: apt asks the same mirror and gets the same 404s.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createReadStream, existsSync } from 'node:fs';
import { copyFile, mkdtemp, open, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { serve } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { debianPreseed } from '../../jobs/iso/installer_config.ts';
import { newSerial, TEMPLATES } from '../support/activation.ts';
import { useTestApp } from '../support/app.ts';
import { activationCodeOf, createOrganization } from '../support/builders.ts';
import { missingTools } from '../support/tools.ts';
import { hostMirror, mirrorProxy } from '../support/vm.ts';

const NETBOOT = '/usr/lib/debian-installer/images/12/amd64/text/debian-installer/amd64';
const SCRIPTS = join(import.meta.dirname, '../../jobs/iso/installer');
const RUN_MS = 25 * 60_000; // one boot under TCG: about a minute to the network, then the mirror
const DISK_BYTES = 4 * 1024 ** 3;

const ctx = useTestApp();

/** Components d-i fetches from the mirror on its way to partman (a sample of each kind). */
const COMPONENTS = [
  'apt-mirror-setup',
  'user-setup-udeb',
  'clock-setup',
  'disk-detect',
  'partman-base',
  'partman-partitioning',
  'partman-ext3',
  'libparted2-udeb',
];

function get(url: string, method = 'GET'): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
    });
    req.setTimeout(20_000, () => req.destroy(new Error(`no answer from ${url}`)));
    req.on('error', reject);
    req.end();
  });
}

/** The components the mirror does not serve ("why" when it serves them all: null). */
async function mirrorGaps(mirror: { host: string; directory: string }): Promise<string | null> {
  const base = `http://${mirror.host}${mirror.directory}`;
  const index = await get(`${base}/dists/bookworm/main/debian-installer/binary-amd64/Packages.gz`).catch(
    (err: Error) => ({ status: 0, body: Buffer.from(err.message) }),
  );
  if (index.status !== 200) return `the mirror has no installer index (HTTP ${index.status})`;
  const files = new Map<string, string>();
  for (const stanza of gunzipSync(index.body).toString('utf8').split('\n\n')) {
    const name = /^Package: (\S+)$/m.exec(stanza)?.[1];
    const file = /^Filename: (\S+)$/m.exec(stanza)?.[1];
    if (name && file) files.set(name, file);
  }
  const missing: string[] = [];
  for (const name of COMPONENTS) {
    const file = files.get(name);
    const head = file ? await get(`${base}/${file}`, 'HEAD').catch(() => ({ status: 0 })) : { status: 0 };
    if (head.status !== 200) missing.push(file ?? name);
  }
  return missing.length === 0 ? null : `the mirror ${mirror.host} does not serve ${missing.join(', ')}`;
}

/** A cpio archive in the "newc" format the kernel unpacks as an initramfs. */
function cpio(entries: Array<{ path: string; mode: number; data?: Buffer }>): Buffer {
  const parts: Buffer[] = [];
  const pad = (n: number) => Buffer.alloc((4 - (n % 4)) % 4);
  let ino = 1;
  const add = (name: string, mode: number, data: Buffer) => {
    const fields = [ino++, mode, 0, 0, 1, 0, data.length, 0, 0, 0, 0, Buffer.byteLength(name) + 1, 0];
    const header = `070701${fields.map((f) => f.toString(16).padStart(8, '0')).join('')}`;
    const head = Buffer.from(`${header}${name}\0`);
    parts.push(head, pad(head.length), data, pad(data.length));
  };
  for (const e of entries) add(e.path, e.mode, e.data ?? Buffer.alloc(0));
  add('TRAILER!!!', 0, Buffer.alloc(0));
  return Buffer.concat(parts);
}

/** Whether the disk image holds anything but zeros (read in chunks; the image is sparse). */
async function allZeros(path: string): Promise<boolean> {
  const zeros = Buffer.alloc(4 * 1024 * 1024);
  for await (const chunk of createReadStream(path, { highWaterMark: zeros.length })) {
    const bytes = chunk as Buffer;
    if (!bytes.equals(zeros.subarray(0, bytes.length))) return false;
  }
  return true;
}

/** An MBR's boot signature or a GPT header in the first sectors. */
async function hasPartitionTable(path: string): Promise<boolean> {
  const handle = await open(path, 'r');
  try {
    const head = Buffer.alloc(1024);
    await handle.read(head, 0, 1024, 0);
    return (head[510] === 0x55 && head[511] === 0xaa) || head.subarray(512, 520).toString('latin1') === 'EFI PART';
  } finally {
    await handle.close();
  }
}

describe.skipIf(missingTools('qemu-system-x86_64', 'debian-installer-12-netboot-amd64'))(
  "Debian's netboot installer in QEMU with the image's preseed and scripts",
  () => {
    let service: ReturnType<typeof serve>;
    let servicePort: number;
    let proxy: Server;
    let proxyPort: number;
    let scratch: string;
    let code: string;
    const mirror = hostMirror();
    const vms: ChildProcess[] = [];
    const proxied: string[] = [];
    let blocked: string | null = null;

    beforeAll(async () => {
      await new Promise<void>((ready) => {
        service = serve({ fetch: ctx.app.fetch, port: 0, hostname: '127.0.0.1' }, () => ready());
      });
      servicePort = (service.address() as AddressInfo).port;
      // A forward proxy for the mirror only: the guest asks with absolute URLs.
      ({ server: proxy, port: proxyPort } = await mirrorProxy(mirror, proxied));
      scratch = await mkdtemp(join(tmpdir(), 'fleet-vm-'));
      const org = await createOrganization(ctx);
      code = await activationCodeOf(ctx, org.id);
      blocked = await mirrorGaps(mirror);
      if (blocked) console.warn(`installer VM tests skipped: ${blocked}`);
    });

    afterAll(async () => {
      for (const vm of vms) vm.kill('SIGKILL');
      await new Promise((done) => service?.close(done));
      await new Promise((done) => proxy?.close(done));
      if (process.env.FLEET_KEEP_VM !== '1') await rm(scratch, { recursive: true, force: true });
    });

    /** The netboot initrd with the image's preseed and /cdrom/fleet appended (a second cpio). */
    async function initrd(dir: string, credential: string, preseedLines: string[]): Promise<string> {
      const preseed = [
        debianPreseed({
          id: TEMPLATES.debianStandard,
          backend: 'debian',
          partitioning: { scheme: 'single', root_filesystem: 'ext4' },
          installation: { locale: 'en_US.UTF-8', keyboard: 'us', timezone: 'Etc/UTC', packages: [] },
        }),
        '# The VM test: the mirror through the test proxy, a short power-off delay, and',
        "# d-i's log copied to the serial console for the test's report.",
        'd-i mirror/country string manual',
        `d-i mirror/http/hostname string ${mirror.host}`,
        `d-i mirror/http/directory string ${mirror.directory}`,
        `d-i mirror/http/proxy string http://10.0.2.2:${proxyPort}/`,
        // Closed fds: a background process holding debconf's pipes would stall the installer.
        'd-i preseed/early_command string (tail -f /var/log/syslog </dev/null >/dev/ttyS0 2>&1 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &)',
        'd-i partman/early_command string FLEET_POWEROFF_DELAY=5 sh /cdrom/fleet/install.sh debian-early',
        ...preseedLines,
        '',
      ].join('\n');
      const provisioning = {
        schema_version: 2,
        build_id: crypto.randomUUID(),
        organization_id: null,
        credential,
        template_id: null,
        base_url: `http://10.0.2.2:${servicePort}`,
        api_url: `http://10.0.2.2:${servicePort}/api/v1`,
        backend: 'debian',
      };
      const extra = cpio([
        { path: 'preseed.cfg', mode: 0o100644, data: Buffer.from(preseed) },
        { path: 'cdrom', mode: 0o40755 },
        { path: 'cdrom/fleet', mode: 0o40755 },
        { path: 'cdrom/fleet/handshake.sh', mode: 0o100755, data: await readFile(join(SCRIPTS, 'handshake.sh')) },
        { path: 'cdrom/fleet/install.sh', mode: 0o100755, data: await readFile(join(SCRIPTS, 'install.sh')) },
        {
          path: 'cdrom/fleet/provisioning.json',
          mode: 0o100600,
          data: Buffer.from(JSON.stringify(provisioning)),
        },
      ]);
      const path = join(dir, 'initrd.gz');
      await copyFile(join(NETBOOT, 'initrd.gz'), path);
      await writeFile(path, gzipSync(extra), { flag: 'a' });
      return path;
    }

    interface Vm {
      child: ChildProcess;
      exited: Promise<number | null>;
      disk: string;
      serial: string;
    }

    async function boot(credential: string, serialNumber: string, extra: string[] = []): Promise<Vm> {
      const dir = await mkdtemp(join(scratch, 'vm-'));
      const disk = join(dir, 'disk.img');
      await writeFile(disk, '');
      const handle = await open(disk, 'r+');
      await handle.truncate(DISK_BYTES);
      await handle.close();
      const serial = join(dir, 'serial.log');
      const args = [
        ...['-machine', 'accel=tcg', '-m', '1024', '-smp', '1', '-no-reboot', '-display', 'none'],
        ...['-monitor', 'none', '-serial', `file:${serial}`],
        ...['-kernel', join(NETBOOT, 'linux'), '-initrd', await initrd(dir, credential, extra)],
        ...['-append', 'auto=true priority=critical DEBIAN_FRONTEND=text console=ttyS0,115200n8 --- console=ttyS0'],
        ...['-drive', `file=${disk},format=raw,if=virtio`],
        ...['-netdev', 'user,id=n0', '-device', 'e1000,netdev=n0'],
        // The DMI serial the handshake reads (QEMU's default is empty, its UUID all zeros).
        ...['-smbios', `type=1,serial=${serialNumber}`],
      ];
      const child = spawn('qemu-system-x86_64', args, { stdio: ['ignore', 'ignore', 'pipe'] });
      vms.push(child);
      const exited = new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
      return { child, exited, disk, serial };
    }

    async function tail(vm: Vm, lines = 60): Promise<string> {
      if (!existsSync(vm.serial)) return '(no serial output)';
      const text = (await readFile(vm.serial, 'latin1')).replace(
        new RegExp(`${String.fromCharCode(27)}\\[[0-9;?]*[a-zA-Z]`, 'g'),
        '',
      );
      return text.split('\n').slice(-lines).join('\n');
    }

    /** Waits until `done` holds, the VM exits, or the time runs out; says which. */
    async function watch(vm: Vm, done: () => Promise<boolean>): Promise<'done' | 'exited' | 'timeout'> {
      let exited = false;
      void vm.exited.then(() => {
        exited = true;
      });
      const end = Date.now() + RUN_MS;
      while (Date.now() < end) {
        if (await done()) return 'done';
        if (exited) return 'exited';
        await new Promise((r) => setTimeout(r, 2000));
      }
      return 'timeout';
    }

    // Needs no mirror: the stop itself inside the real installer (busybox, cdebconf, GNU
    // wget), run from preseed/early_command, where the network is not up yet (exit 4).
    it.concurrent(
      'inside d-i, a failed handshake stops with its message on the console and powers off; the disk stays all zeros',
      async () => {
        const early = [
          '(tail -f /var/log/syslog </dev/null >/dev/ttyS0 2>&1 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &);',
          'FLEET_RETRIES=1 FLEET_POWEROFF_DELAY=10 sh /cdrom/fleet/install.sh early',
        ].join(' ');
        const vm = await boot(code, newSerial(), [`d-i preseed/early_command string ${early}`]);
        const outcome = await watch(vm, async () => false);
        const log = await tail(vm);
        expect(outcome, log).toBe('exited');
        expect(await vm.exited, log).toBe(0);
        const serial = (await readFile(vm.serial, 'latin1')).replace(/\r/g, '');
        // d-i's error dialog reaches the serial console only when its text frontend runs there
        // (not once the frame buffer console took over): the stop's own console lines always do.
        expect(serial, log).toContain('INSTALLATION STOPPED, NO DISK WAS TOUCHED');
        expect(serial, log).toContain('the fleet handshake failed (exit 4)');
        expect(serial, log).toMatch(/What to do: check the network/);
        expect(serial, log).toContain('reboot: Power down');
        expect(await allZeros(vm.disk), log).toBe(true);
      },
      RUN_MS + 60_000,
    );

    it.concurrent(
      'a refused credential powers the VM off with the disk still all zeros',
      async ({ skip }) => {
        if (blocked) skip(blocked);
        const vm = await boot(crypto.randomUUID(), newSerial());
        const outcome = await watch(vm, async () => false);
        const log = await tail(vm);
        expect(outcome, log).toBe('exited');
        expect(await vm.exited, log).toBe(0);
        const serial = await readFile(vm.serial, 'latin1');
        expect(serial, log).toContain('INSTALLATION STOPPED, NO DISK WAS TOUCHED');
        expect(serial, log).toContain('invalid_activation_code');
        expect((await stat(vm.disk)).size).toBe(DISK_BYTES);
        expect(await allZeros(vm.disk), log).toBe(true);
      },
      RUN_MS + 60_000,
    );

    it.concurrent(
      'an accepted credential partitions the disk (a partition table appears; the VM is stopped there)',
      async ({ skip }) => {
        if (blocked) skip(blocked);
        const serial = newSerial();
        const vm = await boot(code, serial);
        const outcome = await watch(vm, () => hasPartitionTable(vm.disk));
        const log = await tail(vm);
        vm.child.kill('SIGKILL');
        expect(outcome, log).toBe('done');
        const text = await readFile(vm.serial, 'latin1');
        expect(text, log).toContain('provisioned with template');
        const [device] = await ctx.sql`select template_id from devices where serial = ${serial}`;
        expect(device, log).toEqual({ template_id: TEMPLATES.debianStandard });
      },
      RUN_MS + 60_000,
    );
  },
);
