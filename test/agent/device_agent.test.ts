/**
 * The device agent (CONTRACT §18) end to end, from the image: an image built for an
 * enrollment session by the real task, read back with xorriso, its handshake run under dash,
 * its `install.sh late` installing the agent into a temporary root (FLEET_ROOT), and then
 * `fleet-agent` itself under dash with real curl, git and ansible-playbook against the
 * service on a loopback port over the test file's PostgreSQL. The roles come from a local
 * git repository (file://, cloned shallow) of fixture roles (test/support/role_repository.ts).
 * The agent's lifecycle (503s, deprovisioning, a refused bootstrap) is
 * device_agent_lifecycle.test.ts; a repository over git's dumb HTTP device_agent_dumb_http.test.ts.
 *
 * ansible-playbook costs seconds of CPU per run, so each apply here serves several checks:
 * five applies in all (and cycles that apply nothing), one after another on one device (the
 * tests of this file depend on their order; the files of `npm run test:device` do not depend
 * on each other).
 */
import { execFile, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { cp, mkdir, readdir, readFile, readlink, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnrollmentSession, newSerial } from '../support/activation.ts';
import { useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import {
  AgentService,
  agentOnce,
  countLines,
  deviceEvents,
  ok,
  writeCountingPlaybook,
} from '../support/device_agent.ts';
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
const service = new AgentService(ctx);

afterAll(async () => {
  await service.stop();
  await rm(dirname(isoDir), { recursive: true, force: true });
  await rm(scratch, { recursive: true, force: true });
});

const device = {
  root: join(scratch, 'root'),
  markers: join(scratch, 'markers'),
  playbookRuns: join(scratch, 'playbook-runs'),
  hold: join(scratch, 'hold'),
  deviceId: '',
  oeId: '',
  bootstrapToken: '',
};
const logs: string[] = [];
const figures: string[] = [];

function once(extra: Record<string, string> = {}) {
  return agentOnce(
    device.root,
    {
      FLEET_ANSIBLE_PLAYBOOK: join(scratch, 'counting-playbook'),
      FLEET_RETRIES: '1',
      FLEET_RETRY_DELAY: '1',
      FIXTURE_MARKERS: device.markers,
      FIXTURE_FAIL: '',
      COUNT_FILE: device.playbookRuns,
      HOLD_DIR: '',
      ...extra,
    },
    logs,
  );
}

const playbookRuns = () => countLines(device.playbookRuns);
const events = () => deviceEvents(ctx, device.deviceId);

async function markers(): Promise<string[]> {
  return (await readdir(device.markers)).sort();
}

async function mode(path: string): Promise<number> {
  return (await stat(path)).mode & 0o777;
}

/** The agent's reports so far (not the admins' selections), counted per Merkmal. */
async function reports(): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const e of await events()) {
    if (e.type !== 'selected' && e.type !== 'deselected') counts[e.merkmal] = (counts[e.merkmal] ?? 0) + 1;
  }
  return counts;
}

/** The newest report for a Merkmal. */
async function latest(merkmal: string) {
  return (await events()).find((e) => e.merkmal === merkmal && e.type !== 'selected' && e.type !== 'deselected');
}

describe.skipIf(missingTools('ansible-playbook', 'git', 'xorriso', 'dash'))('the device agent, from the image', () => {
  beforeAll(async () => {
    await makeRoleRepository(repo);
    await service.start();
    // The Runtime Blueprint's agent.base_url: the service as the device reaches it.
    (ctx.config as { publicBaseUrl: string }).publicBaseUrl = service.url;
    await mkdir(device.root);
    await mkdir(device.markers);
    await writeCountingPlaybook(join(scratch, 'counting-playbook'));
  }, 60_000);

  it('journey: image → handshake → install.sh late → once bootstraps, checks in, applies and reports', async () => {
    const org = await createOrganization(ctx);
    const session = await createEnrollmentSession(ctx, org.id, { max_devices: 3 });
    const queued = await triggerBuild(ctx, org.id, { enrollment_session_id: session.id, wlan: WLAN });
    await runJobs(ctx, workerDeps(ctx, { publicBaseUrl: service.url }));
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
      'fleet-disk-key',
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
    const agentConf = JSON.parse(await readFile(join(r, 'etc/fleet/agent.json'), 'utf8'));
    expect(agentConf.bootstrap_token).toBeTruthy();
    device.bootstrapToken = agentConf.bootstrap_token;
    device.deviceId = agentConf.device_id;
    const dev = await ok(ctx, 'GET', `/api/v1/devices/${device.deviceId}`);
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
      const d = await ok(ctx, 'GET', `/api/v1/devices/${device.deviceId}`);
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

  it('with nothing changed: after the inventory was sent one 200 as last applied, then a 304; the playbook is not started, exit 0', async () => {
    // The first answer asked for the inventory; the answer after it no longer does.
    const asked = await once();
    expect(asked.code, asked.stdout).toBe(0);
    expect(asked.stdout).toContain('as last applied, nothing to apply');
    const run = await once();
    figures.push(`304 cycle: ${run.wallMs} ms wall, ${Math.round(run.cpuMs)} ms CPU`);
    expect(run.code, run.stdout).toBe(0);
    expect(run.stdout).toContain('(304)');
    expect(await playbookRuns()).toBe(1);
  }, 600_000);

  it('one apply: an org-unit selection with optionen applied, a failing role reported apply_failed (exit 5), a removed marker restored, every order confirmed', async () => {
    const optionen = { version: '3.34', licence: OPTION_VALUE };
    await ok(ctx, 'POST', `/api/v1/org-units/${device.oeId}/catalog/qgis/select`, { optionen });
    await ok(ctx, 'POST', `/api/v1/devices/${device.deviceId}/catalog/libreoffice/select`);
    await rm(join(device.markers, 'firefox'));

    const run = await once({ FIXTURE_FAIL: 'libreoffice' });
    expect(run.code, run.stdout).toBe(5);
    expect(run.stdout).toContain('checked in: new desired state');
    expect(run.stdout).toContain('libreoffice (fixture role libreoffice fails on demand)');
    expect(await markers()).toEqual(['base', 'desktop', 'firefox', 'provisioning_agent', 'qgis']);
    expect(JSON.parse(await readFile(join(device.markers, 'qgis'), 'utf8'))).toEqual(optionen);
    expect(await latest('qgis')).toMatchObject({
      type: 'applied',
      payload: { detail: { role: 'qgis', changed: true } },
    });
    expect(await latest('libreoffice')).toMatchObject({
      type: 'apply_failed',
      payload: { detail: { role: 'libreoffice', message: 'fixture role libreoffice fails on demand' } },
    });
    // A new desired state confirms every order, firefox too (applied once before).
    expect((await events()).filter((e) => e.merkmal === 'firefox' && e.type === 'applied')).toHaveLength(2);
    expect(await playbookRuns()).toBe(2);
  }, 900_000);

  it('the next cycle retries the failed role; the service down before the report: exit 4, the report stays spooled and is sent first, once', async () => {
    await rm(device.hold, { recursive: true, force: true });
    await mkdir(device.hold);
    const running = once({ HOLD_DIR: device.hold });
    while (!existsSync(join(device.hold, 'started'))) await new Promise((done) => setTimeout(done, 50));
    await service.stop();
    await writeFile(join(device.hold, 'go'), '');
    const down = await running;
    expect(down.code, down.stdout).toBe(4);
    expect(down.stdout).toContain('applying again: the last apply failed');
    const spool = join(device.root, 'var/lib/fleet/spool');
    expect(await readdir(spool)).toHaveLength(1);
    expect(await markers()).toContain('libreoffice');
    expect((await events()).some((e) => e.merkmal === 'libreoffice' && e.type === 'applied')).toBe(false);

    await service.start();
    const back = await once();
    expect(back.code, back.stdout).toBe(0);
    expect(back.stdout.indexOf('accepted')).toBeLessThan(back.stdout.indexOf('checked in'));
    expect(await readdir(spool)).toEqual([]);
    expect((await events()).filter((e) => e.merkmal === 'libreoffice' && e.type === 'applied')).toHaveLength(1);
    expect(await playbookRuns()).toBe(3);
  }, 900_000);

  it('a 200 with the content last applied (a Merkmal deselected and selected again at the device): no playbook, no report, the tag kept', async () => {
    const before = await reports();
    const spool = join(device.root, 'var/lib/fleet/spool');
    await ok(ctx, 'POST', `/api/v1/devices/${device.deviceId}/catalog/libreoffice/deselect`);
    await ok(ctx, 'POST', `/api/v1/devices/${device.deviceId}/catalog/libreoffice/select`);
    // A tag the service does not give: the check-in is a 200 whatever its tag covers.
    const etagFile = join(device.root, 'var/lib/fleet/etag');
    await writeFile(etagFile, '"stale"\n');

    const same = await once();
    figures.push(`200 as last applied: ${same.wallMs} ms wall, ${Math.round(same.cpuMs)} ms CPU`);
    expect(same.code, same.stdout).toBe(0);
    expect(same.stdout).toMatch(
      /checked in: desired state and roles \(commit [0-9a-f]{7}\) as last applied, nothing to apply/,
    );
    expect(same.stdout).not.toContain('applying');
    expect(await playbookRuns()).toBe(3);
    expect(await reports()).toEqual(before);
    expect(await readdir(spool)).toEqual([]);
    expect((await readFile(etagFile, 'utf8')).trim()).toMatch(/^"[0-9A-Za-z]+"$/);
    expect((await readFile(etagFile, 'utf8')).trim()).not.toBe('"stale"');
    expect(await mode(join(device.root, 'var/lib/fleet/applied.json'))).toBe(0o600);
  }, 600_000);

  it('a new desired state (new optionen, a deselection, a Merkmal deselected and selected again) confirms every order, also where the outcome stays as it was', async () => {
    const before = await reports();
    await ok(ctx, 'POST', `/api/v1/devices/${device.deviceId}/catalog/libreoffice/select`, {
      optionen: { edition: 'fresh' },
    });
    await ok(ctx, 'POST', `/api/v1/devices/${device.deviceId}/catalog/qgis/deselect`);
    await ok(ctx, 'POST', `/api/v1/devices/${device.deviceId}/catalog/firefox/deselect`);
    await ok(ctx, 'POST', `/api/v1/devices/${device.deviceId}/catalog/firefox/select`);

    const changed = await once();
    expect(changed.code, changed.stdout).toBe(0);
    expect(changed.stdout).toContain('checked in: new desired state');
    expect(JSON.parse(await readFile(join(device.markers, 'libreoffice'), 'utf8'))).toEqual({ edition: 'fresh' });
    expect(existsSync(join(device.markers, 'qgis'))).toBe(false);
    const desired = JSON.parse(await readFile(join(device.root, 'var/lib/fleet/desired.json'), 'utf8'));
    const orders = (desired.auftraege as Array<{ merkmal: string }>).map((a) => a.merkmal).sort();
    expect(orders).toEqual(['firefox', 'gastsitzung', 'libreoffice', 'onlyoffice', 'qgis']);
    expect(changed.stdout).toContain(`0 failed; ${orders.length} to report`);
    const confirmed = await reports();
    for (const merkmal of orders) expect(confirmed[merkmal], merkmal).toBe((before[merkmal] ?? 0) + 1);
    expect(await latest('firefox')).toMatchObject({ type: 'applied', payload: { detail: { changed: false } } });
    expect(await latest('libreoffice')).toMatchObject({ type: 'applied', payload: { detail: { changed: true } } });
    expect(await latest('qgis')).toMatchObject({
      type: 'removed',
      payload: { detail: { role: 'qgis', changed: true } },
    });
    expect(await playbookRuns()).toBe(4);
  }, 900_000);

  it('the daily apply of the same state (a 304 started it): nothing new, nothing reported', async () => {
    const before = await reports();
    await writeFile(join(device.root, 'var/lib/fleet/applied-at'), '0\n');
    const daily = await once();
    expect(daily.code, daily.stdout).toBe(0);
    expect(daily.stdout).toContain('applying again: a day since the last full apply');
    expect(daily.stdout).toContain('0 failed; 0 to report');
    expect(await reports()).toEqual(before);
    expect(await playbookRuns()).toBe(5);
  }, 900_000);

  it("never logs the secret, the bootstrap token, the WLAN key or an order's optionen", async () => {
    const secret = (await readFile(join(device.root, 'var/lib/fleet/agent-secret'), 'utf8')).trim();
    expect(secret.length).toBeGreaterThan(20);
    const all = logs.join('\n');
    expect(all).toContain('fleet-agent: ');
    for (const value of [secret, device.bootstrapToken, WLAN.psk, OPTION_VALUE]) expect(all).not.toContain(value);
    // Every playbook run had Ansible's module syslog off (no arguments in the journal).
    const runs = (await readFile(device.playbookRuns, 'utf8')).split('\n').filter(Boolean);
    expect(new Set(runs)).toEqual(new Set(['run 1']));
    console.log(`fleet-agent figures: ${figures.join('; ')}`);
  }, 60_000);
});
