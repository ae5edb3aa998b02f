/** The one postgres.js client of a process, and the types repositories accept. */
import postgres from 'postgres';

/** The client or a transaction: repositories take either. */
export type Db = postgres.Sql | postgres.TransactionSql;
export type Sql = postgres.Sql;

export const DEFAULT_DATABASE_TIMEOUT_SECONDS = 10;

/**
 * Time limits that keep a stalled or dead database from holding a request: connecting
 * gives up after half the request's budget, a statement is cancelled by the server just
 * before the budget ends (the request deadline in app.ts covers a server that no longer
 * answers at all).
 */
export function databaseTimeouts(timeoutSeconds = DEFAULT_DATABASE_TIMEOUT_SECONDS) {
  return {
    connectSeconds: Math.max(1, Math.floor(timeoutSeconds / 2)),
    statementMs: Math.max(500, Math.round(timeoutSeconds * 1000) - 1000),
  };
}

export function createSql(
  url: string,
  options: { max?: number; applicationName?: string; timeoutSeconds?: number } = {},
): Sql {
  const timeouts = databaseTimeouts(options.timeoutSeconds);
  return postgres(url, {
    max: options.max ?? 10,
    onnotice: () => {},
    connect_timeout: timeouts.connectSeconds,
    connection: {
      application_name: options.applicationName ?? 'fleet-api',
      statement_timeout: timeouts.statementMs,
      idle_in_transaction_session_timeout: timeouts.statementMs,
    },
    // int8 (counts, size_bytes) as a JavaScript number: all stay far below 2^53.
    types: {
      int8: { to: 20, from: [20], serialize: (x: number) => String(x), parse: (x: string) => Number(x) },
    },
  });
}

/** PostgreSQL error codes the API maps to its own errors. */
export const pgError = {
  uniqueViolation: '23505',
  foreignKeyViolation: '23503',
  checkViolation: '23514',
  /** Text with a NUL byte ("invalid byte sequence for encoding UTF8: 0x00"). */
  characterNotInRepertoire: '22021',
  /** jsonb with \u0000 ("unsupported Unicode escape sequence"). */
  untranslatableCharacter: '22P05',
} as const;

export function isPgError(err: unknown, code: string): err is postgres.PostgresError {
  return err instanceof postgres.PostgresError && err.code === code;
}

/**
 * Runs `fn` in a transaction: a new one on the client, a savepoint inside one that is
 * already open (an audited write runs its handler in the access middleware's transaction).
 */
export function transaction<T>(db: Db, fn: (tx: postgres.TransactionSql) => Promise<T>): Promise<T> {
  return ('savepoint' in db ? db.savepoint(fn) : db.begin(fn)) as Promise<T>;
}

/** Errors of the socket (Node) and of postgres.js's connection handling. */
const connectionErrorCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'CONNECT_TIMEOUT',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
]);

/**
 * The database is down, stalled, restarting or out of connections: the request may
 * succeed when retried, so it answers 503, not 500.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  if (err instanceof postgres.PostgresError) {
    // 57014 statement timeout, 57P01-57P05 shutdown and restart, 53300 too many connections,
    // class 08 connection exceptions.
    return err.code === '57014' || err.code.startsWith('57P') || err.code === '53300' || err.code.startsWith('08');
  }
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && connectionErrorCodes.has(code);
}
