/**
 * GET /api/v1/health (readiness: the API answers and the database does a round trip) and
 * GET /api/v1/health/live (liveness: the process answers; no database).
 */
import { z } from '@hono/zod-openapi';
import { defineRoute, json, newRouter } from '../http/openapi.ts';

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

export function healthRoutes() {
  return newRouter()
    .openapi(live, (c) => c.json({ status: 'ok' as const }, 200))
    .openapi(health, async (c) => {
      try {
        await c.get('deps').sql`select 1`;
        return c.json({ status: 'ok' as const, database: 'ok' as const }, 200);
      } catch {
        return c.json({ status: 'degraded' as const, database: 'unreachable' as const }, 503);
      }
    });
}
