/**
 * One middleware for what an operator sees of every request: the Prometheus counters and
 * the access log line. Both carry the route template, never the raw path (ids in paths
 * can be credentials: enrollment session ids), and never headers, query strings or bodies.
 */
import type { Context } from 'hono';
import type { Metrics } from './metrics.ts';
import { UNMATCHED_ROUTE } from './metrics.ts';
import type { AppEnv } from '../access/app_env.ts';
import type { Logger } from '../log.ts';
import { routeTemplate } from '../http/routes_table.ts';
import type { RefusalCause } from '../http/shed.ts';

/** Probes, docs and scrapes: polled by machines, logged at debug only. */
const quietRoutes = new Set([
  '/api/v1/health',
  '/api/v1/health/live',
  '/api/v1/openapi.json',
  '/api/v1/docs',
  '/api/v1/docs/init.js',
  '/api/v1/docs/{asset}',
  '/metrics',
]);

export const CHECKIN = '/api/v1/agent/checkin';

/**
 * Check-ins refused with 503 (shed, or the database out of time) in one `info` line per
 * second with their count: a returning herd is thousands of refusals a second, and a line
 * for each would cost more than the refusal itself. The shed ones are also counted by the
 * bound that refused them (`in_flight`, `event_loop_delay`): which one to raise, if any.
 */
export class RefusedCheckins {
  private count = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;

  constructor(
    private readonly log: Logger,
    private readonly shedByCause: () => Record<RefusalCause, number>,
  ) {}

  add(): void {
    this.count++;
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.log.info('check-ins refused', {
        method: 'POST',
        route: CHECKIN,
        status: 503,
        count: this.count,
        seconds: 1,
        ...this.shedByCause(),
      });
      this.count = 0;
      this.timer = null;
    }, 1000);
    (this.timer as { unref?: () => void }).unref?.();
  }
}

export function observeRequests(metrics: Metrics, refused: RefusedCheckins) {
  return async (c: Context<AppEnv>, next: () => Promise<void>) => {
    const started = performance.now();
    await next();
    const ms = performance.now() - started;
    const route = routeTemplate(c) ?? UNMATCHED_ROUTE;
    const method = c.req.method;
    const status = c.res.status;
    metrics.observe(method, route, status, ms / 1000);
    if (route === CHECKIN && status === 503) return refused.add();
    // Check-ins are the fleet's heartbeat: counted above, logged only when they fail.
    const level = quietRoutes.has(route) || (route === CHECKIN && status < 400) ? 'debug' : 'info';
    c.get('deps').log[level]('request', {
      request_id: c.get('requestId'),
      method,
      route,
      status,
      ms: Math.round(ms * 10) / 10,
    });
  };
}
