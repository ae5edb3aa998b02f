/**
 * Device actions on the device (CONTRACT §28): `fleet-agent once` under dash with real curl,
 * python3, interpreters, ansible-playbook and apt, against the service on a loopback port
 * over this file's database. The device's software is a system root in a folder where real
 * apt and dpkg install packages (test/support/apt_root.ts): fleet-test-pkg 1.0-1 with 1.1-1 in
 * a security suite, fleet-other-pkg 1.0-1 with 1.1-1 in an updates suite. A reboot runs a
 * stand-in of `systemctl` that gives the device a new boot id (FLEET_BOOT_ID_FILE), and `wall`
 * a stand-in that keeps what logged-in users would read.
 *
 * One device, its tests in order (each action an admin asks for through the API): scripts
 * that succeed, fail and time out, in the order asked; one offered again is not run again; a
 * crash between start and result (reported interrupted, never run again); a result whose
 * answer was lost (kept, sent again, taken once); a start whose answer was lost (started again
 * from the record, run once); apply_now (with an action canceled while it ran: never
 * started); apply_updates (the upgrade, its details, the new inventory at once); a reboot
 * whose wait was cut short, and one reported once after the boot. No script text or output
 * in the agent's log.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { chmod, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activateDevice, resolveDevice } from '../support/activation.ts';
import { useTestApp } from '../support/app.ts';
import { type AptRoot, installedVersion, makeAptRoot, OTHER_PKG, SECURITY_PKG } from '../support/apt_root.ts';
import { createOrganization } from '../support/builders.ts';
import {
  AgentService,
  agentOnce,
  countLines,
  installAgent,
  ok,
  writeCountingPlaybook,
} from '../support/device_agent.ts';
import { makeRoleRepository } from '../support/role_repository.ts';
import { missingTools } from '../support/tools.ts';

const scratch = mkdtempSync(join(tmpdir(), 'fleet-agent-actions-'));
const repo = join(scratch, 'roles-repo');
const root = join(scratch, 'root');
const bin = join(scratch, 'bin');
const markers = join(scratch, 'markers');
const playbook = join(scratch, 'counting-playbook');
const countFile = join(scratch, 'playbook-runs');
const hold = join(scratch, 'hold');
const bootIdFile = join(scratch, 'boot_id');
const reboots = join(scratch, 'reboots');
const walls = join(scratch, 'walls');
/** What the scripts of this file write, to count their runs. */
const ran = join(scratch, 'ran');
const actionsDir = join(root, 'var/lib/fleet/actions');
const ctx = useTestApp({ roleRepositoryUrl: `file://${repo}`, agentPollIntervalSeconds: 60 });
const service = new AgentService(ctx);
const logs: string[] = [];
/** Text that may appear in a script and its output, never in the agent's log. */
const SECRET_TEXT = 'script-text-never-logged-0815';
const SECRET_OUTPUT = 'script-output-never-logged-4711';
let deviceId = '';
let apt: AptRoot;

const env = (extra: Record<string, string> = {}): Record<string, string> => ({
  PATH: `${bin}:${process.env.PATH}`,
  FLEET_ANSIBLE_PLAYBOOK: playbook,
  FLEET_RETRIES: '1',
  FLEET_RETRY_DELAY: '1',
  FLEET_DPKG_DIR: apt.dpkgDir,
  FLEET_APT_LISTS: apt.lists,
  FLEET_APT_GET: 'apt-get',
  ...apt.env,
  FLEET_BOOT_ID_FILE: bootIdFile,
  FLEET_REBOOT: join(bin, 'systemctl'),
  FLEET_WALL: join(bin, 'wall'),
  FIXTURE_MARKERS: markers,
  FIXTURE_FAIL: '',
  COUNT_FILE: countFile,
  HOLD_DIR: '',
  ...extra,
});
const once = (extra: Record<string, string> = {}) => agentOnce(root, env(extra), logs);

/** Stand-ins: python3 (the distribution's, with python3-apt), systemctl and wall. */
async function writeTools(): Promise<void> {
  await mkdir(bin, { recursive: true });
  const tools: Record<string, string> = {
    python3: 'exec /usr/bin/python3 "$@"',
    // The restart: a new boot id, as the next boot would have.
    systemctl: `echo "$*" >>"${reboots}"\ncat /proc/sys/kernel/random/uuid >"${bootIdFile}"`,
    wall: `cat >>"${walls}"`,
  };
  for (const [name, body] of Object.entries(tools)) {
    await writeFile(join(bin, name), `#!/bin/sh\n${body}\n`);
    await chmod(join(bin, name), 0o755);
  }
}

async function ask(type: string, parameters?: Record<string, unknown>): Promise<string> {
  const body = await ok(ctx, 'POST', `/api/v1/devices/${deviceId}/actions`, {
    type,
    ...(parameters ? { parameters } : {}),
  });
  return body.id as string;
}

/** A script action that appends `name` to the file of runs, then does `rest`. */
function script(name: string, rest: string, extra: Record<string, unknown> = {}) {
  return ask('script', {
    interpreter: 'sh',
    script: `# ${SECRET_TEXT}\necho ${name} >>"${ran}"\n${rest}\n`,
    ...extra,
  });
}

const action = (id: string) => ok(ctx, 'GET', `/api/v1/actions/${id}`);

async function runs(): Promise<string[]> {
  return existsSync(ran) ? (await readFile(ran, 'utf8')).split('\n').filter(Boolean) : [];
}

/** What is left of an action's record on the device. */
async function recordOf(id: string): Promise<string[]> {
  return (await readdir(join(actionsDir, id))).sort();
}

async function waitFor(check: () => boolean, what: string, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((done) => setTimeout(done, 50));
  }
}

afterAll(async () => {
  await service.stop();
  await rm(scratch, { recursive: true, force: true });
});

describe.skipIf(missingTools('ansible-playbook', 'git', 'dash', 'curl', 'python3-apt', 'dpkg'))(
  'device actions, on the device',
  () => {
    beforeAll(async () => {
      apt = await makeAptRoot(join(scratch, 'apt'));
      await makeRoleRepository(repo);
      await mkdir(markers);
      await writeCountingPlaybook(playbook);
      await writeTools();
      await writeFile(bootIdFile, `${randomUUID()}\n`);
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
      // Bootstrap, the first apply and the inventory; then an answer without actions is a 304.
      const first = await once();
      expect(first.code, first.stdout + first.stderr).toBe(0);
      expect(first.stdout).toContain('inventory sent');
      expect((await once()).code).toBe(0);
      expect((await once()).stdout).toContain('(304)');
    }, 300_000);

    afterAll(() => {
      const journal = logs.join('\n');
      expect(journal).not.toContain(SECRET_TEXT);
      expect(journal).not.toContain(SECRET_OUTPUT);
    });

    it('scripts that succeed, fail and time out run in the order asked, each once, after the apply', async () => {
      const good = await script('good', `echo ${SECRET_OUTPUT}; echo to-stderr >&2`);
      const bad = await script('bad', 'echo failing; exit 3', { interpreter: 'bash' });
      const slow = await script('slow', `echo before; sleep 30; echo ${SECRET_OUTPUT}`, { timeout_seconds: 1 });
      const run = await once();
      expect(run.code, run.stdout + run.stderr).toBe(0);
      expect(run.stdout).toContain('checked in: 3 device actions to run after the apply');
      expect(await runs()).toEqual(['good', 'bad', 'slow']);

      expect(await action(good)).toMatchObject({
        status: 'succeeded',
        result: { exit_code: 0, output: `${SECRET_OUTPUT}\nto-stderr\n`, duration_ms: expect.any(Number), details: {} },
      });
      expect(await action(bad)).toMatchObject({
        status: 'failed',
        result: { exit_code: 3, output: 'failing\n', details: {} },
      });
      const timedOut = await action(slow);
      expect(timedOut).toMatchObject({
        status: 'failed',
        result: { exit_code: 124, output: 'before\n', details: { timed_out: true, timeout_seconds: 1 } },
      });
      expect(timedOut.result.duration_ms).toBeGreaterThanOrEqual(1000);
      expect(timedOut.result.duration_ms).toBeLessThan(15_000);
      for (const id of [good, bad, slow]) {
        expect(run.stdout).toContain(`action ${id} (script) started`);
        expect(run.stdout).toContain(`action ${id}: result accepted`);
        // The record stays (the id never runs again); the script, output and result went.
        expect(await recordOf(id)).toEqual(['done', 'owner', 'ran', 'type']);
      }
      expect(run.stdout).toMatch(new RegExp(`action ${slow} \\(script\\): timed out after 1 s, ended`));

      // The answer changed (no actions): a 200 with nothing to apply, then a 304; nothing runs again.
      expect((await once()).stdout).toContain('as last applied, nothing to apply');
      expect((await once()).stdout).toContain('(304)');
      expect(await runs()).toEqual(['good', 'bad', 'slow']);
    }, 300_000);

    it('an action offered again (as a service restored from a backup would) is never run again', async () => {
      const again = await script('again', 'true');
      await once();
      expect(await runs()).toContain('again');
      await ctx.sql`update device_actions set status = 'delivered', started_at = null, finished_at = null, result = null
                    where id = ${again}`;
      const offered = await once();
      expect(offered.code, offered.stdout).toBe(0);
      expect(offered.stdout).not.toContain(`action ${again}`);
      expect((await runs()).filter((r) => r === 'again')).toHaveLength(1);
      expect((await action(again)).status).toBe('delivered');
    }, 300_000);

    it('a crash between start and result: the next run reports it failed, interrupted, and never runs it again', async () => {
      const pidFile = join(scratch, 'crash-pid');
      const crash = await script('crash', `echo $$ >"${pidFile}"\necho half way\nsleep 60\necho ${SECRET_OUTPUT}`);
      const child: ChildProcess = spawn('dash', [join(root, 'usr/local/sbin/fleet-agent'), 'once'], {
        env: { HOME: root, FLEET_ROOT: root, ...env() },
        detached: true,
        stdio: 'ignore',
      });
      await waitFor(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8').endsWith('\n'), 'the script to start');
      // A power loss: the agent and its script end at once, nothing of theirs runs after.
      const exited = new Promise((done) => child.on('exit', done));
      process.kill(-child.pid!, 'SIGKILL');
      process.kill(-Number(readFileSync(pidFile, 'utf8')), 'SIGKILL');
      await exited;
      expect((await action(crash)).status).toBe('running');
      expect(await recordOf(crash)).toEqual(['action.json', 'output', 'owner', 'ran', 'script', 'type']);
      // The script's text went from action.json before it ran.
      expect(await readFile(join(actionsDir, crash, 'action.json'), 'utf8')).not.toContain(SECRET_TEXT);

      const next = await once();
      expect(next.code, next.stdout + next.stderr).toBe(0);
      expect(next.stdout).toContain(`action ${crash} (script) was interrupted: the agent stopped before it finished`);
      expect(await action(crash)).toMatchObject({
        status: 'failed',
        result: { exit_code: 1, output: 'half way\n', details: { interrupted: true } },
      });
      expect(await recordOf(crash)).toEqual(['done', 'owner', 'ran', 'type']);
      const after = await once();
      expect(after.stdout).not.toContain(`action ${crash}`);
      expect((await runs()).filter((r) => r === 'crash')).toHaveLength(1);
    }, 300_000);

    it('a result whose answer was lost is kept, sent again at the next run, and taken once', async () => {
      const lost = await script('lost', 'echo delivered-once');
      let dropped = 0;
      service.dropAnswer = (method, path) =>
        method === 'POST' && path === `/api/v1/agent/actions/${lost}/result` && dropped++ === 0;
      const first = await once();
      service.dropAnswer = null;
      // The result reached the service; its answer did not: the agent keeps it and stops (exit 4).
      expect(first.code, first.stdout).toBe(4);
      expect(first.stdout).toMatch(new RegExp(`POST /agent/actions/${lost}/result: no answer from the service`));
      expect(await recordOf(lost)).toEqual(['action.json', 'output', 'owner', 'ran', 'result.json', 'type']);
      const taken = await action(lost);
      expect(taken).toMatchObject({ status: 'succeeded', result: { exit_code: 0, output: 'delivered-once\n' } });

      // Sent again before the check-in: 409 action_finished, nothing changed, the record done.
      const second = await once();
      expect(second.code, second.stdout).toBe(0);
      expect(second.stdout).toMatch(
        new RegExp(`action ${lost}: result not taken again, the service answers: action_finished: `),
      );
      expect(second.stdout.indexOf(`action ${lost}: result not taken again`)).toBeLessThan(
        second.stdout.indexOf('checked in'),
      );
      expect(await action(lost)).toEqual(taken);
      expect(await recordOf(lost)).toEqual(['done', 'owner', 'ran', 'type']);
      expect((await runs()).filter((r) => r === 'lost')).toHaveLength(1);
      expect(dropped).toBe(1);
    }, 300_000);

    it('a start whose answer was lost: the claimed action is started again (204: running) and runs once', async () => {
      const claimed = await script('claimed', 'echo ran-after-a-lost-start');
      service.dropAnswer = (method, path) => method === 'POST' && path === `/api/v1/agent/actions/${claimed}/start`;
      const first = await once();
      service.dropAnswer = null;
      expect(first.code, first.stdout).toBe(4);
      // The service took the start; the agent never saw its answer and ran nothing.
      expect((await action(claimed)).status).toBe('running');
      expect(await recordOf(claimed)).toEqual(['action.json', 'owner', 'type']);
      expect(await runs()).not.toContain('claimed');

      // Not in the next answer (it is running): started again from the record, run, reported.
      const second = await once();
      expect(second.code, second.stdout + second.stderr).toBe(0);
      expect(second.stdout).toContain(`action ${claimed} (script) started`);
      expect(await action(claimed)).toMatchObject({
        status: 'succeeded',
        result: { exit_code: 0, output: 'ran-after-a-lost-start\n' },
      });
      expect((await runs()).filter((r) => r === 'claimed')).toHaveLength(1);
      expect(await recordOf(claimed)).toEqual(['done', 'owner', 'ran', 'type']);
    }, 300_000);

    it('apply_now applies at once; an action canceled meanwhile is never started', async () => {
      const applies = await countLines(countFile);
      const now = await ask('apply_now');
      const canceled = await script('canceled', 'true');
      await rm(hold, { recursive: true, force: true });
      await mkdir(hold);
      const running = once({ HOLD_DIR: hold });
      await waitFor(() => existsSync(join(hold, 'started')), 'the apply to start');
      await ok(ctx, 'POST', `/api/v1/actions/${canceled}/cancel`);
      await writeFile(join(hold, 'go'), '');
      const run = await running;
      expect(run.code, run.stdout + run.stderr).toBe(0);
      expect(await countLines(countFile)).toBe(applies + 1);
      const applied = await action(now);
      expect(applied).toMatchObject({ status: 'succeeded', result: { exit_code: 0, details: {} } });
      expect(applied.result.output).toMatch(/^\d+ roles applied, 0 failed; \d+ to report\n$/);
      expect(run.stdout).toContain(`action ${canceled} (script) not run: action_not_pending: `);
      expect(await recordOf(canceled)).toEqual(['done', 'owner', 'type']);
      expect(await runs()).not.toContain('canceled');
      expect((await action(canceled)).status).toBe('canceled');
    }, 600_000);

    it('apply_updates: the security update applied, listed, and the new inventory sent at once', async () => {
      const before = await ok(ctx, 'GET', `/api/v1/devices/${deviceId}/inventory`);
      expect(before.pending.map((p: { name: string; security: boolean }) => [p.name, p.security])).toEqual([
        [OTHER_PKG.name, false],
        [SECURITY_PKG.name, true],
      ]);
      const updates = await ask('apply_updates');
      const run = await once();
      expect(run.code, run.stdout + run.stderr).toBe(0);
      const done = await action(updates);
      expect(done).toMatchObject({
        status: 'succeeded',
        parameters: { security_only: true },
        result: {
          exit_code: 0,
          details: {
            upgraded: [{ name: SECURITY_PKG.name, from: SECURITY_PKG.installed, to: SECURITY_PKG.candidate }],
            reboot_required: expect.any(Boolean),
          },
        },
      });
      expect(done.result.output).toContain(`Unpacking ${SECURITY_PKG.name} (${SECURITY_PKG.candidate})`);
      expect(await installedVersion(apt, SECURITY_PKG.name)).toBe(SECURITY_PKG.candidate);
      expect(await installedVersion(apt, OTHER_PKG.name)).toBe(OTHER_PKG.installed);
      // The inventory went before the result: the service already holds the new one.
      expect(run.stdout.indexOf('inventory sent')).toBeLessThan(
        run.stdout.indexOf(`action ${updates}: result accepted`),
      );
      const after = await ok(ctx, 'GET', `/api/v1/devices/${deviceId}/inventory`);
      expect(after.pending.map((p: { name: string }) => p.name)).toEqual([OTHER_PKG.name]);
      expect(after.security_pending_count).toBe(0);
      const packages = await ok(ctx, 'GET', `/api/v1/devices/${deviceId}/packages?q=${SECURITY_PKG.name}`);
      expect(packages.items.map((p: { version: string }) => p.version)).toEqual([SECURITY_PKG.candidate]);
      // And the next check-in carries its hash: the service does not ask for it again.
      const next = await once();
      expect(next.stdout).not.toContain('inventory sent');
    }, 300_000);

    it('a reboot whose wait was cut short (the agent stopped) is reported failed, interrupted, and not restarted', async () => {
      const reboot = await ask('reboot', { delay_seconds: 120 });
      const child: ChildProcess = spawn('dash', [join(root, 'usr/local/sbin/fleet-agent'), 'once'], {
        env: { HOME: root, FLEET_ROOT: root, ...env() },
        detached: true,
        stdio: 'ignore',
      });
      // The users were told before the wait.
      await waitFor(() => existsSync(walls), 'the message to logged-in users');
      const exited = new Promise((done) => child.on('exit', done));
      process.kill(-child.pid!, 'SIGKILL');
      await exited;
      expect(await readFile(walls, 'utf8')).toBe('This computer restarts in 120 seconds.\n');
      await rm(walls);
      expect((await action(reboot)).status).toBe('running');

      const next = await once();
      expect(next.code, next.stdout + next.stderr).toBe(0);
      expect(next.stdout).toContain(`action ${reboot} (reboot) was interrupted before the restart`);
      expect(await action(reboot)).toMatchObject({
        status: 'failed',
        result: { exit_code: 1, details: { interrupted: true } },
      });
      expect(existsSync(reboots)).toBe(false);
    }, 300_000);

    it('reboot: logged-in users told, the restart started, reported succeeded once after the boot', async () => {
      const reboot = await ask('reboot', { delay_seconds: 0, message: 'Neustart für Updates' });
      const bootBefore = readFileSync(bootIdFile, 'utf8');
      const run = await once();
      expect(run.code, run.stdout + run.stderr).toBe(0);
      expect(run.stdout).toContain(`action ${reboot} (reboot): restart started; reported once the device is back`);
      expect(await readFile(reboots, 'utf8')).toBe('reboot\n');
      expect(await readFile(walls, 'utf8')).toBe('Neustart für Updates\nThis computer restarts in 0 seconds.\n');
      expect((await action(reboot)).status).toBe('running');
      expect(readFileSync(bootIdFile, 'utf8')).not.toBe(bootBefore);

      // The next boot: reported with the boot's time, before the check-in.
      const back = await once();
      expect(back.code, back.stdout + back.stderr).toBe(0);
      const [uptime] = readFileSync('/proc/uptime', 'utf8').split(' ');
      const bootedAt = Date.now() - Number(uptime) * 1000;
      const done = await action(reboot);
      expect(done).toMatchObject({ status: 'succeeded', result: { exit_code: 0, output: '', details: {} } });
      expect(Math.abs(Date.parse(done.result.details.booted_at) - bootedAt)).toBeLessThan(3000);
      expect(back.stdout).toContain(
        `action ${reboot} (reboot): the device is back, booted at ${done.result.details.booted_at}`,
      );
      const later = await once();
      expect(later.stdout).not.toContain(`action ${reboot}`);
      expect(await readFile(reboots, 'utf8')).toBe('reboot\n');
    }, 300_000);
  },
);
