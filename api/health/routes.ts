/**
 * GET /api/v1/health: the API answers and the database does a round trip, within
 * HEALTH_TIMEOUT_MS so that a stalled database reads as unhealthy, not as a hang.
 */
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
  auth: 'public',
  responses: {
    200: json(Health, 'The service and its database are up'),
    503: json(Unhealthy, 'The database is unreachable'),
  },
});

const HEALTH_TIMEOUT_MS = 1500;

export function healthRoutes() {
  return newRouter().openapi(health, async (c) => {
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
