/**
 * The device agent's lifecycle against the service (CONTRACT §18): a device activated through
 * the API, the agent installed into a temporary root as `install.sh late` installs it (the
 * image itself is device_agent.test.ts), one real apply, and then what a device meets that
 * needs no further apply: a busy service (503 with Retry-After) under `run`, a stop by
 * systemd, deprovisioning and reprovisioning, and a bootstrap token that was used already.
 * Real dash, curl, git and ansible-playbook, on a loopback port over this file's database.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { mkdir, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activateDevice, resolveDevice } from '../support/activation.ts';
import { useTestApp } from '../support/app.ts';
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

const scratch = mkdtempSync(join(tmpdir(), 'fleet-agent-lifecycle-'));
const repo = join(scratch, 'roles-repo');
const root = join(scratch, 'root');
const markers = join(scratch, 'markers');
const playbook = join(scratch, 'counting-playbook');
const countFile = join(scratch, 'playbook-runs');
const ctx = useTestApp({ roleRepositoryUrl: `file://${repo}`, agentPollIntervalSeconds: 60 });
const service = new AgentService(ctx);
const logs: string[] = [];
let deviceId = '';
/** agent.json as the installer left it (with the bootstrap token). */
let agentJson = '';

const env = (): Record<string, string> => ({
  FLEET_ANSIBLE_PLAYBOOK: playbook,
  FLEET_RETRIES: '1',
  FLEET_RETRY_DELAY: '1',
  FIXTURE_MARKERS: markers,
  FIXTURE_FAIL: '',
  COUNT_FILE: countFile,
  HOLD_DIR: '',
});
const once = (at = root) => agentOnce(at, env(), logs);

afterAll(async () => {
  await service.stop();
  await rm(scratch, { recursive: true, force: true });
});

describe.skipIf(missingTools('ansible-playbook', 'git', 'dash'))("the device agent's lifecycle", () => {
  beforeAll(async () => {
    await makeRoleRepository(repo);
    await mkdir(markers);
    await writeCountingPlaybook(playbook);
    await service.start();
    const org = await createOrganization(ctx);
    const activated = await activateDevice(ctx, org.id);
    const blueprint = await resolveDevice(ctx, activated);
    deviceId = activated.device_id;
    agentJson = await installAgent(root, {
      base_url: service.url,
      device_id: deviceId,
      bootstrap_token: blueprint.agent.bootstrap_token,
    });
  }, 60_000);

  it('the first once bootstraps and applies; the next is a 304', async () => {
    const first = await once();
    expect(first.code, first.stdout + first.stderr).toBe(0);
    expect(first.stdout).toContain('bootstrapped');
    expect((await readdir(markers)).sort()).toEqual(['base', 'desktop', 'firefox', 'provisioning_agent']);
    // The first answer asked for the inventory: once it is sent, the next answer is a 200
    // without that ask (nothing to apply), and the one after it a 304.
    expect(first.stdout).toContain('inventory sent');
    const second = await once();
    expect(second.code, second.stdout).toBe(0);
    expect(second.stdout).toContain('as last applied, nothing to apply');
    const third = await once();
    expect(third.code, third.stdout).toBe(0);
    expect(third.stdout).toContain('(304)');
    expect(await countLines(countFile)).toBe(1);
  }, 900_000);

  it('run: a 503 with Retry-After 2 is waited out (plus jitter), then the check-in succeeds; a stop by systemd is a success', async () => {
    service.busy = 1;
    const child = spawn('dash', [join(root, 'usr/local/sbin/fleet-agent'), 'run'], {
      env: { PATH: process.env.PATH!, HOME: root, FLEET_ROOT: root, ...env() },
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
      expect(service.busy).toBe(0);
      // systemd's stop: SIGTERM to every process of the unit. The agent's exit status then is
      // one the unit counts as success, so a stop leaves it inactive, not failed.
      const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
      process.kill(-child.pid!, 'SIGTERM');
      const code = await exited;
      const unit = await readFile(
        new URL('../../jobs/iso/installer/agent/fleet-agent.service', import.meta.url),
        'utf8',
      );
      const success = unit.match(/^SuccessExitStatus=(.*)$/m)?.[1]?.split(/\s+/) ?? [];
      expect([0, ...success.map(Number)]).toContain(code);
    } finally {
      if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGKILL');
    }
  }, 600_000);

  it('deprovisioned: exit 3 with the service message, no role runs; reprovisioned: the old secret gets 401, exit 3', async () => {
    const runs = await countLines(countFile);
    await ok(ctx, 'POST', `/api/v1/devices/${deviceId}/deprovision`);
    const deprovisioned = await once();
    expect(deprovisioned.code, deprovisioned.stdout).toBe(3);
    expect(deprovisioned.stdout).toMatch(/device_deprovisioned: .+/);
    expect(await countLines(countFile)).toBe(runs);

    await ok(ctx, 'POST', `/api/v1/devices/${deviceId}/reprovision`);
    const reprovisioned = await once();
    expect(reprovisioned.code, reprovisioned.stdout).toBe(3);
    expect(reprovisioned.stdout).toContain('(HTTP 401)');
    expect(reprovisioned.stdout).toContain('invalid_agent_secret');
    expect(await countLines(countFile)).toBe(runs);
  }, 600_000);

  it('a refused bootstrap (used token) exits 3 and writes nothing; no agent.json exits 2', async () => {
    const other = join(scratch, 'root-refused');
    await installAgent(other, JSON.parse(agentJson));
    const refused = await once(other);
    expect(refused.code, refused.stdout).toBe(3);
    expect(refused.stdout).toContain('invalid_bootstrap_token');
    expect(await readFile(join(other, 'etc/fleet/agent.json'), 'utf8')).toBe(agentJson);
    expect((await readdir(other)).sort()).toEqual(['etc', 'usr']);
    expect(await readdir(join(other, 'etc/fleet'))).toEqual(['agent.json']);

    await rm(join(other, 'etc/fleet/agent.json'));
    const unconfigured = await once(other);
    expect(unconfigured.code, unconfigured.stdout).toBe(2);
  }, 600_000);

  it('never logs the secret or the bootstrap token', async () => {
    const secret = (await readFile(join(root, 'var/lib/fleet/agent-secret'), 'utf8')).trim();
    const token = JSON.parse(agentJson).bootstrap_token as string;
    expect(secret.length).toBeGreaterThan(20);
    const all = logs.join('\n');
    expect(all).toContain('fleet-agent: ');
    for (const value of [secret, token]) expect(all).not.toContain(value);
  }, 60_000);
});
