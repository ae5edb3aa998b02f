/**
 * A fix for postgres.js's connection queues (postgres 3.4.9, `src/queue.js`), applied by
 * `npm install` (the `postinstall` script runs this file) to the ESM, CommonJS and
 * Cloudflare copies in node_modules. Node and Deno (`nodeModulesDir: manual`) load those.
 * Upstream: porsager/postgres#747 ("speed dropped"), open; this file goes when a release
 * fixes it.
 *
 * Why: the pool keeps its connections in queues (open, busy, full, ...). `shift()` leaves
 * a hole and moves an index; the array is emptied only when a shift takes its last element.
 * Under sustained load the busy queue is shifted and pushed round-robin and never drained by
 * a shift, so it grows by one slot per query pipelined onto a busy connection, and every
 * move of a connection (`remove`, an `indexOf` from slot 0) scans all of it: a busy API
 * process slows down for as long as it stays busy (test/bench/pool_queue.ts shows it).
 *
 * The fixed queue searches from the index, empties the array when nothing is left in it,
 * and compacts it once the holes outnumber the elements. Behaviour is otherwise the same
 * (test/build/postgres_queue.test.ts). A queue.js that is neither the known original nor this
 * fix is left alone with a warning: a newer postgres.js may have changed it. An install
 * that skipped the script (`npm ci --ignore-scripts`) is found at start-up
 * (`checkPostgresQueue`): one warning, and the gauge `fleet_db_queue_patched` at 0.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Gauge, type Registry } from 'prom-client';
import type { Logger } from '../log.ts';

export const MARKER = '// fleet: queue fixed (api/db/postgres_queue_fix.ts)';

/** The module after its first line, as postgres 3.4.9 (the version package.json pins) ships it. */
export const ORIGINAL_BODY = `

function Queue(initial = []) {
  let xs = initial.slice()
  let index = 0

  return {
    get length() {
      return xs.length - index
    },
    remove: (x) => {
      const index = xs.indexOf(x)
      return index === -1
        ? null
        : (xs.splice(index, 1), x)
    },
    push: (x) => (xs.push(x), x),
    shift: () => {
      const out = xs[index++]

      if (index === xs.length) {
        index = 0
        xs = []
      } else {
        xs[index - 1] = undefined
      }

      return out
    }
  }
}
`;

export const FIXED_BODY = `
${MARKER}

function Queue(initial = []) {
  let xs = initial.slice()
  let index = 0

  function compact() {
    if (index === xs.length) {
      index = 0
      xs = []
    } else if (index > 64 && index * 2 > xs.length) {
      xs = xs.slice(index)
      index = 0
    }
  }

  return {
    get length() {
      return xs.length - index
    },
    remove: (x) => {
      const at = xs.indexOf(x, index)
      if (at === -1)
        return null
      xs.splice(at, 1)
      compact()
      return x
    },
    push: (x) => (xs.push(x), x),
    shift: () => {
      const out = xs[index]
      xs[index++] = undefined
      compact()
      return out
    }
  }
}
`;

const COPIES = [
  { path: 'src/queue.js', head: 'export default Queue' },
  { path: 'cjs/src/queue.js', head: 'module.exports = Queue' },
  { path: 'cf/src/queue.js', head: 'export default Queue' },
];

export type PatchOutcome = 'fixed' | 'already fixed' | 'unknown version, left alone';

/** Fixes each copy of queue.js under the postgres package folder. */
export function fixPostgresQueues(packageDir: string): Array<{ path: string; outcome: PatchOutcome }> {
  return COPIES.map(({ path, head }) => {
    const file = join(packageDir, path);
    const text = readFileSync(file, 'utf8');
    if (text.includes(MARKER)) return { path, outcome: 'already fixed' };
    if (text !== head + ORIGINAL_BODY) return { path, outcome: 'unknown version, left alone' };
    writeFileSync(file, head + FIXED_BODY);
    return { path, outcome: 'fixed' };
  });
}

/** The folder of the postgres package this process loads (its exports map hides package.json). */
function loadedPostgresDir(): string {
  return join(dirname(createRequire(import.meta.url).resolve('postgres')), '..', '..');
}

/**
 * At start-up: whether the postgres.js under `packageDir` (default: the one this process
 * loads) has the fixed queue in `src/queue.js`, the copy an `import` loads in Node and Deno.
 * If not, one warning saying how to fix it. Either way the gauge `fleet_db_queue_patched`
 * (1 fixed, 0 not) in `registry`.
 */
export function checkPostgresQueue(log: Logger, registry: Registry, packageDir = loadedPostgresDir()): boolean {
  const file = join(packageDir, 'src/queue.js');
  let fixed = false;
  try {
    fixed = readFileSync(file, 'utf8').includes(MARKER);
  } catch {
    // unreadable counts as not fixed; the warning names the file
  }
  if (!fixed) {
    log.warn(
      "postgres.js's connection queue is not fixed (porsager/postgres#747; was `npm ci --ignore-scripts` used?): " +
        'the database pool slows down for as long as the service is busy. ' +
        'Run `node --import tsx api/db/postgres_queue_fix.ts` and restart.',
      { file },
    );
  }
  new Gauge({
    name: 'fleet_db_queue_patched',
    help: '1 when the postgres.js this process loads has the fixed connection queue (api/db/postgres_queue_fix.ts), else 0.',
    registers: [registry],
  }).set(fixed ? 1 : 0);
  return fixed;
}

// `node --import tsx api/db/postgres_queue_fix.ts` (the postinstall script).
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  for (const { path, outcome } of fixPostgresQueues(loadedPostgresDir())) {
    if (outcome === 'unknown version, left alone') {
      console.warn(`postgres ${path}: not the queue of postgres 3.4.9; left alone (see api/db/postgres_queue_fix.ts)`);
    } else if (outcome === 'fixed') {
      console.log(`postgres ${path}: connection queue fixed (api/db/postgres_queue_fix.ts)`);
    }
  }
}
