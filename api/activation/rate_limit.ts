/**
 * The guessing limit of the installer's handshake: failed credential checks of activate
 * and resolve are counted per client address in PostgreSQL (`activation_failures`), so
 * every API instance sees the same count. At the limit, every activate and resolve from
 * that address answers 429 before any credential is checked: a limit that still answered
 * 200 for a right code would tell a guesser which code is right.
 */
import type { Context, MiddlewareHandler } from 'hono';
import type { Db } from '../db/client.ts';
import type { AppEnv } from '../http/context.ts';
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
 * Seconds until the address may try again, or null while it is under the limit. One
 * statement: the `maxFailures`-th most recent failure in the window exists only at the
 * limit, and the address is free again when that failure leaves the window.
 */
export async function retryAfterSeconds(db: Db, clientKey: string, limit: FailureLimit): Promise<number | null> {
  const [row] = await db<{ retry_after: number }[]>`
    select greatest(1, ceil(extract(epoch from
             failed_at + make_interval(secs => ${limit.windowSeconds}) - now())))::int as retry_after
    from activation_failures
    where client_key = ${clientKey}
      and failed_at > now() - make_interval(secs => ${limit.windowSeconds})
    order by failed_at desc
    offset ${limit.maxFailures - 1}
    limit 1`;
  return row?.retry_after ?? null;
}

/** Share of failures that also sweep rows past the window (of every address). */
const PRUNE_PROBABILITY = 1 / 50;

export async function recordFailure(db: Db, clientKey: string, limit: FailureLimit): Promise<void> {
  await db`insert into activation_failures (client_key) values (${clientKey})`;
  // Opportunistic, so no job is needed and the table stays as small as the window allows.
  if (Math.random() < PRUNE_PROBABILITY) {
    await db`
      delete from activation_failures
      where failed_at <= now() - make_interval(secs => ${limit.windowSeconds})`;
  }
}

/**
 * Route middleware of activate and resolve: refuses an address at the limit (before the
 * body is even validated), and records the failure when the handler rejected the
 * credential. Other errors (bad input, unknown template or device) are no guess at a
 * credential and are not counted, nor are successes.
 */
export const activationRateLimit: MiddlewareHandler<AppEnv> = async (c, next) => {
  const { sql, config } = c.get('deps');
  const clientKey = clientAddress(c, config.activation.trustProxy);
  const retryAfter = await retryAfterSeconds(sql, clientKey, config.activation);
  if (retryAfter !== null) {
    throw new ApiError('too_many_requests', `too many failed activation attempts; retry in ${retryAfter} seconds`, {
      headers: { 'Retry-After': String(retryAfter) },
    });
  }
  await next();
  // Hono puts an error thrown by the handler into c.error after rendering it.
  if (c.error instanceof ApiError && c.error.code === 'invalid_activation_code') {
    await recordFailure(sql, clientKey, config.activation);
  }
};
