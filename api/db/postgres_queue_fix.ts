/**
 * A fix for postgres.js's connection queues (postgres 3.4.x, `src/queue.js`), applied by
 * `npm install` (the `postinstall` script runs this file) to the ESM, CommonJS and
 * Cloudflare copies in node_modules. Node and Deno (`nodeModulesDir: manual`) load those.
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
 * fix is left alone with a warning: a newer postgres.js may have changed it.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

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

// `node --import tsx api/db/postgres_queue_fix.ts` (the postinstall script).
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
  for (const { path, outcome } of fixPostgresQueues(join(root, 'node_modules', 'postgres'))) {
    if (outcome === 'unknown version, left alone') {
      console.warn(`postgres ${path}: not the known 3.4.x queue; left alone (see api/db/postgres_queue_fix.ts)`);
    } else if (outcome === 'fixed') {
      console.log(`postgres ${path}: connection queue fixed (api/db/postgres_queue_fix.ts)`);
    }
  }
}
