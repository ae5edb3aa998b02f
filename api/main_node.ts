/**
 * Node entry. `npm start`: embedded or external PostgreSQL, migrations, API and worker in
 * one process. `npm run api` (`--api-only`): the API alone against DATABASE_URL.
 */
import { runAll, runApiOnly } from './runtime/service.ts';

try {
  if (process.argv.includes('--api-only')) await runApiOnly();
  else await runAll();
} catch (err) {
  console.error(`start-up failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
}
