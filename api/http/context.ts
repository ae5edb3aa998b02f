/** The dependencies every handler reaches through `c.var.deps`, and the Hono env type. */
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
