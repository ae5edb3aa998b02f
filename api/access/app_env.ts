/**
 * The dependencies every handler reaches through `c.get('deps')`, and the Hono env type.
 * (`c.get`, not `c.var`: Hono builds a new object of all variables on every `c.var` read.)
 * What only one feature uses (the agent's check-in path) is handed to that feature's routes
 * by `createApp`, so this file, which every layer imports, names no feature.
 */
import type { AppConfig } from '../config.ts';
import type { AuditEntry, Caller } from './declaration.ts';
import type { Db, Sql } from '../db/client.ts';
import type { CheckinGate } from '../http/shed.ts';
import type { Logger } from '../log.ts';

export interface HandlerDeps {
  sql: Sql;
  config: AppConfig;
  log: Logger;
  /** Admits or sheds check-ins (api/agent/README.md, Load shedding); absent: one per app, from `config.checkin`. */
  checkinGate?: CheckinGate;
}

export interface AppEnv {
  Variables: {
    deps: HandlerDeps;
    requestId: string;
    /** The database for this request: the client, or the transaction of an audited write. */
    db: Db;
    /** The operator or organization key that made an operator or organization call. */
    caller: Caller;
    /** What an audited write changed, for the access middleware to record. */
    audit: AuditEntry;
    /** SHA-256 of the agent secret of a check-in (the secret itself is not kept). */
    agentSecretHash: Uint8Array;
  };
}
