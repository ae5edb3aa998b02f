/**
 * The guessing limit of the installer's handshake: failed credential checks of activate
 * and resolve are counted per client address in PostgreSQL (`activation_failure_counts`),
 * so every API instance sees the same count. At the limit, every activate and resolve from
 * that address answers 429 before any credential is checked: a limit that still answered
 * 200 for a right code would tell a guesser which code is right.
 */
import type { Context, MiddlewareHandler } from 'hono';
import type { Db } from '../db/client.ts';
import type { AppEnv } from '../app_env.ts';
import { ApiError } from '../http/errors.ts';

export interface FailureLimit {
  /** Failures in the window at which the address is refused. */
  maxFailures: number;
  windowSeconds: number;
}

const MAX_KEY_LENGTH = 100;

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
 * Reserves one failure of the address before its credential is checked, in one statement:
 * the upsert locks the address's row, so concurrent attempts see each other's reservations
 * and at most `maxFailures` credential checks run per window. Returns the reservation
 * (to give back if the attempt was no guess), or the seconds until the address may try
 * again: when the `maxFailures`-th most recent failure leaves the window.
 */
export async function reserveFailure(
  db: Db,
  clientKey: string,
  limit: FailureLimit,
): Promise<{ reservation: string } | { retryAfter: number }> {
  const [row] = await db<{ reservation: string | null; retry_after: number | null }[]>`
    insert into activation_failure_counts as l (client_key, failures) values (${clientKey}, array[now()])
    on conflict (client_key) do update set failures = case
      when (select count(*) from unnest(l.failures) f where f > now() - make_interval(secs => ${limit.windowSeconds}))
           >= ${limit.maxFailures}
        then l.failures
      else array(select f from unnest(l.failures) f
                  where f > now() - make_interval(secs => ${limit.windowSeconds})) || now()
    end
    returning
      case when l.failures[cardinality(l.failures)] = now() then now()::text end as reservation,
      (select greatest(1, ceil(extract(epoch from f + make_interval(secs => ${limit.windowSeconds}) - now())))::int
         from unnest(l.failures) f
        where f > now() - make_interval(secs => ${limit.windowSeconds})
        order by f desc
        offset ${limit.maxFailures - 1}
        limit 1) as retry_after`;
  if (row!.reservation !== null) return { reservation: row!.reservation };
  return { retryAfter: row!.retry_after ?? 1 };
}

/**
 * Gives a reservation back: the attempt succeeded or was refused for another reason. The
 * reservation travels as text: as a timestamptz parameter it would lose its microseconds.
 */
export async function releaseFailure(db: Db, clientKey: string, reservation: string): Promise<void> {
  await db`
    update activation_failure_counts set failures = array_remove(failures, ${reservation}::text::timestamptz)
    where client_key = ${clientKey}`;
}

/** Share of attempts that also delete rows of addresses whose failures all left the window. */
const PRUNE_PROBABILITY = 1 / 50;

async function pruneIdleAddresses(db: Db, limit: FailureLimit): Promise<void> {
  // Opportunistic, so no job is needed and the table stays as small as the window allows.
  if (Math.random() >= PRUNE_PROBABILITY) return;
  await db`
    delete from activation_failure_counts
    where coalesce(failures[cardinality(failures)], '-infinity')
          <= now() - make_interval(secs => ${limit.windowSeconds})`;
}

/** An unknown credential: a guess. A known session that is revoked, expired or full is none. */
function isGuess(err: unknown): boolean {
  return (
    err instanceof ApiError &&
    err.code === 'invalid_activation_code' &&
    !(err as { knownCredential?: boolean }).knownCredential
  );
}

/**
 * Route middleware of activate and resolve: reserves a failure before the handler (at the
 * limit: 429 before the body is even validated), and keeps it only when the handler
 * rejected an unknown credential. Successes, bad input, other refusals and known sessions
 * that are revoked, expired or used up give it back.
 */
export const activationRateLimit: MiddlewareHandler<AppEnv> = async (c, next) => {
  const { sql, config } = c.get('deps');
  const clientKey = clientAddress(c, config.activation.trustProxy);
  const reserved = await reserveFailure(sql, clientKey, config.activation);
  if ('retryAfter' in reserved) {
    const message = `too many failed activation attempts; retry in ${reserved.retryAfter} seconds`;
    throw new ApiError('too_many_requests', message, { headers: { 'Retry-After': String(reserved.retryAfter) } });
  }
  let guess = false;
  try {
    await next();
    // Hono puts an error thrown by the handler into c.error after rendering it.
    guess = isGuess(c.error);
  } finally {
    if (!guess) await releaseFailure(sql, clientKey, reserved.reservation);
    await pruneIdleAddresses(sql, config.activation);
  }
};
