/**
 * A supervisor stops what it started (README.md, Running in production): `docker stop`, systemd
 * and others signal the process they started, which is `npm` for `npm run api` and
 * `npm run worker`. The signal must reach node and run the ordered stop, leaving no
 * process behind. Real `npm` processes over the test file's database.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../api/runtime/embedded_postgres.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { liveDescendants, liveInGroup, running } from '../support/processes.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
let db: TestDatabase;
let dataDir: string;
const started: ChildProcess[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  dataDir = await mkdtemp(join(tmpdir(), 'fleet-npm-signals-'));
});

afterAll(async () => {
  // A failed test must not leave a service running: the whole group goes.
  for (const child of started) {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // gone
    }
  }
  await db?.drop();
  await rm(dataDir, { recursive: true, force: true });
});

/** This process's environment for a service under test, with the test file's data folder. */
function childEnv(overrides: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
  return Object.assign(env, { DATA_DIR: dataDir, LOG_LEVEL: 'info' }, overrides);
}

/** `npm run <script>` as a supervisor starts it: a process group of its own, npm at its head. */
async function npmRun(script: string, ready: string) {
  const env = childEnv({ DATABASE_URL: db.url, PORT: String(await freePort()) });
  const child = spawn('npm', ['run', '--silent', script], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  started.push(child);
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  await expect
    .poll(() => (child.exitCode === null ? output.includes(ready) : `exited early:\n${output}`), {
      timeout: 60_000,
      interval: 100,
    })
    .toBe(true);
  return { child, exited, output: () => output };
}

function expectInOrder(output: string, lines: string[]) {
  const at = lines.map((line) => output.indexOf(line));
  expect(at, output).not.toContain(-1);
  expect([...at].sort((a, b) => a - b)).toEqual(at);
}

describe.each([
  {
    script: 'api',
    ready: 'service ready',
    steps: ['stop: shutting down', 'stop: requests drained', 'stop: database connections closed', 'stop: done'],
  },
  { script: 'worker', ready: 'worker started', steps: ['stop: shutting down', 'stop: worker stopped', 'stop: done'] },
])('npm run $script', ({ script, ready, steps }) => {
  it.each(['SIGTERM', 'SIGINT'] as const)(
    '%s to the npm process alone runs the ordered stop and leaves no process',
    async (signal) => {
      const npm = await npmRun(script, ready);
      const node = liveDescendants(npm.child.pid!).find((p) => p.command.includes('node'));
      expect(node, 'the node process under npm').toBeDefined();

      process.kill(npm.child.pid!, signal); // npm only, not its group
      expect(await npm.exited).toBe(0);
      expectInOrder(npm.output(), steps);
      expect(npm.output()).toContain(`"signal":"${signal}"`);
      // Nothing of the group runs on, adopted by pid 1: npm, a shell, node.
      await expect.poll(() => liveInGroup(npm.child.pid!), { timeout: 10_000 }).toEqual([]);
      expect(running(node!.pid)).toBe(false);
    },
    90_000,
  );
});

describe('taking over the stop signals', () => {
  it('a signal caught just before the take-over runs the ordered stop: it is neither lost nor fatal', () => {
    // embedded-postgres's exit hook listens first, as on every start; the signal is caught
    // by Node's handle for it but not yet delivered when the service takes the signals over.
    const script = `
      import { createLogger } from './api/log.ts';
      import { takeOverStopSignals } from './api/runtime/service.ts';
      process.on('SIGTERM', () => console.log('the earlier listener ran'));
      process.kill(process.pid, 'SIGTERM');
      takeOverStopSignals(createLogger('info'), [{ name: 'step ran', run: async () => {} }]);
      setTimeout(() => { console.log('the signal was lost'); process.exit(3); }, 5000);
    `;
    const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: root,
      encoding: 'utf8',
      timeout: 30_000,
    });
    const output = run.stdout + run.stderr;
    expect({ status: run.status, signal: run.signal }, output).toEqual({ status: 0, signal: null });
    expectInOrder(output, ['"signal":"SIGTERM"', 'stop: step ran', 'stop: done']);
    expect(output).not.toContain('the earlier listener ran');
  });
});

describe('a signal during start-up', () => {
  it('the worker of `npm run worker`, still connecting to its database, runs the ordered stop and exits 0', async () => {
    // A database that accepts connections and never answers: the worker's start-up waits on
    // it, and the first connection shows that start-up has reached the database.
    const held: Socket[] = [];
    const silent = createServer((socket) => held.push(socket));
    await new Promise<void>((done) => silent.listen(0, '127.0.0.1', done));
    const port = (silent.address() as { port: number }).port;
    const env = childEnv({
      DATABASE_URL: `postgres://fleet:unused@127.0.0.1:${port}/fleet`,
      DATABASE_TIMEOUT_SECONDS: '60',
    });
    const child = spawn(process.execPath, ['--import', 'tsx', 'api/main_worker.ts'], { cwd: root, env });
    started.push(child);
    let output = '';
    child.stdout!.on('data', (chunk) => (output += chunk));
    child.stderr!.on('data', (chunk) => (output += chunk));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      await expect.poll(() => held.length, { timeout: 30_000, interval: 20 }).toBeGreaterThan(0);
      child.kill('SIGTERM');
      expect(await exited, output).toBe(0);
      expectInOrder(output, ['"signal":"SIGTERM"', 'stop: worker stopped', 'stop: done']);
      expect(output).not.toContain('worker started');
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      for (const socket of held) socket.destroy();
      silent.close();
    }
  }, 60_000);
});
