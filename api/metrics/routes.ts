/**
 * GET /metrics (outside /api/v1, where Prometheus looks by default): the Prometheus text
 * format. A scrape presents the operator token or METRICS_TOKEN, so a scraper need not
 * hold the operator token.
 */
import { Hono } from 'hono';
import { bearerToken } from '../http/auth.ts';
import type { AppEnv } from '../access/app_env.ts';
import { secretsEqual } from '../http/crypto.ts';
import { ApiError } from '../http/errors.ts';
import type { Metrics } from './metrics.ts';

/** The scrape credential check: the operator token or METRICS_TOKEN, in constant time. */
function mayScrape(authorization: string | undefined, tokens: { admin: string; metrics?: string }): boolean {
  const token = bearerToken(authorization);
  if (token === null) return false;
  const admin = secretsEqual(token, tokens.admin);
  const metrics = tokens.metrics !== undefined && secretsEqual(token, tokens.metrics);
  return admin || metrics;
}

export function metricsRoutes(metrics: Metrics) {
  return new Hono<AppEnv>().get('/metrics', async (c) => {
    const { config, sql } = c.get('deps');
    if (!mayScrape(c.req.header('authorization'), { admin: config.adminToken, metrics: config.metricsToken })) {
      throw new ApiError(
        'unauthorized',
        'a valid token is required (Authorization: Bearer <ADMIN_TOKEN or METRICS_TOKEN>)',
        {
          headers: { 'WWW-Authenticate': 'Bearer' },
        },
      );
    }
    const text = await metrics.render(sql, config.agentPollIntervalSeconds);
    return c.body(text, 200, { 'content-type': metrics.contentType, 'cache-control': 'no-store' });
  });
}
