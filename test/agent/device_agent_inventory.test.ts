/**
 * The device agent's software inventory (CONTRACT §27) from the device's side: `fleet-agent
 * once` under dash with real curl, dpkg-query and python3-apt, on a copy of this machine's
 * dpkg database (FLEET_DPKG_DIR) and apt lists of a test repository (FLEET_APT_LISTS, the
 * sources named by APT_CONFIG): a security suite that has a newer base-files and an updates
 * suite that has a newer dash. python3, dpkg-query and apt-get are wrapped to count their
 * starts.
 *
 * - "against a stand-in of the service": the agent's half of the protocol against a small
 *   server written here to the contract (the check-in's `inventory_hash`, `inventory:
 *   "wanted"` in a 200 whose ETag covers it, `inventory_refresh_hours`, PUT
 *   /api/v1/agent/inventory with a gzip body whose hash it checks with an implementation of
 *   its own): the collection, the hash, the idle cycle, the refresh interval.
 * - "against the service": the same agent against the real service, its inventory read back
 *   through GET /api/v1/devices/{id}/inventory and /packages.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { chmod, mkdir, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { release, tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activateDevice, resolveDevice } from '../support/activation.ts';
import { useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { AgentService, agentOnce, installAgent, ok, writeCountingPlaybook } from '../support/device_agent.ts';
import { inventoryHash } from '../support/inventory_hash.ts';
import { makeRoleRepository } from '../support/role_repository.ts';
import { missingTools } from '../support/tools.ts';

const DEVICE_ID = '6f1c2b7e-8d4a-4c55-9b1e-2a7d6c0f9e41';
const SECRET = 'aB3_dE5-gH7iJ9kL1mN3oP5qR7sT9uV1-inventory';
const scratch = mkdtempSync(join(tmpdir(), 'fleet-agent-inventory-'));
const bin = join(scratch, 'bin');
const starts = join(scratch, 'starts');
const dpkgDir = join(scratch, 'dpkg');
const lists = join(scratch, 'lists');
const aptConfig = join(scratch, 'apt', 'apt.conf');
const logs: string[] = [];
const figures: string[] = [];

afterAll(() => rm(scratch, { recursive: true, force: true }));

const dpkgQuery = (...args: string[]) => execFileSync('dpkg-query', args, { encoding: 'utf8' });
const arch = () => execFileSync('dpkg', ['--print-architecture'], { encoding: 'utf8' }).trim();

/** Wrappers of python3 (the distribution's, with apt_pkg), dpkg-query and apt-get that count their starts. */
async function writeWrappers(): Promise<void> {
  await mkdir(bin, { recursive: true });
  const real = (tool: string) => execFileSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).trim();
  const wrappers: Record<string, string> = {
    python3: 'exec /usr/bin/python3 "$@"',
    'dpkg-query': `exec ${real('dpkg-query')} "$@"`,
    // A refresh: the lists' folder changes, as apt-get update's renames change it.
    'apt-get': 'touch "$FLEET_APT_LISTS"',
  };
  for (const [name, line] of Object.entries(wrappers)) {
    await writeFile(join(bin, name), `#!/bin/sh\necho ${name} >>"${starts}"\n${line}\n`);
    await chmod(join(bin, name), 0o755);
  }
}

/** How often each wrapped tool started since the last call. */
async function started(): Promise<Record<string, number>> {
  const lines = existsSync(starts) ? (await readFile(starts, 'utf8')).split('\n').filter(Boolean) : [];
  await rm(starts, { force: true });
  const n = (tool: string) => lines.filter((l) => l === tool).length;
  return { python3: n('python3'), 'dpkg-query': n('dpkg-query'), 'apt-get': n('apt-get') };
}

/**
 * A copy of this machine's dpkg database, and apt lists of two suites of a test repository:
 * `bookworm-security` (a newer base-files) and `bookworm-updates` (a newer dash).
 */
async function writeDpkgAndLists(): Promise<{ baseFiles: string; dash: string }> {
  await mkdir(dpkgDir, { recursive: true });
  await writeFile(join(dpkgDir, 'status'), await readFile('/var/lib/dpkg/status'));
  await mkdir(join(lists, 'partial'), { recursive: true });
  await mkdir(join(scratch, 'apt', 'parts'), { recursive: true });
  const a = arch();
  const versions = {
    baseFiles: dpkgQuery('-W', `-f=\${Version}`, 'base-files'),
    dash: dpkgQuery('-W', `-f=\${Version}`, 'dash'),
  };
  await writeFile(
    join(scratch, 'apt', 'sources.list'),
    'deb [trusted=yes] http://fleet-test.invalid/repo bookworm-security main\n' +
      'deb [trusted=yes] http://fleet-test.invalid/repo bookworm-updates main\n',
  );
  await writeFile(
    aptConfig,
    `Dir::Etc::sourcelist "${join(scratch, 'apt', 'sources.list')}";\nDir::Etc::sourceparts "${join(scratch, 'apt', 'parts')}";\n`,
  );
  for (const [suite, name, version] of [
    ['bookworm-security', 'base-files', versions.baseFiles],
    ['bookworm-updates', 'dash', versions.dash],
  ] as const) {
    const prefix = join(lists, `fleet-test.invalid_repo_dists_${suite}`);
    await writeFile(
      `${prefix}_Release`,
      `Origin: Fleet Test\nLabel: Fleet Test\nSuite: ${suite}\nCodename: ${suite}\nArchitectures: ${a}\nComponents: main\n`,
    );
    await writeFile(
      `${prefix}_main_binary-${a}_Packages`,
      `Package: ${name}\nVersion: ${version}+fleet1\nArchitecture: ${a}\nFilename: pool/${name}.deb\nSize: 1\n\n`,
    );
  }
  return versions;
}

/** What dpkg-query itself says is installed in the copied database (not config-files only). */
interface Package {
  name: string;
  version: string;
  arch: string;
  source: string;
  source_version: string;
}

function installedPackages(): Package[] {
  const out = dpkgQuery(
    `--admindir=${dpkgDir}`,
    '-W',
    `-f=\${Package}\t\${Architecture}\t\${Version}\t\${source:Package}\t\${source:Version}\t\${db:Status-Status}\n`,
  );
  return out
    .split('\n')
    .filter(Boolean)
    .map((l) => l.split('\t'))
    .filter((f) => f[5] !== 'config-files' && f[5] !== 'not-installed')
    .map(([name, arch, version, source, sourceVersion]) => ({
      name: name!,
      version: version!,
      arch: arch!,
      source: source || name!,
      source_version: sourceVersion || version!,
    }));
}

/** os-release's ID, VERSION_ID and VERSION_CODENAME, read here. */
function osRelease(): { id: string; version_id: string; codename: string } {
  const fields: Record<string, string> = {};
  for (const line of readFileSync('/etc/os-release', 'utf8').split('\n')) {
    const m = /^([A-Z0-9_]+)=(.*)$/.exec(line.trim());
    if (m) fields[m[1]!] = m[2]!.replace(/^(["'])(.*)\1$/, '$2');
  }
  return { id: fields.ID ?? 'linux', version_id: fields.VERSION_ID ?? '', codename: fields.VERSION_CODENAME ?? '' };
}

/** Code point order, as the contract sorts. */
const byCodePoint = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

function agentEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: `${bin}:${process.env.PATH}`,
    FLEET_DPKG_DIR: dpkgDir,
    FLEET_APT_LISTS: lists,
    FLEET_APT_GET: join(bin, 'apt-get'),
    APT_CONFIG: aptConfig,
    FLEET_RETRIES: '1',
    FLEET_RETRY_DELAY: '1',
    ...extra,
  };
}

interface Seen {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  status: number;
  body: any;
}

/**
 * The agent's side of the service, to the contract: a check-in answers a desired state of
 * nothing, with `inventory: "wanted"` while the hash sent is not the one held, and an ETag
 * of the whole answer; PUT /agent/inventory takes a body whose hash is its own (422 else).
 */
class StandIn {
  held: string | null = null;
  refreshHours = 6;
  /** An answer to give the next PUT instead of taking the body. */
  refusePut: number | null = null;
  seen: Seen[] = [];
  url = '';
  private server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const answer = (status: number, body?: unknown, headers: Record<string, string> = {}) => {
        let parsed: unknown = null;
        try {
          const text = req.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw;
          parsed = JSON.parse(text.toString('utf8'));
        } catch {
          parsed = null;
        }
        this.seen.push({ method: req.method!, path: req.url!, headers: req.headers, status, body: parsed });
        res.writeHead(status, { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers });
        res.end(body === undefined ? undefined : JSON.stringify(body));
      };
      if (req.headers.authorization !== `Bearer ${SECRET}`)
        return answer(401, { error: 'unauthorized', message: 'no' });
      if (req.method === 'POST' && req.url === '/api/v1/agent/checkin') {
        const sent = JSON.parse(raw.toString('utf8'));
        const desired: Record<string, unknown> = {
          device_id: DEVICE_ID,
          blueprints: [],
          repository_url: 'file:///nowhere',
          poll_interval_seconds: 60,
          auftraege: [],
          inventory_refresh_hours: this.refreshHours,
        };
        if (sent.inventory_hash !== this.held) desired.inventory = 'wanted';
        const etag = `"${inventoryHash({ answer: desired }).slice(0, 20)}"`;
        if (req.headers['if-none-match'] === etag) return answer(304, undefined, { etag });
        return answer(200, desired, { etag });
      }
      if (req.method === 'PUT' && req.url === '/api/v1/agent/inventory') {
        if (this.refusePut !== null) {
          const status = this.refusePut;
          this.refusePut = null;
          return answer(status, { error: 'inventory_hash_mismatch', message: 'refused by the test' });
        }
        const body = JSON.parse(gunzipSync(raw).toString('utf8'));
        if (body.hash !== inventoryHash(body)) return answer(422, { error: 'inventory_hash_mismatch', message: 'x' });
        this.held = body.hash;
        return answer(204);
      }
      answer(404, { error: 'not_found', message: req.url });
    });
  });

  async start(): Promise<void> {
    await new Promise<void>((ready) => this.server.listen(0, '127.0.0.1', () => ready()));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  stop(): Promise<void> {
    return new Promise((done) => this.server.close(() => done()));
  }

  /** The requests since the last call. */
  take(): Seen[] {
    const s = this.seen;
    this.seen = [];
    return s;
  }
}

describe.skipIf(missingTools('dash', 'curl', 'python3-apt'))('the software inventory, on the device', () => {
  let versions: { baseFiles: string; dash: string };

  beforeAll(async () => {
    await writeWrappers();
    versions = await writeDpkgAndLists();
  }, 60_000);

  describe('against a stand-in of the service', () => {
    const standIn = new StandIn();
    const root = join(scratch, 'root');
    const state = join(root, 'var/lib/fleet');
    const once = async (extra: Record<string, string> = {}) => {
      const run = await agentOnce(
        root,
        agentEnv({ FLEET_ROLES_PATH: join(root, 'roles'), FLEET_ANSIBLE_PLAYBOOK: 'true', ...extra }),
        logs,
      );
      return { ...run, started: await started(), requests: standIn.take() };
    };
    let firstHash = '';

    beforeAll(async () => {
      await standIn.start();
      await installAgent(root, { base_url: standIn.url, device_id: DEVICE_ID, bootstrap_token: '' });
      await mkdir(join(root, 'roles'), { recursive: true });
      await mkdir(state, { recursive: true, mode: 0o700 });
      await writeFile(join(state, 'agent-secret'), `${SECRET}\n`, { mode: 0o600 });
    });
    afterAll(() => standIn.stop());

    it('the first cycle: this machine’s packages, OS, kernel and pending upgrades, sent gzip-compressed with their hash when asked', async () => {
      const run = await once();
      expect(run.code, run.stdout + run.stderr).toBe(0);
      expect(run.requests.map((r) => `${r.method} ${r.path} ${r.status}`)).toEqual([
        'POST /api/v1/agent/checkin 200',
        'PUT /api/v1/agent/inventory 204',
      ]);
      const [checkin, put] = run.requests as [Seen, Seen];
      expect(checkin.body.inventory_hash).toMatch(/^[0-9a-f]{64}$/);
      expect(put.headers['content-encoding']).toBe('gzip');
      expect(put.headers['content-type']).toBe('application/json');
      const body = put.body;
      expect(Object.keys(body).sort()).toEqual(['hash', 'kernel', 'os', 'packages', 'pending', 'reboot_required']);
      // The hash as computed here, and the one the check-in carried.
      expect(body.hash).toBe(inventoryHash(body));
      expect(body.hash).toBe(checkin.body.inventory_hash);
      firstHash = body.hash;

      const installed = installedPackages();
      expect(body.packages).toHaveLength(installed.length);
      // Every package known to dpkg on this machine is installed (no config-files left).
      expect(body.packages).toHaveLength(dpkgQuery('-W').split('\n').filter(Boolean).length);
      const key = (p: { name: string; arch: string }) => `${p.name}\u0000${p.arch}`;
      expect(body.packages.map(key)).toEqual(installed.map(key).sort(byCodePoint));
      expect([...body.packages].sort((a, b) => byCodePoint(key(a), key(b)))).toEqual(
        [...installed].sort((a, b) => byCodePoint(key(a), key(b))),
      );
      expect(body.packages.find((p: { name: string }) => p.name === 'dpkg')).toMatchObject({ source: 'dpkg' });
      expect(body.os).toEqual(osRelease());
      expect(body.kernel).toBe(release());
      // Only the test repository's suites are configured: base-files from the security suite, dash not.
      expect(body.pending).toEqual([
        {
          name: 'base-files',
          installed: versions.baseFiles,
          candidate: `${versions.baseFiles}+fleet1`,
          security: true,
        },
        { name: 'dash', installed: versions.dash, candidate: `${versions.dash}+fleet1`, security: false },
      ]);
      const newerKernel =
        existsSync('/boot') && execFileSync('ls', ['/boot'], { encoding: 'utf8' }).includes('vmlinuz-');
      if (!existsSync('/var/run/reboot-required') && !newerKernel) expect(body.reboot_required).toBe(false);
      expect(run.stdout).toContain('inventory: ');
      expect(run.stdout).toContain('2 pending (1 security)');
      expect(run.stdout).toContain('inventory sent');
      // The first cycle refreshes the lists; python3 read the configuration, the hardware and the inventory.
      expect(run.started['apt-get']).toBe(1);
      expect(run.started['dpkg-query']).toBe(1);
      for (const file of ['inventory.json', 'inventory-hash', 'hardware.json', 'conf']) {
        expect((await stat(join(state, file))).mode & 0o777, file).toBe(0o600);
      }
      // The secret went to curl through its configuration on stdin, never on a command line.
      expect(put.headers.authorization).toBe(`Bearer ${SECRET}`);
    }, 300_000);

    it('a 304 cycle: the kept hash, no python3, no dpkg-query, no refresh, nothing sent', async () => {
      // The answer that asked for the inventory is not kept: the next check-in gets the answer as it is now.
      const next = await once();
      expect(next.requests.map((r) => `${r.method} ${r.status}`)).toEqual(['POST 200']);
      expect(next.requests[0]!.headers['if-none-match']).toBeUndefined();
      const run = await once();
      figures.push(`304 cycle: ${run.wallMs} ms wall, ${Math.round(run.cpuMs)} ms CPU`);
      expect(run.code, run.stdout).toBe(0);
      expect(run.stdout).toContain('(304)');
      expect(run.requests.map((r) => `${r.method} ${r.status}`)).toEqual(['POST 304']);
      expect(run.requests[0]!.body.inventory_hash).toBe(firstHash);
      // The hardware goes with every once (a start), from what was kept.
      expect(run.requests[0]!.body.hardware).toMatchObject({ cpu: { cores: expect.any(Number) } });
      expect(run.started).toEqual({ python3: 0, 'dpkg-query': 0, 'apt-get': 0 });
    }, 120_000);

    it('dpkg’s database rewritten as it was: collected again (one python3, one dpkg-query), the same hash, a 304', async () => {
      const later = new Date(Date.now() + 5000);
      await utimes(join(dpkgDir, 'status'), later, later);
      const run = await once();
      expect(run.code, run.stdout).toBe(0);
      expect(run.started).toEqual({ python3: 1, 'dpkg-query': 1, 'apt-get': 0 });
      expect(run.requests.map((r) => `${r.method} ${r.status}`)).toEqual(['POST 304']);
      expect(run.requests[0]!.body.inventory_hash).toBe(firstHash);
    }, 120_000);

    it('a package upgraded: a new hash, the service asks for it in a 200 and gets it; then 304s again', async () => {
      const status = join(dpkgDir, 'status');
      const text = await readFile(status, 'utf8');
      const upgraded = text.replace(
        new RegExp(`(Package: dash\\n(?:.+\\n)*?Version: )${versions.dash.replace(/[.+]/g, '\\$&')}\\n`),
        `$1${versions.dash}+fleet1\n`,
      );
      expect(upgraded).not.toBe(text);
      await writeFile(status, upgraded);
      const run = await once();
      expect(run.code, run.stdout).toBe(0);
      expect(run.requests.map((r) => `${r.method} ${r.path} ${r.status}`)).toEqual([
        'POST /api/v1/agent/checkin 200',
        'PUT /api/v1/agent/inventory 204',
      ]);
      const body = run.requests[1]!.body;
      expect(body.hash).not.toBe(firstHash);
      expect(body.hash).toBe(run.requests[0]!.body.inventory_hash);
      expect(body.pending.map((p: { name: string }) => p.name)).toEqual(['base-files']);
      expect(body.packages.find((p: { name: string }) => p.name === 'dash').version).toBe(`${versions.dash}+fleet1`);
      // The service holds it now: its answer changes once more (no longer "wanted"), then 304.
      expect((await once()).requests.map((r) => `${r.method} ${r.status}`)).toEqual(['POST 200']);
      const idle = await once();
      expect(idle.requests.map((r) => `${r.method} ${r.status}`)).toEqual(['POST 304']);
      expect(idle.started).toEqual({ python3: 0, 'dpkg-query': 0, 'apt-get': 0 });
    }, 300_000);

    it('the lists are refreshed at most every inventory_refresh_hours (6 by default, then as the service says)', async () => {
      const stampAgo = (hours: number) =>
        writeFile(join(state, 'apt-lists-at'), `${Math.floor(Date.now() / 1000) - hours * 3600}\n`);
      await stampAgo(5.9);
      expect((await once()).started['apt-get']).toBe(0);
      await stampAgo(6.1);
      const refreshed = await once();
      expect(refreshed.started).toEqual({ python3: 1, 'dpkg-query': 1, 'apt-get': 1 });
      expect(refreshed.stdout).toContain('apt lists refreshed');
      // The lists changed (by time only): collected again, the same hash, a 304.
      expect(refreshed.requests.map((r) => `${r.method} ${r.status}`)).toEqual(['POST 304']);
      expect(await readFile(join(state, 'apt-lists-at'), 'utf8')).not.toBe('0\n');

      standIn.refreshHours = 1;
      expect((await once()).requests.map((r) => `${r.method} ${r.status}`)).toEqual(['POST 200']);
      expect((await readFile(join(state, 'inventory-refresh-hours'), 'utf8')).trim()).toBe('1');
      await stampAgo(0.9);
      expect((await once()).started['apt-get']).toBe(0);
      await stampAgo(1.1);
      expect((await once()).started['apt-get']).toBe(1);
    }, 300_000);

    it('a refused inventory (422) is logged and the cycle goes on; the next 200 sends it again', async () => {
      await writeFile(
        join(dpkgDir, 'status'),
        (await readFile(join(dpkgDir, 'status'), 'utf8')).replace(`${versions.dash}+fleet1`, versions.dash),
      );
      standIn.refusePut = 422;
      const refused = await once();
      expect(refused.code, refused.stdout).toBe(0);
      expect(refused.stdout).toContain(
        'inventory refused by the service (HTTP 422): inventory_hash_mismatch: refused by the test',
      );
      expect(refused.requests.map((r) => `${r.method} ${r.status}`)).toEqual(['POST 200', 'PUT 422']);
      const again = await once();
      expect(again.requests.map((r) => `${r.method} ${r.status}`)).toEqual(['POST 200', 'PUT 204']);
      // Sent from what was kept: nothing collected again.
      expect(again.started['dpkg-query']).toBe(0);
      console.log(`fleet-agent inventory figures: ${figures.join('; ')}`);
    }, 300_000);
  });

  describe('against the service', () => {
    const ctx = useTestApp({
      roleRepositoryUrl: `file://${join(scratch, 'roles-repo')}`,
      agentPollIntervalSeconds: 60,
    });
    const service = new AgentService(ctx);
    const root = join(scratch, 'service-root');
    const playbook = join(scratch, 'counting-playbook');
    const markers = join(scratch, 'markers');
    let deviceId = '';
    const once = async () => {
      const run = await agentOnce(
        root,
        agentEnv({
          FLEET_ANSIBLE_PLAYBOOK: playbook,
          FIXTURE_MARKERS: markers,
          FIXTURE_FAIL: '',
          COUNT_FILE: join(scratch, 'playbook-runs'),
          HOLD_DIR: '',
        }),
        logs,
      );
      return { ...run, started: await started() };
    };

    beforeAll(async () => {
      await makeRoleRepository(join(scratch, 'roles-repo'));
      await mkdir(markers, { recursive: true });
      await writeCountingPlaybook(playbook);
      await service.start();
      const org = await createOrganization(ctx);
      const activated = await activateDevice(ctx, org.id);
      const blueprint = await resolveDevice(ctx, activated);
      deviceId = activated.device_id;
      await installAgent(root, {
        base_url: service.url,
        device_id: deviceId,
        bootstrap_token: blueprint.agent.bootstrap_token,
      });
    }, 60_000);
    afterAll(() => service.stop());

    it('bootstraps, applies and sends its inventory; the service shows this machine’s packages and pending upgrades; then 304s that start nothing', async () => {
      const before = await ctx.request('GET', `/api/v1/devices/${deviceId}/inventory`);
      expect(before.status).toBe(404);
      expect(before.body.error).toBe('no_inventory');

      const first = await once();
      expect(first.code, first.stdout + first.stderr).toBe(0);
      expect(first.stdout).toContain('bootstrapped');
      expect(first.stdout).toContain('inventory sent');
      const installed = installedPackages();
      const inventory = await ok(ctx, 'GET', `/api/v1/devices/${deviceId}/inventory`);
      expect(inventory).toMatchObject({
        os: osRelease(),
        kernel: release(),
        packages_count: installed.length,
        pending: [
          {
            name: 'base-files',
            installed: versions.baseFiles,
            candidate: `${versions.baseFiles}+fleet1`,
            security: true,
          },
          { name: 'dash', installed: versions.dash, candidate: `${versions.dash}+fleet1`, security: false },
        ],
        security_pending_count: 1,
        inventory_at: expect.any(String),
      });
      const dpkg = installed.find((p) => p.name === 'dpkg')!;
      const listed = await ok(ctx, 'GET', `/api/v1/devices/${deviceId}/packages?q=dpkg`);
      expect(listed.items).toContainEqual(expect.objectContaining(dpkg));
      const [row] = await ctx.sql`select encode(inventory_hash, 'hex') as hash from devices where id = ${deviceId}`;
      const kept = (await readFile(join(root, 'var/lib/fleet/inventory-hash'), 'utf8')).trim();
      expect(row!.hash).toBe(kept);

      // The answer no longer asks (a 200 whose tag is kept), then a 304 that starts nothing.
      const second = await once();
      expect(second.code, second.stdout).toBe(0);
      expect(second.stdout).not.toContain('inventory sent');
      const idle = await once();
      expect(idle.code, idle.stdout).toBe(0);
      expect(idle.stdout).toContain('(304)');
      expect(idle.started).toEqual({ python3: 0, 'dpkg-query': 0, 'apt-get': 0 });
    }, 900_000);
  });
});
