/**
 * The fix of postgres.js's connection queue (api/db/postgres_queue_fix.ts): `npm install`
 * applied it to every copy the runtimes load, it leaves an unknown version alone, and the
 * fixed queue behaves exactly as the original under any sequence of operations (only its
 * cost differs: test/bench/pool_queue.ts).
 */
import { mkdtemp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FIXED_BODY, fixPostgresQueues, MARKER, ORIGINAL_BODY } from '../../api/db/postgres_queue_fix.ts';

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
