/**
 * Restart right after a crash (README.md, Running in production), as a supervisor with
 * `Restart=always` does it: `npm start` killed with its whole process group by SIGKILL and
 * started again at once on the same DATA_DIR and PORT; while one runs, a second exits 1.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../api/runtime/embedded_postgres.ts';
import { liveInGroup, running } from '../support/processes.ts';
import { runServiceToExit, type ServiceProcess, startService } from '../support/service_process.ts';

const dataDir = await mkdtemp(join(tmpdir(), 'fleet-e2e-restart-'));
const services: ServiceProcess[] = [];

afterAll(async () => {
  for (const service of services) if (service.child.exitCode === null) await service.stop('SIGTERM');
  await rm(dataDir, { recursive: true, force: true });
});

async function healthy(base: string): Promise<boolean> {
  try {
    return (await fetch(`${base}/api/v1/health`, { signal: AbortSignal.timeout(5000) })).status === 200;
  } catch {
    return false;
  }
}

describe('npm start after kill -9 of its process group', () => {
  it('starts again at once on the same DATA_DIR and PORT, and refuses a second start meanwhile', async () => {
    const env = { DATABASE_URL: undefined, ADMIN_TOKEN: undefined, DATA_DIR: dataDir, PORT: String(await freePort()) };
    const first = await startService(env, [], 'node', { processGroup: true, viaNpm: true });
    services.push(first);
    expect(await healthy(first.base)).toBe(true);

    // Another PORT, so that the DATA_DIR is what refuses it.
    const second = await runServiceToExit({ ...env, PORT: String(await freePort()) }, 60_000, { viaNpm: true });
    expect(second.code, second.output).toBe(1);
    expect(second.output).toMatch(new RegExp(`DATA_DIR ${dataDir} is in use by process \\d+`));
    expect(await healthy(first.base)).toBe(true);

    process.kill(-first.child.pid!, 'SIGKILL');
    const killedAt = performance.now();
    const restarting = startService(env, [], 'node', { processGroup: true, viaNpm: true });
    const startedWithinMs = performance.now() - killedAt;
    const again = await restarting;
    services.push(again);
    await expect.poll(() => healthy(again.base), { timeout: 30_000, interval: 200 }).toBe(true);
    const healthyAfterMs = performance.now() - killedAt;
    console.info(
      `npm start ${startedWithinMs.toFixed(1)} ms after kill -9 of the group: healthy ${Math.round(healthyAfterMs)} ms after the kill`,
    );
    expect(startedWithinMs).toBeLessThan(100);
    expect(healthyAfterMs).toBeLessThan(30_000);
    expect(again.output()).toContain('left behind');
    expect(liveInGroup(first.child.pid!)).toEqual([]);

    expect(await again.stop('SIGTERM')).toBe(0);
    expect(running(again.child.pid!)).toBe(false);
  }, 180_000);
});
