/** GET /api/v1/health: the API answers and the database does a round trip. */
import { z } from '@hono/zod-openapi';
import { defineRoute, json, newRouter } from '../http/openapi.ts';

const Health = z.object({ status: z.literal('ok'), database: z.literal('ok') }).openapi('Health');
const Unhealthy = z.object({ status: z.literal('degraded'), database: z.literal('unreachable') }).openapi('Unhealthy');

const health = defineRoute({
  method: 'get',
  path: '/health',
  operationId: 'health',
  tags: ['Operations'],
  summary: 'Liveness and database reachability',
  access: 'public',
  responses: {
    200: json(Health, 'The service and its database are up'),
    503: json(Unhealthy, 'The database is unreachable'),
  },
});

export function healthRoutes() {
  return newRouter().openapi(health, async (c) => {
    try {
      await c.get('deps').sql`select 1`;
      return c.json({ status: 'ok' as const, database: 'ok' as const }, 200);
    } catch {
      return c.json({ status: 'degraded' as const, database: 'unreachable' as const }, 503);
    }
  });
}
