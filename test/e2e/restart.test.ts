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

const isReady = (entry: { msg?: unknown }) => entry.msg === 'service ready';

/** The `time` (ms since the epoch) of the first JSON log line that `pick` takes. */
function logTime(output: string, pick: (entry: { msg?: unknown }) => boolean): number {
  for (const line of output.split('\n')) {
    let entry: { time?: string; msg?: unknown };
    try {
      entry = JSON.parse(line);
    } catch {
      continue; // the banner, npm's lines
    }
    if (typeof entry?.time === 'string' && pick(entry)) return Date.parse(entry.time);
  }
  throw new Error(`no such log line in:\n${output}`);
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
    const killedAt = Date.now();
    const again = await startService(env, [], 'node', { processGroup: true, viaNpm: true });
    services.push(again);
    await expect.poll(() => healthy(again.base), { timeout: 30_000, interval: 200 }).toBe(true);
    const healthyAfterMs = Date.now() - killedAt;
    // The service's own start, by the clock of its log: "service ready" within the budget of the kill.
    const [firstLine, readyLine] = [logTime(again.output(), () => true), logTime(again.output(), isReady)];
    const ownStartMs = readyLine - firstLine;
    console.info(
      `restart after kill -9 of the group: the service's own start ${ownStartMs} ms (first log line ${firstLine - killedAt} ms after the kill), healthy ${healthyAfterMs} ms after the kill`,
    );
    expect(readyLine - killedAt).toBeLessThan(30_000);
    expect(healthyAfterMs).toBeLessThan(30_000);
    expect(again.output()).toContain('left behind');
    expect(liveInGroup(first.child.pid!)).toEqual([]);

    expect(await again.stop('SIGTERM')).toBe(0);
    expect(running(again.child.pid!)).toBe(false);
  }, 180_000);
});
