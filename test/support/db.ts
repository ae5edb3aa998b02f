/**
 * A database of its own for each test file, cloned from the migrated template
 * (`create database ... template ...`) and dropped afterwards.
 */
import postgres from 'postgres';
import { inject } from 'vitest';
import { createSql, type Sql } from '../../api/db/client.ts';

export interface TestDatabase {
  sql: Sql;
  url: string;
  drop(): Promise<void>;
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const templateUrl = inject('templateUrl');
  const template = new URL(templateUrl);
  const templateName = template.pathname.slice(1);
  const name = `fleet_test_${crypto.randomUUID().replaceAll('-', '').slice(0, 16)}`;
  const adminUrl = new URL(templateUrl);
  adminUrl.pathname = '/postgres';
  const admin = postgres(adminUrl.toString(), { max: 1, onnotice: () => {} });
  await admin`create database ${admin(name)} template ${admin(templateName)}`;
  const url = new URL(templateUrl);
  url.pathname = `/${name}`;
  const sql = createSql(url.toString(), { max: 20, applicationName: 'fleet-test' });
  return {
    sql,
    url: url.toString(),
    async drop() {
      await sql.end({ timeout: 5 });
      // A pool that a library ends without waiting for it (Graphile Worker's runOnce) may
      // still be closing: a client terminated by the forced drop then throws uncaught.
      for (let waited = 0; waited < 2000; waited += 50) {
        const [open] = await admin<{ n: number }[]>`
          select count(*)::int as n from pg_stat_activity where datname = ${name}`;
        if (open!.n === 0) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await admin`drop database if exists ${admin(name)} with (force)`;
      await admin.end();
    },
  };
}

/** Number of rows in a table: for "nothing was written" assertions. */
export async function countRows(sql: Sql, table: string): Promise<number> {
  const [row] = await sql<{ n: number }[]>`select count(*)::int as n from ${sql(table)}`;
  return row!.n;
}

/**
 * The plan of a statement as the planner would make it on big tables (sequential scans
 * off: with a handful of rows it would rightly prefer them). Without `parameters`, the
 * generic plan, so a statement captured from postgres.js needs none.
 */
export async function planOnBigTables(sql: Sql, text: string, parameters?: unknown[]): Promise<string> {
  return sql.begin(async (tx) => {
    await tx`set local enable_seqscan = off`;
    const plan = parameters
      ? await tx.unsafe(`explain ${text}`, parameters as postgres.ParameterOrJSON<never>[])
      : await tx.unsafe(`explain (generic_plan) ${text}`);
    return plan.map((r) => r['QUERY PLAN'] as string).join('\n');
  });
}
