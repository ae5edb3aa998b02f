/**
 * The guessing limit of the installer's handshake: unknown credentials
 * of activate and resolve are counted per client address in PostgreSQL
 * (`activation_failure_counts`), so every API instance sees the same count. Only a guess
 * writes here; a legitimate attempt only reads, so any number of installers behind one
 * address proceed side by side and never wait for each other.
 *
 * At the limit, every activate and resolve from the address answers 429 before its
 * credential is checked: a limit that still answered 200 for a right code would tell a
 * guesser which code is right. A burst races that first read, so each attempt is checked
 * once more after its credential: a guess counts itself with one conditional upsert that
 * refuses to pass the limit (429 instead of 403), and a known credential reads the count
 * again inside its own transaction (429 and nothing written at the limit). Every attempt
 * is thus answered as if the attempts had come one by one, in the order of those
 * statements: at most `maxFailures` guesses per window get an answer about their code.
 */
import type { Context, MiddlewareHandler } from 'hono';
import type { AppEnv } from '../access/app_env.ts';
import type { Db, Sql } from '../db/client.ts';
import { ApiError } from '../http/errors.ts';

export interface FailureLimit {
  /** Failures in the window at which the address is refused. */
  maxFailures: number;
  windowSeconds: number;
}

const MAX_KEY_LENGTH = 100;

/** Rows of addresses whose failures all left the window that one guess deletes. */
const PRUNE_BATCH = 100;

/**
 * The client address that failures are counted against. `X-Forwarded-For` (its first
 * hop, the client as the proxy saw it) only when the service is configured to trust its
 * proxy: otherwise anyone could pick a fresh address per request. Otherwise the peer of
 * the connection, read portably: Node (@hono/node-server) passes `{ incoming }` as the
 * env, Deno.serve passes `{ remoteAddr }`. In-process calls (tests) have neither.
 */
export function clientAddress(c: Context, trustProxy: boolean): string {
  if (trustProxy) {
    const first = c.req.header('x-forwarded-for')?.split(',')[0]?.trim();
    if (first) return first.slice(0, MAX_KEY_LENGTH);
  }
  const env = c.env as
    | { incoming?: { socket?: { remoteAddress?: string } }; remoteAddr?: { hostname?: string } }
    | undefined;
  return env?.incoming?.socket?.remoteAddress ?? env?.remoteAddr?.hostname ?? 'unknown';
}

/**
 * Failures of the address in the window, and the seconds until it may try again once it
 * is at the limit: when the `maxFailures`-th most recent failure leaves the window. A
 * plain read: it takes no lock and waits for none.
 */
async function failuresOf(
  db: Db,
  clientKey: string,
  limit: FailureLimit,
): Promise<{ count: number; retryAfter: number }> {
  const window = db`make_interval(secs => ${limit.windowSeconds})`;
  const [row] = await db<{ count: number; retry_after: number | null }[]>`
    select
      (select count(*) from unnest(l.failures) f where f > now() - ${window})::int as count,
      (select greatest(1, ceil(extract(epoch from f + ${window} - now())))::int
         from unnest(l.failures) f
        where f > now() - ${window}
        order by f desc
        offset ${limit.maxFailures - 1}
        limit 1) as retry_after
    from activation_failure_counts l where l.client_key = ${clientKey}`;
  return { count: row?.count ?? 0, retryAfter: row?.retry_after ?? 1 };
}

/**
 * Counts one guess of the address, in one statement: the upsert locks the address's row
 * and appends the failure only while fewer than `maxFailures` lie in the window, so
 * concurrent guesses cannot pass the limit. False: the limit was already reached.
 *
 * The same statement deletes up to PRUNE_BATCH rows of other addresses whose failures all
 * left the window (skipping rows another statement holds): rows are only ever created by
 * guesses, and each guess removes up to a hundred idle ones, so the table stays as small
 * as the window allows with no job and no chance involved.
 */
async function countGuess(db: Db, clientKey: string, limit: FailureLimit): Promise<boolean> {
  const window = db`make_interval(secs => ${limit.windowSeconds})`;
  const rows = await db`
    with pruned as (
      delete from activation_failure_counts
      where client_key in (
        select client_key from activation_failure_counts
        where client_key <> ${clientKey}
          and coalesce(failures[cardinality(failures)], '-infinity') <= now() - ${window}
        limit ${PRUNE_BATCH}
        for update skip locked))
    insert into activation_failure_counts as l (client_key, failures) values (${clientKey}, array[now()])
    on conflict (client_key) do update
      set failures = array(select f from unnest(l.failures) f where f > now() - ${window}) || now()
      where (select count(*) from unnest(l.failures) f where f > now() - ${window}) < ${limit.maxFailures}
    returning 1`;
  return rows.length === 1;
}

function tooManyRequests(retryAfter: number): ApiError {
  return new ApiError('too_many_requests', `too many failed activation attempts; retry in ${retryAfter} seconds`, {
    headers: { 'Retry-After': String(retryAfter) },
  });
}

/** The limit as one attempt of one address meets it. */
export interface GuessLimit {
  /** 429 when the address is at the limit; a read on `db` (the attempt's transaction, if any). */
  assertOpen(db: Db): Promise<void>;
  /** Counts an unknown credential; 429 when it would pass the limit. Autocommit, never in a transaction. */
  countGuess(): Promise<void>;
}

export function guessLimit(sql: Sql, clientKey: string, limit: FailureLimit): GuessLimit {
  return {
    async assertOpen(db) {
      const { count, retryAfter } = await failuresOf(db, clientKey, limit);
      if (count >= limit.maxFailures) throw tooManyRequests(retryAfter);
    },
    async countGuess() {
      if (await countGuess(sql, clientKey, limit)) return;
      throw tooManyRequests((await failuresOf(sql, clientKey, limit)).retryAfter);
    },
  };
}

/** The limit of the address that made this request. */
export function guessLimitOf(c: Context<AppEnv>): GuessLimit {
  const { sql, config } = c.get('deps');
  return guessLimit(sql, clientAddress(c, config.activation.trustProxy), config.activation);
}

/**
 * Route middleware of activate and resolve: an address at the limit gets 429 before the
 * body is even validated, and before any credential is looked at.
 */
export const activationRateLimit: MiddlewareHandler<AppEnv> = async (c, next) => {
  await guessLimitOf(c).assertOpen(c.get('deps').sql);
  await next();
};
