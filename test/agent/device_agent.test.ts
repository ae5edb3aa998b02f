/**
 * The device agent (CONTRACT §18) end to end: an image built for an enrollment session by
 * the real task, read back with xorriso, its handshake run under dash, its `install.sh late`
 * installing the agent into a temporary root (FLEET_ROOT), and then `fleet-agent` itself
 * under dash with real curl, git and ansible-playbook against the service on a loopback
 * port over the test file's PostgreSQL. The roles come from a local git repository
 * (file://, cloned shallow) of fixture roles (test/support/role_repository.ts); a repository
 * served over git's dumb HTTP is device_agent_dumb_http.test.ts.
 *
 * ansible-playbook takes seconds to start, and minutes on a loaded machine (the whole suite
 * in parallel on 2 cores): the tests share one device, run the playbook as few times as the
 * behaviour needs, and have timeouts of many minutes.
 */
import { execFile, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { chmod, copyFile, cp, mkdir, readdir, readFile, readlink, rm, stat, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { serve } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnrollmentSession, newSerial } from '../support/activation.ts';
import { useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { getBuild, runJobs, tempIsoDir, triggerBuild, workerDeps } from '../support/iso_builds.ts';
import { git, makeRoleRepository, ROLES } from '../support/role_repository.ts';
import { hasTool, missingTools } from '../support/tools.ts';

const WLAN = { ssid: 'Agentennetz', psk: 'wlan-key-never-logged-4711' };
/** An order's optionen value that no log line of the agent may carry (it may be a secret). */
const OPTION_VALUE = 'optionen-value-never-logged-0815';

const scratch = mkdtempSync(join(tmpdir(), 'fleet-agent-test-'));
const repo = join(scratch, 'roles-repo');
const isoDir = tempIsoDir();
const ctx = useTestApp({ isoDir, roleRepositoryUrl: `file://${repo}`, agentPollIntervalSeconds: 60 });

/** The service on a fixed loopback port, which the tests stop and start again; `busy` answers 503s first. */
const front = { busy: 0, port: 0 };
let server: ReturnType<typeof serve> | null = null;

async function startService(): Promise<void> {
  await new Promise<void>((ready) => {
    server = serve(
      {
        fetch: (req) => {
          if (front.busy > 0 && new URL(req.url).pathname === '/api/v1/agent/checkin') {
            front.busy--;
            return Response.json(
              { error: 'service_unavailable', message: 'busy' },
              { status: 503, headers: { 'retry-after': '2' } },
            );
          }
          return ctx.app.fetch(req);
        },
        port: front.port,
        hostname: '127.0.0.1',
      },
      () => ready(),
    );
  });
  front.port = (server!.address() as AddressInfo).port;
}

async function stopService(): Promise<void> {
  const s = server;
  server = null;
  if (!s) return;
  await new Promise((done) => {
    s.close(done);
    (s as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
  });
}

afterAll(async () => {
  await stopService();
  await rm(dirname(isoDir), { recursive: true, force: true });
  await rm(scratch, { recursive: true, force: true });
});

interface Device {
  root: string;
  markers: string;
  playbookRuns: string;
  hold: string;
  deviceId: string;
  orgId: string;
  oeId: string;
  /** agent.json as the installer left it (with the bootstrap token). */
  agentJson: string;
}

const device = {} as Device;
const logs: string[] = [];

interface AgentRun {
  code: number | null;
  stdout: string;
  stderr: string;
  wallMs: number;
  cpuMs: number;
}

function agentEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: process.env.PATH!,
    HOME: device.root,
    FLEET_ROOT: device.root,
    FLEET_ANSIBLE_PLAYBOOK: join(scratch, 'counting-playbook'),
    FLEET_RETRIES: '1',
    FLEET_RETRY_DELAY: '1',
    FIXTURE_MARKERS: device.markers,
    FIXTURE_FAIL: '',
    COUNT_FILE: device.playbookRuns,
    HOLD_DIR: '',
    ...extra,
  };
}

/** `fleet-agent once` under dash; the children's CPU time from the shell's `times`. */
function once(extra: Record<string, string> = {}, root = device.root): Promise<AgentRun> {
  const agent = join(root, 'usr/local/sbin/fleet-agent');
  const started = Date.now();
  return new Promise((resolve) => {
    execFile(
      'dash',
      ['-c', '"$@"; rc=$?; times >&2; exit $rc', 'timer', 'dash', agent, 'once'],
      { env: agentEnv({ FLEET_ROOT: root, ...extra }), timeout: 300_000 },
      (err, stdout, stderr) => {
        const code = err ? ((err as { code?: number }).code ?? null) : 0;
        logs.push(stdout, stderr);
        const times = stderr.trim().split('\n').at(-1) ?? '';
        const cpuMs = [...times.matchAll(/(\d+)m([\d.]+)s/g)].reduce(
          (sum, m) => sum + (Number(m[1]) * 60 + Number(m[2])) * 1000,
          0,
        );
        resolve({ code: typeof code === 'number' ? code : null, stdout, stderr, wallMs: Date.now() - started, cpuMs });
      },
    );
  });
}

async function playbookRuns(): Promise<number> {
  return existsSync(device.playbookRuns)
    ? (await readFile(device.playbookRuns, 'utf8')).split('\n').filter(Boolean).length
    : 0;
}

async function markers(): Promise<string[]> {
  return (await readdir(device.markers)).sort();
}

async function mode(path: string): Promise<number> {
  return (await stat(path)).mode & 0o777;
}

async function events(): Promise<Array<{ merkmal: string; type: string; payload: any }>> {
  const res = await ctx.request('GET', `/api/v1/devices/${device.deviceId}/events?limit=500`);
  expect(res.status).toBe(200);
  return res.body.items;
}

async function ok(method: string, path: string, body?: unknown) {
  const res = await ctx.request(method, path, { body });
  expect(res.status, `${method} ${path}: ${JSON.stringify(res.body)}`).toBeLessThan(300);
  return res.body;
}

const figures: string[] = [];

describe.skipIf(missingTools('ansible-playbook', 'git', 'xorriso', 'dash'))('the device agent', () => {
  beforeAll(async () => {
    await makeRoleRepository(repo);
    await startService();
    // The Runtime Blueprint's agent.base_url: the service as the device reaches it.
    (ctx.config as { publicBaseUrl: string }).publicBaseUrl = `http://127.0.0.1:${front.port}`;
    device.root = join(scratch, 'root');
    device.markers = join(scratch, 'markers');
    device.playbookRuns = join(scratch, 'playbook-runs');
    device.hold = join(scratch, 'hold');
    await mkdir(device.root);
    await mkdir(device.markers);
    // Counts the playbook runs; with HOLD_DIR it waits for the test before starting ansible.
    await writeFile(
      join(scratch, 'counting-playbook'),
      [
        '#!/bin/sh',
        // One line per run; it says whether Ansible's module syslog was turned off.
        'echo "run $ANSIBLE_NO_TARGET_SYSLOG" >>"$COUNT_FILE"',
        'if [ -n "$HOLD_DIR" ]; then',
        '  : >"$HOLD_DIR/started"',
        '  while [ ! -e "$HOLD_DIR/go" ]; do sleep 0.1; done',
        'fi',
        'exec ansible-playbook "$@"',
        '',
      ].join('\n'),
    );
    await chmod(join(scratch, 'counting-playbook'), 0o755);
  }, 60_000);

  it('journey: image → handshake → install.sh late → once bootstraps, checks in, applies and reports', async () => {
    const org = await createOrganization(ctx);
    device.orgId = org.id;
    const session = await createEnrollmentSession(ctx, org.id, { max_devices: 3 });
    const queued = await triggerBuild(ctx, org.id, { enrollment_session_id: session.id, wlan: WLAN });
    await runJobs(ctx, workerDeps(ctx, { publicBaseUrl: `http://127.0.0.1:${front.port}` }));
    const build = (await getBuild(ctx, queued.id)).body;
    expect(build.status, build.error).toBe('completed');

    const fleet = join(scratch, 'fleet');
    const image = join(isoDir, `fleet-installer-${queued.id}.iso`);
    const x = spawnSync('xorriso', ['-osirrox', 'on', '-indev', image, '-extract', '/fleet', fleet], {
      encoding: 'utf8',
    });
    expect(x.status, x.stderr).toBe(0);
    expect((await readdir(join(fleet, 'agent'))).sort()).toEqual([
      'fleet-agent',
      'fleet-agent.service',
      'fleet_agent_helpers.py',
      'site.yml',
    ]);

    const out = join(scratch, 'run-fleet');
    const shell = (args: string[]) =>
      new Promise<{ code: number; stderr: string }>((resolve) =>
        execFile(
          'dash',
          args,
          {
            env: { PATH: process.env.PATH!, FLEET_OUT: out, FLEET_SERIAL: newSerial(), FLEET_RETRIES: '2' },
            timeout: 60_000,
          },
          (err, _stdout, stderr) => resolve({ code: err ? Number((err as { code?: number }).code) : 0, stderr }),
        ),
      );
    const handshake = await shell([join(fleet, 'handshake.sh')]);
    expect(handshake.code, handshake.stderr).toBe(0);
    const late = await shell([join(fleet, 'install.sh'), 'late', device.root]);
    expect(late.code, late.stderr).toBe(0);

    const r = device.root;
    expect(await mode(join(r, 'usr/local/sbin/fleet-agent'))).toBe(0o755);
    expect(await mode(join(r, 'usr/local/share/fleet/fleet_agent_helpers.py'))).toBe(0o644);
    expect(await mode(join(r, 'usr/local/share/fleet/site.yml'))).toBe(0o644);
    expect(await mode(join(r, 'etc/systemd/system/fleet-agent.service'))).toBe(0o644);
    expect(await readlink(join(r, 'etc/systemd/system/multi-user.target.wants/fleet-agent.service'))).toBe(
      '/etc/systemd/system/fleet-agent.service',
    );
    expect(await mode(join(r, 'etc/fleet/agent.json'))).toBe(0o600);
    expect(await mode(join(r, 'var/lib/fleet'))).toBe(0o700);
    const shipped = (file: string) =>
      readFile(new URL(`../../jobs/iso/installer/agent/${file}`, import.meta.url), 'utf8');
    expect(await readFile(join(r, 'usr/local/sbin/fleet-agent'), 'utf8')).toBe(await shipped('fleet-agent'));
    expect(await readFile(join(r, 'usr/local/share/fleet/fleet_agent_helpers.py'), 'utf8')).toBe(
      await shipped('fleet_agent_helpers.py'),
    );
    device.agentJson = await readFile(join(r, 'etc/fleet/agent.json'), 'utf8');
    const agentConf = JSON.parse(device.agentJson);
    expect(agentConf.bootstrap_token).toBeTruthy();
    device.deviceId = agentConf.device_id;
    const dev = await ok('GET', `/api/v1/devices/${device.deviceId}`);
    device.oeId = dev.oe_id;
    expect(dev.agent_last_checkin).toBeNull();

    // A marker of an order that is absent by default: the first apply removes it.
    await writeFile(join(device.markers, 'qgis'), 'left over\n');
    const first = await once();
    figures.push(
      `full apply (${ROLES.length} roles, bootstrap included): ${first.wallMs} ms wall, ${Math.round(first.cpuMs)} ms CPU`,
    );
    expect(first.code, first.stdout + first.stderr).toBe(0);
    expect(first.stdout).toContain('bootstrapped');
    const after = JSON.parse(await readFile(join(r, 'etc/fleet/agent.json'), 'utf8'));
    expect(after).toEqual({ base_url: agentConf.base_url, device_id: agentConf.device_id });
    expect(await mode(join(r, 'etc/fleet/agent.json'))).toBe(0o600);
    expect(await mode(join(r, 'var/lib/fleet/agent-secret'))).toBe(0o600);
    expect(await markers()).toEqual(['base', 'desktop', 'firefox', 'provisioning_agent']);
    expect(await playbookRuns()).toBe(1);
    // A server that allows it (file:// as smart HTTP or SSH) is cloned shallow.
    expect(git(join(r, 'var/lib/fleet/roles'), 'rev-parse', '--is-shallow-repository').trim()).toBe('true');

    const seen = await events();
    const byMerkmal = Object.fromEntries(seen.map((e) => [e.merkmal, e]));
    expect(byMerkmal.firefox).toMatchObject({
      type: 'applied',
      payload: { detail: { role: 'firefox', message: null } },
    });
    for (const absent of ['gastsitzung', 'libreoffice', 'onlyoffice', 'qgis']) {
      expect(byMerkmal[absent]?.type, absent).toBe('removed');
    }
    expect(byMerkmal.qgis!.payload.detail).toMatchObject({ role: 'qgis', changed: true });
    expect(byMerkmal.libreoffice!.payload.detail).toMatchObject({ role: 'libreoffice', changed: false });
    const deadline = Date.now() + 5000;
    for (;;) {
      const d = await ok('GET', `/api/v1/devices/${device.deviceId}`);
      if (d.agent_last_checkin !== null) break;
      expect(Date.now()).toBeLessThan(deadline);
      await new Promise((done) => setTimeout(done, 100));
    }
    const [hw] = await ctx.sql`select hardware from device_hardware where device_id = ${device.deviceId}`;
    expect(hw!.hardware).toHaveProperty('cpu');
  }, 900_000);

  // Only where systemd is installed (CONTRACT §18 asks no more): not a tool CI must bring.
  it.skipIf(!hasTool('systemd-analyze'))(
    'the installed unit passes systemd-analyze verify',
    async () => {
      // The target's unit, checked against this host's own units (copied into the target root).
      await cp('/usr/lib/systemd/system', join(device.root, 'usr/lib/systemd/system'), { recursive: true });
      const out = spawnSync('systemd-analyze', ['verify', `--root=${device.root}`, 'fleet-agent.service'], {
        encoding: 'utf8',
      });
      expect(out.status, out.stderr).toBe(0);
      expect(out.stderr).toBe('');
    },
    120_000,
  );

  it('a second once with nothing changed: 304, the playbook is not started, exit 0', async () => {
    const run = await once();
    figures.push(`304 cycle: ${run.wallMs} ms wall, ${Math.round(run.cpuMs)} ms CPU`);
    expect(run.code, run.stdout).toBe(0);
    expect(run.stdout).toContain('(304)');
    expect(await playbookRuns()).toBe(1);
  }, 600_000);

  it('an org-unit selection is applied and reported; a deselection on the device removes it', async () => {
    const optionen = { version: '3.34', licence: OPTION_VALUE };
    await ok('POST', `/api/v1/org-units/${device.oeId}/catalog/qgis/select`, { optionen });
    const selected = await once();
    expect(selected.code, selected.stdout).toBe(0);
    expect(JSON.parse(await readFile(join(device.markers, 'qgis'), 'utf8'))).toEqual(optionen);
    const applied = (await events()).find((e) => e.merkmal === 'qgis');
    expect(applied).toMatchObject({ type: 'applied', payload: { detail: { role: 'qgis', changed: true } } });
    // A new desired state confirms every order, the unchanged firefox too (applied once before).
    expect((await events()).filter((e) => e.merkmal === 'firefox' && e.type === 'applied')).toHaveLength(2);

    await ok('POST', `/api/v1/devices/${device.deviceId}/catalog/qgis/deselect`);
    const removed = await once();
    expect(removed.code, removed.stdout).toBe(0);
    expect(existsSync(join(device.markers, 'qgis'))).toBe(false);
    const latest = (await events()).filter(
      (e) => e.merkmal === 'qgis' && e.type !== 'selected' && e.type !== 'deselected',
    );
    expect(latest[0]).toMatchObject({ type: 'removed', payload: { detail: { role: 'qgis' } } });
    expect(await playbookRuns()).toBe(3);
  }, 900_000);

  it('a failing role: apply_failed with its message, exit 5, the others applied; the next cycle retries it', async () => {
    await ok('POST', `/api/v1/devices/${device.deviceId}/catalog/libreoffice/select`);
    await rm(join(device.markers, 'firefox'));
    const failing = await once({ FIXTURE_FAIL: 'libreoffice' });
    expect(failing.code, failing.stdout).toBe(5);
    expect(failing.stdout).toContain('libreoffice (fixture role libreoffice fails on demand)');
    expect(await markers()).toEqual(['base', 'desktop', 'firefox', 'provisioning_agent']);
    const failed = (await events()).find((e) => e.merkmal === 'libreoffice');
    expect(failed).toMatchObject({
      type: 'apply_failed',
      payload: { detail: { role: 'libreoffice', message: 'fixture role libreoffice fails on demand' } },
    });

    const retried = await once();
    expect(retried.code, retried.stdout).toBe(0);
    expect(retried.stdout).toContain('applying again: the last apply failed');
    expect(await markers()).toContain('libreoffice');
    expect((await events()).find((e) => e.merkmal === 'libreoffice')?.type).toBe('applied');
    expect(await playbookRuns()).toBe(5);
  }, 900_000);

  it('the service down before the report: exit 4, the report stays spooled; the next cycle sends it first, once', async () => {
    await ok('POST', `/api/v1/devices/${device.deviceId}/catalog/onlyoffice/select`);
    await rm(device.hold, { recursive: true, force: true });
    await mkdir(device.hold);
    const running = once({ HOLD_DIR: device.hold });
    while (!existsSync(join(device.hold, 'started'))) await new Promise((done) => setTimeout(done, 50));
    await stopService();
    await writeFile(join(device.hold, 'go'), '');
    const down = await running;
    expect(down.code, down.stdout).toBe(4);
    const spool = join(device.root, 'var/lib/fleet/spool');
    expect(await readdir(spool)).toHaveLength(1);
    expect(existsSync(join(device.markers, 'onlyoffice'))).toBe(true);
    expect((await events()).some((e) => e.merkmal === 'onlyoffice' && e.type === 'applied')).toBe(false);

    await startService();
    const back = await once();
    expect(back.code, back.stdout).toBe(0);
    expect(back.stdout.indexOf('accepted')).toBeLessThan(back.stdout.indexOf('checked in'));
    expect(await readdir(spool)).toEqual([]);
    expect((await events()).filter((e) => e.merkmal === 'onlyoffice' && e.type === 'applied')).toHaveLength(1);
    expect(await playbookRuns()).toBe(6);
  }, 900_000);

  it('a new desired state confirms every order, also where the outcome stays as it was; an apply a 304 started reports only what is new', async () => {
    /** The agent's reports so far, counted per Merkmal. */
    const reports = async () => {
      const counts: Record<string, number> = {};
      for (const e of await events()) {
        if (e.type !== 'selected' && e.type !== 'deselected') counts[e.merkmal] = (counts[e.merkmal] ?? 0) + 1;
      }
      return counts;
    };
    const before = await reports();
    const runs = await playbookRuns();
    // New optionen for an order already applied; firefox deselected and selected again (as it was).
    await ok('POST', `/api/v1/devices/${device.deviceId}/catalog/libreoffice/select`, {
      optionen: { edition: 'fresh' },
    });
    await ok('POST', `/api/v1/devices/${device.deviceId}/catalog/firefox/deselect`);
    await ok('POST', `/api/v1/devices/${device.deviceId}/catalog/firefox/select`);

    const changed = await once();
    expect(changed.code, changed.stdout).toBe(0);
    expect(changed.stdout).toContain('checked in: new desired state');
    expect(JSON.parse(await readFile(join(device.markers, 'libreoffice'), 'utf8'))).toEqual({ edition: 'fresh' });
    const desired = JSON.parse(await readFile(join(device.root, 'var/lib/fleet/desired.json'), 'utf8'));
    const orders = (desired.auftraege as Array<{ merkmal: string }>).map((a) => a.merkmal).sort();
    expect(orders).toEqual(['firefox', 'gastsitzung', 'libreoffice', 'onlyoffice', 'qgis']);
    expect(changed.stdout).toContain(`0 failed; ${orders.length} to report`);
    const confirmed = await reports();
    for (const merkmal of orders) expect(confirmed[merkmal], merkmal).toBe((before[merkmal] ?? 0) + 1);
    const latest = (merkmal: string) =>
      events().then((all) =>
        all.find((e) => e.merkmal === merkmal && e.type !== 'selected' && e.type !== 'deselected'),
      );
    expect(await latest('firefox')).toMatchObject({ type: 'applied', payload: { detail: { changed: false } } });
    expect(await latest('libreoffice')).toMatchObject({ type: 'applied', payload: { detail: { changed: true } } });
    expect(await latest('qgis')).toMatchObject({ type: 'removed' });

    // The daily apply of the same state (a 304 started it): nothing new, nothing reported.
    await writeFile(join(device.root, 'var/lib/fleet/applied-at'), '0\n');
    const daily = await once();
    expect(daily.code, daily.stdout).toBe(0);
    expect(daily.stdout).toContain('applying again: a day since the last full apply');
    expect(daily.stdout).toContain('0 failed; 0 to report');
    expect(await reports()).toEqual(confirmed);
    expect(await playbookRuns()).toBe(runs + 2);
  }, 900_000);

  it('run: a 503 with Retry-After 2 is waited out (plus jitter), then the check-in succeeds', async () => {
    front.busy = 1;
    const child = spawn('dash', [join(device.root, 'usr/local/sbin/fleet-agent'), 'run'], {
      env: agentEnv(),
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const seenAt: Record<string, number> = {};
    child.stdout.on('data', (chunk) => {
      output += chunk;
      for (const line of ['the service is busy', 'next check-in in']) {
        if (output.includes(line)) seenAt[line] ??= Date.now();
      }
    });
    child.stderr.on('data', (chunk) => (output += chunk));
    try {
      const deadline = Date.now() + 60_000;
      while (!seenAt['next check-in in'] && Date.now() < deadline) await new Promise((done) => setTimeout(done, 50));
      logs.push(output);
      expect(output).toContain('next try in 2s');
      expect(output).toContain('(304)');
      const waited = seenAt['next check-in in']! - seenAt['the service is busy']!;
      expect(waited).toBeGreaterThanOrEqual(1900);
      expect(waited).toBeLessThan(20_000);
      expect(front.busy).toBe(0);
      // systemd's stop: SIGTERM to every process of the unit. The agent's exit status then is
      // one the unit counts as success, so a stop leaves it inactive, not failed.
      const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
      process.kill(-child.pid!, 'SIGTERM');
      const code = await exited;
      const unit = await readFile(join(device.root, 'etc/systemd/system/fleet-agent.service'), 'utf8');
      const success = unit.match(/^SuccessExitStatus=(.*)$/m)?.[1]?.split(/\s+/) ?? [];
      expect([0, ...success.map(Number)]).toContain(code);
    } finally {
      if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGKILL');
    }
  }, 600_000);

  it('deprovisioned: exit 3 with the service message, no role runs; reprovisioned: the old secret gets 401, exit 3', async () => {
    const runs = await playbookRuns();
    await ok('POST', `/api/v1/devices/${device.deviceId}/deprovision`);
    const deprovisioned = await once();
    expect(deprovisioned.code, deprovisioned.stdout).toBe(3);
    expect(deprovisioned.stdout).toMatch(/device_deprovisioned: .+/);
    expect(await playbookRuns()).toBe(runs);

    await ok('POST', `/api/v1/devices/${device.deviceId}/reprovision`);
    const reprovisioned = await once();
    expect(reprovisioned.code, reprovisioned.stdout).toBe(3);
    expect(reprovisioned.stdout).toContain('(HTTP 401)');
    expect(reprovisioned.stdout).toContain('invalid_agent_secret');
    expect(await playbookRuns()).toBe(runs);
  }, 600_000);

  it('a refused bootstrap (used token) exits 3 and writes nothing; no agent.json exits 2', async () => {
    const root = join(scratch, 'root-refused');
    await mkdir(join(root, 'etc/fleet'), { recursive: true });
    await mkdir(join(root, 'usr/local/sbin'), { recursive: true });
    await mkdir(join(root, 'usr/local/share/fleet'), { recursive: true });
    await copyFile(join(device.root, 'usr/local/sbin/fleet-agent'), join(root, 'usr/local/sbin/fleet-agent'));
    const helpers = 'usr/local/share/fleet/fleet_agent_helpers.py';
    await copyFile(join(device.root, helpers), join(root, helpers));
    await writeFile(join(root, 'etc/fleet/agent.json'), device.agentJson, { mode: 0o600 });
    const refused = await once({}, root);
    expect(refused.code, refused.stdout).toBe(3);
    expect(refused.stdout).toContain('invalid_bootstrap_token');
    expect(await readFile(join(root, 'etc/fleet/agent.json'), 'utf8')).toBe(device.agentJson);
    expect((await readdir(root)).sort()).toEqual(['etc', 'usr']);
    expect(await readdir(join(root, 'etc/fleet'))).toEqual(['agent.json']);

    await rm(join(root, 'etc/fleet/agent.json'));
    const unconfigured = await once({}, root);
    expect(unconfigured.code, unconfigured.stdout).toBe(2);
  }, 600_000);

  it('never logs the secret, the bootstrap token or the WLAN key', async () => {
    const secret = (await readFile(join(device.root, 'var/lib/fleet/agent-secret'), 'utf8')).trim();
    const token = JSON.parse(device.agentJson).bootstrap_token as string;
    expect(secret.length).toBeGreaterThan(20);
    const all = logs.join('\n');
    expect(all).toContain('fleet-agent: ');
    for (const value of [secret, token, WLAN.psk, OPTION_VALUE]) expect(all).not.toContain(value);
    // Every playbook run had Ansible's module syslog off (no arguments in the journal).
    const runs = (await readFile(device.playbookRuns, 'utf8')).split('\n').filter(Boolean);
    expect(new Set(runs)).toEqual(new Set(['run 1']));
    console.log(`fleet-agent figures: ${figures.join('; ')}`);
  }, 60_000);
});
