/**
 * Migrations: dbmate applies the plain SQL files under sql/migrations (schema and seed
 * catalog), then Graphile Worker installs its own schema. The database URL reaches dbmate
 * through its environment, never its command line.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { resolveBinary } from 'dbmate';
import { runMigrations } from 'graphile-worker';
import type { Logger } from '../log.ts';

const migrationsDir = fileURLToPath(new URL('../../sql/migrations', import.meta.url));

export async function migrate(databaseUrl: string, log: Logger): Promise<void> {
  await dbmate(databaseUrl, ['--migrations-dir', migrationsDir, '--no-dump-schema', '--wait', 'up'], log);
  await runMigrations({ connectionString: databaseUrl, logger: undefined });
  log.info('migrations applied');
}

function dbmate(databaseUrl: string, args: string[], log: Logger): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(resolveBinary(), args, {
      env: { ...process.env, DATABASE_URL: withSslDefault(databaseUrl) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.on('error', reject);
    child.on('close', (code) => {
      for (const line of output.split('\n').filter(Boolean)) log.debug('dbmate', { line });
      if (code === 0) resolve();
      else reject(new Error(`dbmate failed (exit ${code}): ${output.trim().split('\n').slice(-3).join(' | ')}`));
    });
  });
}

/** dbmate's driver asks for TLS unless told otherwise; loopback servers have none. */
function withSslDefault(databaseUrl: string): string {
  const url = new URL(databaseUrl);
  const local = ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);
  if (local && !url.searchParams.has('sslmode')) url.searchParams.set('sslmode', 'disable');
  return url.toString();
}
