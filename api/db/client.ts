/** The one postgres.js client of a process, and the types repositories accept. */
import postgres from 'postgres';

/** The client or a transaction: repositories take either. */
export type Db = postgres.Sql | postgres.TransactionSql;
export type Sql = postgres.Sql;

export function createSql(url: string, options: { max?: number; applicationName?: string } = {}): Sql {
  return postgres(url, {
    max: options.max ?? 10,
    onnotice: () => {},
    connection: { application_name: options.applicationName ?? 'fleet-api' },
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
