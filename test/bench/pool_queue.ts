/**
 * `npx tsx test/bench/pool_queue.ts`: postgres.js's pool under sustained load, with the
 * connection queue as postgres 3.4.x ships it and as api/db/postgres_queue_fix.ts fixes it,
 * in one run against one embedded PostgreSQL. Each round is 160,000 `select 1` from 32
 * concurrent callers on 4 connections; the original slows down round after round (its busy
 * queue grows by a slot per pipelined query and is scanned on every move of a connection),
 * the fixed one stays flat. Prints queries per second per round.
 */
import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type postgresOfThisProject from 'postgres';
import { FIXED_BODY, ORIGINAL_BODY } from '../../api/db/postgres_queue_fix.ts';
import { silentLogger } from '../../api/log.ts';
import { startEmbeddedPostgres } from '../../api/runtime/embedded_postgres.ts';

const ROUNDS = 8;
const CALLERS = 32;
const PER_CALLER = 5000;

const installed = join(dirname(createRequire(import.meta.url).resolve('postgres')), '..', '..');
const stateDir = await mkdtemp(join(tmpdir(), 'fleet-pool-queue-'));
const pg = await startEmbeddedPostgres({ stateDir, database: 'postgres', log: silentLogger, ephemeral: true });
try {
  for (const [name, body] of [
    ['original', ORIGINAL_BODY],
    ['fixed', FIXED_BODY],
  ] as const) {
    // A copy of the package with this queue, loaded on its own.
    const copy = join(stateDir, `postgres-${name}`);
    await cp(installed, copy, { recursive: true });
    await writeFile(join(copy, 'src', 'queue.js'), `export default Queue${body}`);
    const { default: postgres } = (await import(pathToFileURL(join(copy, 'src', 'index.js')).href)) as {
      default: typeof postgresOfThisProject;
    };
    const sql = postgres(pg.url, { max: 4, onnotice: () => {} });
    await sql`select 1`;
    const figures: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const started = performance.now();
      const caller = async () => {
        for (let i = 0; i < PER_CALLER; i++) await sql`select 1`;
      };
      await Promise.all(Array.from({ length: CALLERS }, caller));
      figures.push(((CALLERS * PER_CALLER) / ((performance.now() - started) / 1000)).toFixed(0));
    }
    await sql.end();
    console.log(`${name.padEnd(8)} queries/s per round of ${CALLERS * PER_CALLER}: ${figures.join(' ')}`);
  }
} finally {
  await pg.stop();
  await rm(stateDir, { recursive: true, force: true });
}
