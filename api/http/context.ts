/**
 * The dependencies every handler reaches through `c.get('deps')`, and the Hono env type.
 * (`c.get`, not `c.var`: Hono builds a new object of all variables on every `c.var` read.)
 */
import type { AppConfig } from '../config.ts';
import type { Sql } from '../db/client.ts';
import type { Logger } from '../log.ts';

export interface AppDeps {
  sql: Sql;
  config: AppConfig;
  log: Logger;
}

export interface AppEnv {
  Variables: {
    deps: AppDeps;
    requestId: string;
  };
}
