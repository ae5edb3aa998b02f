/** `npm run migrate`: apply migrations (and the Graphile Worker schema), then exit. */
import { runMigrateOnly } from './runtime/service.ts';

await runMigrateOnly();
process.exit(0);
