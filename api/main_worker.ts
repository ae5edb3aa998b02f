/** `npm run worker`: Graphile Worker alone, for a build host apart from the API. */
import { runWorkerOnly } from './runtime/service.ts';

await runWorkerOnly();
