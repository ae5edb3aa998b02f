/**
 * The fix of postgres.js's connection queue (api/db/postgres_queue_fix.ts): `npm install`
 * applied it to every copy the runtimes load, it leaves an unknown version alone, and the
 * fixed queue behaves exactly as the original under any sequence of operations (only its
 * cost differs: test/bench/pool_queue.ts). The version is pinned, and the start-up check
 * tells a fixed copy from one installed with `--ignore-scripts`.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import {
  checkPostgresQueue,
  FIXED_BODY,
  fixPostgresQueues,
  MARKER,
  ORIGINAL_BODY,
} from '../../api/db/postgres_queue_fix.ts';
import { createLogger } from '../../api/log.ts';
import { processMetrics } from '../../api/metrics/metrics.ts';
import { useTestApp } from '../support/app.ts';

interface Queue {
  readonly length: number;
  push(x: unknown): unknown;
  shift(): unknown;
  remove(x: unknown): unknown;
}

function load(body: string): (initial?: unknown[]) => Queue {
  return new Function(`${body}\nreturn Queue`)() as (initial?: unknown[]) => Queue;
}

// The package's own folder, found from its CommonJS entry (its exports map hides package.json).
const packageDir = join(dirname(createRequire(import.meta.url).resolve('postgres')), '..', '..');

describe("postgres.js's connection queue", () => {
  it('is fixed in every copy that Node, CommonJS and Deno load', async () => {
    for (const path of ['src/queue.js', 'cjs/src/queue.js', 'cf/src/queue.js']) {
      expect(await readFile(join(packageDir, path), 'utf8'), path).toContain(MARKER);
    }
  });

  it('is fixed once, and a queue.js of an unknown version is left alone', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'fleet-pg-queue-'));
    try {
      for (const sub of ['src', 'cjs/src', 'cf/src']) await mkdir(join(dir, sub), { recursive: true });
      await writeFile(join(dir, 'src/queue.js'), `export default Queue${ORIGINAL_BODY}`);
      await writeFile(join(dir, 'cjs/src/queue.js'), `module.exports = Queue${ORIGINAL_BODY}`);
      await writeFile(join(dir, 'cf/src/queue.js'), 'export default class Queue {}\n');
      expect(fixPostgresQueues(dir).map((r) => r.outcome)).toEqual(['fixed', 'fixed', 'unknown version, left alone']);
      expect(await readFile(join(dir, 'cjs/src/queue.js'), 'utf8')).toBe(`module.exports = Queue${FIXED_BODY}`);
      expect(fixPostgresQueues(dir).map((r) => r.outcome)).toEqual([
        'already fixed',
        'already fixed',
        'unknown version, left alone',
      ]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('answers every operation as the original does, over random sequences', () => {
    const Original = load(ORIGINAL_BODY);
    const Fixed = load(FIXED_BODY);
    let seed = 42;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (let run = 0; run < 50; run++) {
      const items = Array.from({ length: 8 }, (_, i) => ({ i }));
      const a = Original(items.slice(0, 3));
      const b = Fixed(items.slice(0, 3));
      for (let step = 0; step < 2000; step++) {
        const op = random();
        const item = items[Math.floor(random() * items.length)];
        if (op < 0.4) expect(b.push(item)).toBe(a.push(item));
        else if (op < 0.7) expect(b.shift()).toBe(a.shift());
        else expect(b.remove(item)).toBe(a.remove(item));
        expect(b.length).toBe(a.length);
      }
    }
  });
});

const root = new URL('../../', import.meta.url);
const manifest = JSON.parse(readFileSync(new URL('package.json', root), 'utf8'));
const locked = JSON.parse(readFileSync(new URL('package-lock.json', root), 'utf8')).packages['node_modules/postgres'];

/** A logger that keeps its lines, and the warnings among them. */
function capturedLog() {
  const lines: Array<{ level: string; msg: string }> = [];
  const log = createLogger('info', (line) => lines.push(JSON.parse(line)));
  return { log, warnings: () => lines.filter((line) => line.level === 'warn') };
}

describe('the pin and the start-up check', () => {
  const ctx = useTestApp();

  it('postgres is pinned to exactly the installed version, which the lock holds', async () => {
    const installed = JSON.parse(await readFile(join(packageDir, 'package.json'), 'utf8')).version;
    expect(manifest.dependencies.postgres).toBe(installed);
    expect(locked.version).toBe(installed);
  });

  it('finds the installed copy fixed: fleet_db_queue_patched 1 in /metrics, and no warning', async () => {
    const { log, warnings } = capturedLog();
    expect(checkPostgresQueue(log, processMetrics())).toBe(true);
    expect(warnings()).toEqual([]);
    const res = await ctx.request('GET', '/metrics');
    expect(res.status).toBe(200);
    expect(res.body as string).toMatch(/^fleet_db_queue_patched 1$/m);
  });

  it('finds a copy installed with --ignore-scripts not fixed: the gauge at 0 and one warning', async ({ skip }) => {
    const dir = await mkdtemp(join(tmpdir(), 'fleet-pg-ignore-scripts-'));
    try {
      // The pinned version as the lock has it: npm's cache holds its tarball (npm ci put it
      // there), not the registry's metadata that installing it by name would need.
      const dependencies = { postgres: manifest.dependencies.postgres };
      await writeFile(join(dir, 'package.json'), JSON.stringify({ name: 'queue-check', private: true, dependencies }));
      const packages = { '': { name: 'queue-check', dependencies }, 'node_modules/postgres': locked };
      await writeFile(join(dir, 'package-lock.json'), JSON.stringify({ lockfileVersion: 3, requires: true, packages }));
      const flags = ['--ignore-scripts', '--offline', '--no-audit', '--no-fund', '--prefix', dir];
      try {
        await promisify(execFile)('npm', ['ci', ...flags], { cwd: dir });
      } catch (err) {
        const code = /npm error code (\S+)/.exec(String((err as { stderr?: unknown }).stderr))?.[1] ?? 'npm ci failed';
        const line = `skipped: npm's cache lacks postgres ${locked.version} (${code}); \`npm ci\` puts it there`;
        if (process.env.CI === 'true') throw new Error(line);
        console.warn(line);
        skip(line);
      }
      const copy = join(dir, 'node_modules', 'postgres');
      expect(await readFile(join(copy, 'src/queue.js'), 'utf8')).toBe(`export default Queue${ORIGINAL_BODY}`);
      const { log, warnings } = capturedLog();
      const registry = new Registry();
      expect(checkPostgresQueue(log, registry, copy)).toBe(false);
      expect(await registry.metrics()).toMatch(/^fleet_db_queue_patched 0$/m);
      expect(warnings()).toHaveLength(1);
      expect(warnings()[0]?.msg).toContain('node --import tsx api/db/postgres_queue_fix.ts');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
