/**
 * The skip rule itself (tools.ts, tools_setup.ts): a vitest run of a small fixture, started
 * with a PATH that lacks or holds the tool: skipped and named at the end, run when present,
 * and a failed run under CI=true.
 */
import { spawn } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const vitest = join(root, 'node_modules', 'vitest', 'vitest.mjs');
let withoutTools: string;
let withXorriso: string;

beforeAll(async () => {
  withoutTools = await mkdtemp(join(tmpdir(), 'fleet-path-empty-'));
  withXorriso = await mkdtemp(join(tmpdir(), 'fleet-path-xorriso-'));
  // Only its presence on PATH is looked at: an executable file of that name will do.
  await writeFile(join(withXorriso, 'xorriso'), '#!/bin/sh\nexit 0\n');
  await chmod(join(withXorriso, 'xorriso'), 0o755);
});

afterAll(async () => {
  await rm(withoutTools, { recursive: true, force: true });
  await rm(withXorriso, { recursive: true, force: true });
});

/** `vitest run` of the fixture with the given PATH (node is started by its full path). */
function runFixture(path: string, ci: boolean): Promise<{ code: number | null; output: string }> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && k !== 'CI') env[k] = v;
  env.PATH = path;
  env.NO_COLOR = '1';
  if (ci) env.CI = 'true';
  const child = spawn(
    process.execPath,
    [vitest, 'run', '--config', 'test/fixtures/tools/vitest.config.ts', '--reporter', 'verbose'],
    { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, output })));
}

describe('the skip rule for tests that need a tool', () => {
  it('skips the test whose tool is not on PATH, runs the rest, and names the tool and its package', async () => {
    const run = await runFixture(withoutTools, false);
    expect(run.code, run.output).toBe(0);
    expect(run.output).toMatch(/↓ .*needs xorriso/);
    expect(run.output).toMatch(/✓ .*needs nothing/);
    expect(run.output).toContain('skipped: tests that need xorriso (apt-get install xorriso)');
  }, 60_000);

  it('runs the test when the tool is on PATH, and names nothing', async () => {
    const run = await runFixture(withXorriso, false);
    expect(run.code, run.output).toBe(0);
    expect(run.output).toMatch(/✓ .*needs xorriso/);
    expect(run.output).not.toContain('skipped: tests that need');
  }, 60_000);

  it('fails the run under CI=true when the tool is missing, naming it', async () => {
    const run = await runFixture(withoutTools, true);
    expect(run.code, run.output).not.toBe(0);
    expect(run.output).toContain('CI=true and a required tool is missing: xorriso (apt-get install xorriso)');
    expect(run.output).not.toMatch(/✓ .*needs xorriso/);
  }, 60_000);
});
