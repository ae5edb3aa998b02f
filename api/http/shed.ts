/**
 * Load shedding for a route (CONTRACT §14): a bound on its requests in flight in this
 * process. Past the bound a request is refused at once with 503 `service_unavailable` and a
 * `Retry-After` of the base plus random jitter, so a returning herd spreads out instead of
 * queueing without bound in front of the database. Other routes are not counted.
 */
import type { MiddlewareHandler } from 'hono';
import { ApiError } from './errors.ts';

export interface ShedOptions {
  maxInFlight: number;
  /** The least a refused client waits; the jitter adds up to as much again. */
  retryAfterSeconds: number;
}

export function shedLoad(options: (c: Parameters<MiddlewareHandler>[0]) => ShedOptions): MiddlewareHandler {
  let inFlight = 0;
  return async (c, next) => {
    const { maxInFlight, retryAfterSeconds } = options(c);
    if (inFlight >= maxInFlight) {
      const retryAfter = retryAfterSeconds + Math.floor(Math.random() * (retryAfterSeconds + 1));
      throw new ApiError('service_unavailable', `the service is busy; retry in ${retryAfter} seconds`, {
        headers: { 'Retry-After': String(retryAfter) },
      });
    }
    inFlight++;
    try {
      await next();
    } finally {
      inFlight--;
    }
  };
}
