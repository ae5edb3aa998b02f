/**
 * The service survives its own faults (README.md, Running in production): real
 * `npm start` processes on one DATA_DIR, faults injected with signals as an operator, the
 * kernel or a terminal would.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { TEMPLATES } from '../support/activation.ts';
import { liveDescendants, running } from '../support/processes.ts';
import { runServiceToExit, type ServiceProcess, startService } from '../support/service_process.ts';

const dataDir = await mkdtemp(join(tmpdir(), 'fleet-e2e-faults-'));
// TRUST_PROXY: the limiter test gives each scenario its own client address.
const env = { DATABASE_URL: undefined, ADMIN_TOKEN: undefined, DATA_DIR: dataDir, TRUST_PROXY: 'true' };
let service: ServiceProcess | undefined;

afterAll(async () => {
  if (service && service.child.exitCode === null) await service.stop('SIGTERM');
  const leftover = postmasterPid();
  if (leftover !== null && alive(leftover)) process.kill(leftover, 'SIGKILL');
  await rm(dataDir, { recursive: true, force: true });
});

function postmasterPid(): number | null {
  try {
    return Number.parseInt(readFileSync(join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]!, 10);
  } catch {
    return null;
  }
}

/** Runs (a zombie, which still answers kill(pid, 0), does not). */
function alive(pid: number): boolean {
  return running(pid);
}

/** The postmaster and its backends (each backend runs in a session of its own). */
function postgresProcesses(postmaster: number): number[] {
  return [postmaster, ...liveDescendants(postmaster).map((p) => p.pid)];
}

async function timed(url: string, init: RequestInit = {}) {
  const started = performance.now();
  const response = await fetch(url, { ...init, signal: AbortSignal.timeout(30_000) });
  const body = await response.text();
  return { status: response.status, body, headers: response.headers, ms: performance.now() - started };
}

function adminHeaders() {
  return { authorization: `Bearer ${readFileSync(join(dataDir, 'admin-token'), 'utf8').trim()}` };
}

async function waitUntil(check: () => Promise<boolean>, ms: number): Promise<number> {
  const started = Date.now();
  for (;;) {
    if (await check().catch(() => false)) return Date.now() - started;
    if (Date.now() - started > ms) throw new Error(`not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function activate(address: string, body: unknown): Promise<number> {
  const res = await fetch(`${service!.base}/api/v1/activate`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-forwarded-for': address },
    body: JSON.stringify(body),
  });
  await res.arrayBuffer();
  return res.status;
}

function oneLineCause(output: string) {
  expect(output).not.toContain('undefined');
  expect(output).not.toMatch(/^\s+at /m);
}

describe('faults of a running service', () => {
  it('refuses a second start on the same DATA_DIR and a PORT in use, at once and in one line', async () => {
    service = await startService(env, [], 'node', { processGroup: true });
    expect((await stat(join(dataDir, 'isos'))).mode & 0o777).toBe(0o700);

    const second = await runServiceToExit(env);
    expect(second.code).toBe(1);
    console.info(`second start exited 1 after ${second.ms} ms; PORT in use below`);
    expect(second.output).toContain(`DATA_DIR ${dataDir} is in use by process ${service.child.pid}`);
    oneLineCause(second.output);

    const otherDir = await mkdtemp(join(tmpdir(), 'fleet-e2e-port-'));
    try {
      const port = new URL(service.base).port;
      const taken = await runServiceToExit({ ...env, DATA_DIR: otherDir, PORT: port });
      expect(taken.code).toBe(1);
      console.info(`PORT in use: exited 1 after ${taken.ms} ms`);
      expect(taken.output).toContain(`PORT ${port} is in use`);
      oneLineCause(taken.output);
      // Nothing started: no database was initialised.
      expect(await readdir(otherDir)).not.toContain('postgres');
    } finally {
      await rm(otherDir, { recursive: true, force: true });
    }
    expect((await timed(`${service.base}/api/v1/health`)).status).toBe(200);
  }, 120_000);

  it('answers at most 20 of 200 concurrent wrong codes with 403; a full session does not count', async () => {
    const burst = await Promise.all(
      Array.from({ length: 200 }, () =>
        activate('192.0.2.10', { code: '00000-00000-00000-00000', serial: `burst-${crypto.randomUUID()}` }),
      ),
    );
    const forbidden = burst.filter((s) => s === 403).length;
    expect(forbidden).toBeGreaterThan(0);
    expect(forbidden).toBeLessThanOrEqual(20);
    expect(burst.filter((s) => s !== 403 && s !== 429)).toEqual([]);

    // One site behind one NAT address: 30 installers, a 5-device session, then the classic code.
    const headers = { ...adminHeaders(), 'content-type': 'application/json' };
    const org = (await (
      await fetch(`${service!.base}/api/v1/organizations`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ name: 'NAT site' }),
      })
    ).json()) as { id: string };
    const session = (await (
      await fetch(`${service!.base}/api/v1/organizations/${org.id}/enrollment-sessions`, {
        method: 'POST',
        headers,
        body: JSON.stringify({
          template_id: TEMPLATES.debianStandard,
          max_devices: 5,
          expires_at: new Date(Date.now() + 3600_000).toISOString(),
        }),
      })
    ).json()) as { id: string };
    const { code } = (await (
      await fetch(`${service!.base}/api/v1/organizations/${org.id}/activation-code`, { headers })
    ).json()) as { code: string };
    const site: number[] = [];
    for (let i = 0; i < 30; i++) site.push(await activate('192.0.2.20', { code: session.id, serial: `nat-${i}` }));
    expect(site.filter((s) => s === 200)).toHaveLength(5);
    expect(site.filter((s) => s === 403)).toHaveLength(25);
    expect(await activate('192.0.2.20', { code, serial: 'nat-classic' })).toBe(200);
  }, 60_000);

  it('answers 503 while PostgreSQL is stopped (SIGSTOP): health within 2 s, other calls within 10 s', async () => {
    const stalled = postgresProcesses(postmasterPid()!);
    for (const pid of stalled) process.kill(pid, 'SIGSTOP');
    try {
      const [health, list] = await Promise.all([
        timed(`${service!.base}/api/v1/health`),
        timed(`${service!.base}/api/v1/organizations`, { headers: adminHeaders() }),
      ]);
      expect(health.status).toBe(503);
      expect(health.ms).toBeLessThan(2000);
      expect(list.status).toBe(503);
      expect(JSON.parse(list.body).error).toBe('service_unavailable');
      expect(list.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(list.ms).toBeLessThan(10_000);
      console.info(
        `SIGSTOP: health 503 in ${Math.round(health.ms)} ms, organization list 503 in ${Math.round(list.ms)} ms`,
      );
    } finally {
      for (const pid of stalled) process.kill(pid, 'SIGCONT');
    }
    await waitUntil(async () => (await timed(`${service!.base}/api/v1/health`)).status === 200, 15_000);
  }, 60_000);

  it('restarts PostgreSQL killed with SIGKILL: 503 meanwhile, healthy within 30 s', async () => {
    const before = postmasterPid()!;
    process.kill(before, 'SIGKILL');
    const statuses: number[] = [];
    const back = await waitUntil(async () => {
      const [health, list] = await Promise.all([
        timed(`${service!.base}/api/v1/health`),
        timed(`${service!.base}/api/v1/organizations`, { headers: adminHeaders() }),
      ]);
      statuses.push(health.status, list.status);
      // Backends outlive a killed postmaster for a moment and may still answer 200: healthy
      // means a new postmaster serving.
      const restarted = ![before, null].includes(postmasterPid());
      return restarted && health.status === 200 && list.status === 200;
    }, 30_000);
    expect(back).toBeLessThan(30_000);
    console.info(
      `SIGKILL of the postmaster: healthy again after ${back} ms, answers meanwhile ${[...new Set(statuses)].join(
        '/',
      )}`,
    );
    expect(statuses.every((s) => s === 200 || s === 503)).toBe(true);
    expect(postmasterPid()).not.toBe(before);
    expect(service!.output()).toContain('the embedded PostgreSQL exited; restarting it');
  }, 60_000);

  it('starts again on the same DATA_DIR after kill -9, stopping the PostgreSQL it left behind', async () => {
    const leftover = postmasterPid()!;
    service!.child.kill('SIGKILL');
    await service!.exited;
    expect(alive(leftover)).toBe(true);

    const restarted = Date.now();
    service = await startService(env, [], 'node', { processGroup: true });
    expect((await timed(`${service.base}/api/v1/health`)).status).toBe(200);
    console.info(`kill -9: the next start was healthy ${Date.now() - restarted} ms after it began`);
    expect(alive(leftover)).toBe(false);
    expect(service.output()).toContain('left behind');
  }, 120_000);

  it('stops in order on SIGINT to the process group under light load: exit 0, no 5xx, PostgreSQL gone', async () => {
    const postmaster = postmasterPid()!;
    const statuses: number[] = [];
    const errorsBeforeStop: unknown[] = [];
    let stopping = false;
    let gone = false;
    void service!.exited.then(() => (gone = true));
    // Each client keeps calling until the service is gone; after the signal a refused
    // connection is the expected answer, before it none is.
    const client = async () => {
      while (!gone) {
        try {
          statuses.push((await timed(`${service!.base}/api/v1/organizations`, { headers: adminHeaders() })).status);
        } catch (err) {
          if (!stopping) errorsBeforeStop.push(err);
          await new Promise((r) => setTimeout(r, 20));
        }
      }
    };
    const clients = Array.from({ length: 4 }, () => client());
    // The signal comes while the clients are busy: once they have had answers.
    await expect.poll(() => statuses.length, { timeout: 30_000, interval: 50 }).toBeGreaterThanOrEqual(20);
    const started = Date.now();
    stopping = true;
    process.kill(-service!.child.pid!, 'SIGINT');
    const code = await service!.exited;
    const stopMs = Date.now() - started;
    await Promise.all(clients);

    expect(code).toBe(0);
    expect(statuses.length).toBeGreaterThan(0);
    expect(errorsBeforeStop).toEqual([]);
    expect(statuses.filter((s) => s >= 500)).toEqual([]);
    expect(alive(postmaster)).toBe(false);
    const steps = [
      'stop: requests drained',
      'stop: worker stopped',
      'stop: database connections closed',
      'stop: embedded PostgreSQL stopped',
    ];
    const output = service!.output();
    const at = steps.map((step) => output.indexOf(step));
    expect(at.every((i) => i >= 0)).toBe(true);
    expect([...at].sort((a, b) => a - b)).toEqual(at);
    console.info(`stop under load: ${stopMs} ms, ${statuses.length} answers`);
  }, 120_000);
});
