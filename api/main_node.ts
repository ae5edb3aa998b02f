/**
 * Node entry. `npm start`: embedded or external PostgreSQL, migrations, API and worker in
 * one process. `npm run api` (`--api-only`): the API alone against DATABASE_URL.
 */
import { runAll, runApiOnly } from './runtime/service.ts';

try {
  if (process.argv.includes('--api-only')) await runApiOnly();
  else await runAll();
} catch (err) {
  // One line naming the cause; the stack only when LOG_LEVEL=debug.
  const cause = err instanceof Error && err.message ? err.message : err === undefined ? 'unknown cause' : String(err);
  console.error(`start-up failed: ${cause}`);
  if (process.env.LOG_LEVEL === 'debug' && err instanceof Error) console.error(err.stack);
  process.exit(1);
}
