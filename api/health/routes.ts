/**
 * GET /api/v1/health (readiness: the API answers and the database does a round trip within
 * HEALTH_TIMEOUT_MS, so that a stalled database reads as unhealthy, not as a hang) and
 * GET /api/v1/health/live (liveness: the process answers; no database).
 */
import { z } from '@hono/zod-openapi';
import { json } from '../http/openapi.ts';
import { defineRoute, newRouter } from '../access/route.ts';

const Health = z.object({ status: z.literal('ok'), database: z.literal('ok') }).openapi('Health');
const Live = z.object({ status: z.literal('ok') }).openapi('Live');
const Unhealthy = z.object({ status: z.literal('degraded'), database: z.literal('unreachable') }).openapi('Unhealthy');

const health = defineRoute({
  method: 'get',
  path: '/health',
  operationId: 'health',
  tags: ['Operations'],
  summary: 'Readiness: the service and its database answer',
  access: 'public',
  responses: {
    200: json(Health, 'The service and its database are up'),
    503: json(Unhealthy, 'The database is unreachable'),
  },
});

const live = defineRoute({
  method: 'get',
  path: '/health/live',
  operationId: 'healthLive',
  tags: ['Operations'],
  summary: 'Liveness: the process answers (no database round trip)',
  access: 'public',
  responses: {
    200: json(Live, 'The process is running'),
  },
});

const HEALTH_TIMEOUT_MS = 1500;

export function healthRoutes() {
  return newRouter()
    .openapi(live, (c) => c.json({ status: 'ok' as const }, 200))
    .openapi(health, async (c) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      try {
        await Promise.race([
          c.get('deps').sql`select 1`,
          new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('timeout')), HEALTH_TIMEOUT_MS))),
        ]);
        return c.json({ status: 'ok' as const, database: 'ok' as const }, 200);
      } catch {
        c.header('Retry-After', '5');
        return c.json({ status: 'degraded' as const, database: 'unreachable' as const }, 503);
      } finally {
        clearTimeout(timer);
      }
    });
}
