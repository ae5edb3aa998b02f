/**
 * The installer scripts (jobs/iso/installer/) against the real service on a loopback port:
 * the handshake waits out a busy service (CONTRACT §17), a failed handshake stops the
 * installation for good (the early command never returns: it prints why and what to do,
 * powers off, waits), the target disk is the first fixed disk that is not the boot medium,
 * and the WLAN profile lands in the form the installed system reads. The scripts run under
 * dash and busybox ash, as in the installers; no image is built (the scripts are copied).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, cp, mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, request, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serve } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newSerial, TEMPLATES } from '../support/activation.ts';
import { useTestApp } from '../support/app.ts';
import { activationCodeOf, createOrganization } from '../support/builders.ts';
import { missingTools } from '../support/tools.ts';

const SCRIPTS = join(import.meta.dirname, '../../jobs/iso/installer');
const ctx = useTestApp();

describe.skipIf(missingTools('dash', 'busybox'))('installer scripts against the real service', () => {
  let server: ReturnType<typeof serve>;
  let apiUrl: string;
  let scratch: string;
  let code: string;
  let fleet: string;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    await new Promise<void>((ready) => {
      server = serve({ fetch: ctx.app.fetch, port: 0, hostname: '127.0.0.1' }, () => ready());
    });
    apiUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    scratch = await mkdtemp(join(tmpdir(), 'fleet-stop-'));
    const org = await createOrganization(ctx);
    code = await activationCodeOf(ctx, org.id);
    fleet = await fleetFolder({ credential: code, api_url: `${apiUrl}/api/v1`, template_id: null });
  });

  afterAll(async () => {
    for (const child of children) child.kill('SIGKILL');
    await new Promise((done) => server?.close(done));
    await rm(scratch, { recursive: true, force: true });
  });

  /** A /fleet folder as on the image: the scripts and a provisioning.json. */
  async function fleetFolder(provisioning: Record<string, unknown>, extra: Record<string, string> = {}) {
    const dir = await mkdtemp(join(scratch, 'fleet-'));
    for (const script of ['handshake.sh', 'install.sh']) await copyFile(join(SCRIPTS, script), join(dir, script));
    await cp(join(SCRIPTS, 'agent'), join(dir, 'agent'), { recursive: true }); // what `late` installs
    await writeFile(join(dir, 'provisioning.json'), JSON.stringify({ schema_version: 2, ...provisioning }, null, 2));
    for (const [name, text] of Object.entries(extra)) await writeFile(join(dir, name), text, { mode: 0o600 });
    return dir;
  }

  let busyboxDir: string | null = null;
  async function busyboxBin(): Promise<string> {
    if (busyboxDir) return busyboxDir;
    const dir = join(scratch, 'busybox-bin');
    await mkdir(dir, { recursive: true });
    const made = spawnSync('busybox', ['--install', '-s', dir], { encoding: 'utf8' });
    expect(made.status, made.stderr).toBe(0);
    busyboxDir = dir;
    return dir;
  }

  interface Started {
    child: ChildProcess;
    done: Promise<{ code: number | null; stderr: string; ms: number }>;
    stderr: () => string;
    out: string;
  }

  /** Starts a script under dash (curl) or busybox ash (busybox wget); `path` goes first on PATH. */
  async function start(
    shell: 'dash' | 'busybox',
    script: string,
    args: string[],
    env: Record<string, string>,
    path: string[] = [],
  ): Promise<Started> {
    const out = join(await mkdtemp(join(scratch, 'out-')), 'fleet');
    const basePath = shell === 'busybox' ? await busyboxBin() : process.env.PATH!;
    const fullEnv = {
      PATH: [...path, basePath].join(':'),
      FLEET_OUT: out,
      FLEET_RETRIES: '2',
      FLEET_RETRY_DELAY: '1',
      FLEET_SERIAL: newSerial(),
      ...env,
    };
    const busybox = spawnSync('sh', ['-c', 'command -v busybox'], { encoding: 'utf8' }).stdout.trim();
    const [cmd, cmdArgs] = shell === 'dash' ? ['dash', [script, ...args]] : [busybox, ['ash', script, ...args]];
    const started = Date.now();
    const child = spawn(cmd, cmdArgs, { env: fullEnv, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    let stderr = '';
    child.stderr!.on('data', (chunk) => {
      stderr += chunk;
    });
    child.stdout!.resume();
    const done = new Promise<{ code: number | null; stderr: string; ms: number }>((resolve) => {
      child.on('exit', (code) => resolve({ code, stderr, ms: Date.now() - started }));
    });
    return { child, done, stderr: () => stderr, out };
  }

  async function run(shell: 'dash' | 'busybox', script: string, args: string[], env: Record<string, string>) {
    const started = await start(shell, script, args, env);
    return { ...(await started.done), out: started.out };
  }

  async function until(what: string, check: () => boolean | Promise<boolean>, ms = 60_000) {
    const end = Date.now() + ms;
    while (!(await check())) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  function killGroup(child: ChildProcess) {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  }

  async function entries(dir: string): Promise<string[]> {
    return existsSync(dir) ? readdir(dir) : [];
  }

  async function devicesWithSerial(serial: string): Promise<number> {
    const rows = await ctx.sql`select id from devices where serial = ${serial}`;
    return rows.length;
  }

  /**
   * A proxy in front of the service: `answer` sees each request's number (1, 2, ...) and path
   * and returns a canned answer, or null to forward the request to the service.
   */
  async function proxy(
    answer: (n: number, path: string) => { status: number; headers?: Record<string, string> } | null,
  ): Promise<{ url: string; seen: string[]; close: () => Promise<void> }> {
    const seen: string[] = [];
    const srv: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
      seen.push(req.url ?? '');
      const canned = answer(seen.length, req.url ?? '');
      if (canned) {
        const body = JSON.stringify({ error: 'busy', message: 'try again later' });
        res.writeHead(canned.status, { 'content-type': 'application/json', ...canned.headers });
        res.end(body);
        req.resume();
        return;
      }
      const target = new URL(req.url ?? '/', apiUrl);
      const upstream = request(target, { method: req.method, headers: req.headers }, (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      });
      req.pipe(upstream);
    });
    await new Promise<void>((ready) => srv.listen(0, '127.0.0.1', () => ready()));
    const url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
    return { url, seen, close: () => new Promise((done) => srv.close(() => done())) };
  }

  describe('the handshake waits out a busy service (429 and 503 with Retry-After)', () => {
    it('under dash (curl): a 429 with Retry-After: 1, then success, exits 0 after that wait', async () => {
      const p = await proxy((n) => (n === 1 ? { status: 429, headers: { 'retry-after': '1' } } : null));
      try {
        const dir = await fleetFolder({ credential: code, api_url: `${p.url}/api/v1`, template_id: null });
        const res = await run('dash', join(dir, 'handshake.sh'), [], { FLEET_RETRY_DELAY: '30' });
        expect(res.code, res.stderr).toBe(0);
        expect(res.stderr).toContain('the service is busy (HTTP 429), retrying in 1s (1/2)');
        expect(res.ms).toBeGreaterThanOrEqual(1000);
        expect(res.ms).toBeLessThan(25_000); // the Retry-After, not the 30 s backoff
        expect(p.seen.filter((u) => u.endsWith('/activate'))).toHaveLength(2);
        expect((await entries(res.out)).sort()).toEqual(['agent.json', 'blueprint.json']);
      } finally {
        await p.close();
      }
    });

    it('under busybox ash (busybox wget, which shows no headers of an error): a 429 is waited out on the backoff', async () => {
      const p = await proxy((n) => (n === 1 ? { status: 429, headers: { 'retry-after': '1' } } : null));
      try {
        const dir = await fleetFolder({ credential: code, api_url: `${p.url}/api/v1`, template_id: null });
        const res = await run('busybox', join(dir, 'handshake.sh'), [], { FLEET_RETRY_DELAY: '1' });
        expect(res.code, res.stderr).toBe(0);
        expect(res.stderr).toContain('the service is busy (HTTP 429), retrying in 1s (1/2)');
        expect((await entries(res.out)).sort()).toEqual(['agent.json', 'blueprint.json']);
      } finally {
        await p.close();
      }
    });

    it('under dash: 503 until the tries run out exits 4 (never 3), one request per try, nothing written', async () => {
      const p = await proxy(() => ({ status: 503, headers: { 'retry-after': '1' } }));
      try {
        const dir = await fleetFolder({ credential: code, api_url: `${p.url}/api/v1`, template_id: null });
        const serial = newSerial();
        const res = await run('dash', join(dir, 'handshake.sh'), [], { FLEET_RETRIES: '3', FLEET_SERIAL: serial });
        expect(res.code, res.stderr).toBe(4);
        expect(res.stderr.match(/the service is busy \(HTTP 503\), retrying in 1s/g)).toHaveLength(2);
        expect(res.stderr).toContain('giving up');
        expect(p.seen).toHaveLength(3);
        expect(await entries(res.out)).toEqual([]);
        expect(await devicesWithSerial(serial)).toBe(0);
      } finally {
        await p.close();
      }
    });

    it('caps a long Retry-After at 300 s (plus at most 10 % jitter)', async () => {
      const p = await proxy(() => ({ status: 429, headers: { 'retry-after': '86400' } }));
      try {
        const dir = await fleetFolder({ credential: code, api_url: `${p.url}/api/v1`, template_id: null });
        const started = await start('dash', join(dir, 'handshake.sh'), [], {});
        await until('the wait message', () => /retrying in \d+s/.test(started.stderr()));
        killGroup(started.child);
        const waited = Number(/retrying in (\d+)s/.exec(started.stderr())![1]);
        expect(waited).toBeGreaterThanOrEqual(300);
        expect(waited).toBeLessThanOrEqual(330);
      } finally {
        await p.close();
      }
    });

    it('a 400 of the service is no refusal: exit 1, not 3', async () => {
      const p = await proxy(() => ({ status: 400 }));
      try {
        const dir = await fleetFolder({ credential: code, api_url: `${p.url}/api/v1`, template_id: null });
        const res = await run('dash', join(dir, 'handshake.sh'), [], {});
        expect(res.code, res.stderr).toBe(1);
        expect(await entries(res.out)).toEqual([]);
      } finally {
        await p.close();
      }
    });

    it('refuses https:// with busybox wget alone (no certificate checks) and says so', async () => {
      const dir = await fleetFolder({ credential: code, api_url: 'https://127.0.0.1:9/api/v1', template_id: null });
      const res = await run('busybox', join(dir, 'handshake.sh'), [], {});
      expect(res.code, res.stderr).toBe(1);
      expect(res.stderr).toContain('cannot do HTTPS');
      expect(res.stderr).toContain('wget-udeb');
    });
  });

  describe('a failed handshake stops the installation for good', () => {
    /** Runs install.sh until it powers off; checks it has not returned and is still waiting. */
    async function stopped(shell: 'dash' | 'busybox', dir: string, args: string[], env: Record<string, string> = {}) {
      const marker = join(await mkdtemp(join(scratch, 'poweroff-')), 'powered-off');
      const consoleFile = join(scratch, `console-${Date.now()}-${Math.random()}`);
      const started = await start(shell, join(dir, 'install.sh'), args, {
        FLEET_POWEROFF: `touch ${marker}`,
        FLEET_POWEROFF_DELAY: '1',
        FLEET_CONSOLE: consoleFile,
        ...env,
      });
      let exited = false;
      void started.done.then(() => {
        exited = true;
      });
      await until('the power-off', () => existsSync(marker));
      await new Promise((r) => setTimeout(r, 500));
      expect(exited, started.stderr()).toBe(false); // never returns: d-i would partition on Continue
      killGroup(started.child);
      return { console: await readFile(consoleFile, 'utf8'), stderr: started.stderr(), out: started.out };
    }

    for (const shell of ['dash', 'busybox'] as const) {
      it(`under ${shell}: a refused credential prints why and what to do, powers off, writes nothing`, async () => {
        const dir = await fleetFolder({ credential: crypto.randomUUID(), api_url: `${apiUrl}/api/v1` });
        const res = await stopped(shell, dir, ['debian-early']);
        expect(res.console).toContain('INSTALLATION STOPPED, NO DISK WAS TOUCHED');
        expect(res.console).toContain('the fleet handshake failed (exit 3)');
        expect(res.console).toMatch(/What to do: .*build a new image/);
        expect(await entries(res.out)).toEqual([]);
      });
    }

    it('an unreachable service: exit 4 of the handshake, the advice is the network', async () => {
      const dir = await fleetFolder({ credential: code, api_url: 'http://127.0.0.1:9/api/v1' });
      const res = await stopped('dash', dir, ['early'], { FLEET_RETRIES: '1' });
      expect(res.console).toContain('the fleet handshake failed (exit 4)');
      expect(res.console).toContain('check the network');
    });

    it('Ubuntu: a blueprint that disagrees with the image stops it too', async () => {
      const dir = await fleetFolder({ credential: code, api_url: `${apiUrl}/api/v1`, template_id: null });
      const res = await stopped('busybox', dir, ['ubuntu-early', 'luks-lvm', 'ext4']);
      expect(res.console).toContain('the blueprint asks for single/ext4 but this image installs luks-lvm/ext4');
    });
  });

  describe('the target disk', () => {
    /** A fake /sys and /proc/mounts, and a list-devices that lists the given disks. */
    async function machine(disks: Array<{ name: string; removable?: boolean }>, cdrom: string | null) {
      const root = await mkdtemp(join(scratch, 'machine-'));
      for (const disk of disks) {
        await mkdir(join(root, 'sys/block', disk.name), { recursive: true });
        await writeFile(join(root, 'sys/block', disk.name, 'removable'), disk.removable ? '1\n' : '0\n');
        // A partition of each disk, as the kernel shows it under /sys/class/block.
        const part = disk.name.startsWith('nvme') ? `${disk.name}p1` : `${disk.name}1`;
        await mkdir(join(root, 'sys/devices/virtual/block', disk.name, part), { recursive: true });
        await writeFile(join(root, 'sys/devices/virtual/block', disk.name, part, 'partition'), '1\n');
        await mkdir(join(root, 'sys/class/block'), { recursive: true });
        await symlink(join(root, 'sys/devices/virtual/block', disk.name), join(root, 'sys/class/block', disk.name));
        await symlink(join(root, 'sys/devices/virtual/block', disk.name, part), join(root, 'sys/class/block', part));
      }
      const mounts = join(root, 'mounts');
      await writeFile(mounts, `proc /proc proc rw 0 0\n${cdrom ? `${cdrom} /cdrom iso9660 ro 0 0\n` : ''}`);
      const bin = join(root, 'bin');
      await mkdir(bin);
      const list = disks.map((d) => `/dev/${d.name}`).join(' ');
      await writeFile(join(bin, 'list-devices'), `#!/bin/sh\n[ "$1" = disk ] && for d in ${list}; do echo $d; done\n`, {
        mode: 0o755,
      });
      return { env: { FLEET_SYSFS: join(root, 'sys'), FLEET_MOUNTS: mounts }, bin };
    }

    let out: string;
    beforeAll(async () => {
      const res = await run('dash', join(fleet, 'handshake.sh'), [], {});
      expect(res.code, res.stderr).toBe(0);
      out = res.out;
    });

    async function selections(m: { env: Record<string, string>; bin: string }) {
      const started = await start('dash', join(fleet, 'install.sh'), ['selections'], { FLEET_OUT: out, ...m.env }, [
        m.bin,
      ]);
      let stdout = '';
      started.child.stdout!.on('data', (c) => {
        stdout += c;
      });
      const res = await started.done;
      return { ...res, stdout };
    }

    it('is the first disk that is neither removable nor the boot medium (stick partition at /cdrom)', async () => {
      const m = await machine(
        [{ name: 'sda', removable: true }, { name: 'sdb' }, { name: 'nvme0n1' }, { name: 'sdc' }],
        '/dev/sdb1',
      );
      const res = await selections(m);
      expect(res.code, res.stderr).toBe(0);
      expect(res.stdout).toContain('d-i partman-auto/disk string /dev/nvme0n1\n');
      expect(res.stdout).toContain('d-i pkgsel/include string curl git python3 python3-apt ansible-core');
    });

    it('skips a boot medium mounted whole (an ISO written to a stick)', async () => {
      const m = await machine([{ name: 'sda' }, { name: 'sdb' }], '/dev/sda');
      const res = await selections(m);
      expect(res.stdout).toContain('d-i partman-auto/disk string /dev/sdb\n');
    });

    it('with none, debian-early stops for good before partitioning, with a clear message', async () => {
      const m = await machine([{ name: 'sda', removable: true }, { name: 'sdb' }], '/dev/sdb1');
      const none = await selections(m);
      expect(none.code).toBe(2);
      expect(none.stdout).not.toContain('partman-auto/disk');

      const marker = join(await mkdtemp(join(scratch, 'poweroff-')), 'powered-off');
      const consoleFile = join(scratch, `console-disk-${Date.now()}`);
      const started = await start(
        'dash',
        join(fleet, 'install.sh'),
        ['debian-early'],
        { ...m.env, FLEET_POWEROFF: `touch ${marker}`, FLEET_POWEROFF_DELAY: '0', FLEET_CONSOLE: consoleFile },
        [m.bin],
      );
      await until('the power-off', () => existsSync(marker));
      killGroup(started.child);
      const text = await readFile(consoleFile, 'utf8');
      expect(text).toContain('no disk to install on');
      expect(text).toContain('What to do: connect the internal disk');
    });
  });

  describe('the WLAN profile in the form the installed system reads', () => {
    const netplan = [
      'network:',
      '  version: 2',
      '  wifis:',
      '    @FLEET_WLAN_INTERFACE@:',
      '      access-points:',
      '        "Rollout":',
      '          password: "rollout-passphrase"',
      '',
    ].join('\n');

    async function late(target: string, sysfs: string) {
      const dir = await fleetFolder(
        { credential: code, api_url: `${apiUrl}/api/v1`, template_id: TEMPLATES.debianStandard },
        { 'wlan.nmconnection': '[wifi]\nssid=Rollout\n', 'wlan.netplan.yaml': netplan },
      );
      const hs = await run('dash', join(dir, 'handshake.sh'), [], {});
      expect(hs.code, hs.stderr).toBe(0);
      const res = await run('busybox', join(dir, 'install.sh'), ['late', target], {
        FLEET_OUT: hs.out,
        FLEET_SYSFS: sysfs,
      });
      expect(res.code, res.stderr).toBe(0);
      expect((await stat(join(target, 'etc/fleet/agent.json'))).mode & 0o777).toBe(0o600);
    }

    async function sysfsWithWlan(name: string) {
      const sysfs = await mkdtemp(join(scratch, 'sysfs-'));
      await mkdir(join(sysfs, 'class/net/lo'), { recursive: true });
      await mkdir(join(sysfs, 'class/net', name, 'wireless'), { recursive: true });
      return sysfs;
    }

    it('netplan on a server (netplan, no NetworkManager), bound to the wireless interface, 0600', async () => {
      const target = await mkdtemp(join(scratch, 'target-'));
      await mkdir(join(target, 'etc/netplan'), { recursive: true });
      await late(target, await sysfsWithWlan('wlp2s0'));
      const file = join(target, 'etc/netplan/90-fleet-wlan.yaml');
      expect(await readFile(file, 'utf8')).toContain('    wlp2s0:\n');
      expect((await stat(file)).mode & 0o777).toBe(0o600);
      expect(existsSync(join(target, 'etc/NetworkManager'))).toBe(false);
    });

    it('a NetworkManager keyfile on a desktop (NetworkManager installed)', async () => {
      const target = await mkdtemp(join(scratch, 'target-'));
      await mkdir(join(target, 'etc/netplan'), { recursive: true });
      await mkdir(join(target, 'usr/sbin'), { recursive: true });
      await writeFile(join(target, 'usr/sbin/NetworkManager'), '#!/bin/sh\n', { mode: 0o755 });
      await late(target, await sysfsWithWlan('wlan0'));
      const file = join(target, 'etc/NetworkManager/system-connections/fleet-wlan.nmconnection');
      expect(await readFile(file, 'utf8')).toContain('ssid=Rollout');
      expect((await stat(file)).mode & 0o777).toBe(0o600);
      expect(existsSync(join(target, 'etc/netplan/90-fleet-wlan.yaml'))).toBe(false);
    });
  });
});
