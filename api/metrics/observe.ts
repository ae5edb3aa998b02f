/**
 * One middleware for what an operator sees of every request: the Prometheus counters and
 * the access log line. Both carry the route template, never the raw path (ids in paths
 * can be credentials: enrollment session ids), and never headers, query strings or bodies.
 */
import type { Context } from 'hono';
import type { Metrics } from './metrics.ts';
import { UNMATCHED_ROUTE } from './metrics.ts';
import type { AppEnv } from '../app_env.ts';
import { routeTemplate } from '../http/routes_table.ts';

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

const CHECKIN = '/api/v1/agent/checkin';

export function observeRequests(metrics: Metrics) {
  return async (c: Context<AppEnv>, next: () => Promise<void>) => {
    const started = performance.now();
    await next();
    const ms = performance.now() - started;
    const route = routeTemplate(c) ?? UNMATCHED_ROUTE;
    const method = c.req.method;
    const status = c.res.status;
    metrics.observe(method, route, status, ms / 1000);
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
