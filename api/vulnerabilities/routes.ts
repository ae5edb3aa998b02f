/** The security feeds' state, for the operator. */
import { iso, json } from '../http/openapi.ts';
import { defineRoute, newRouter } from '../access/route.ts';
import { listFeeds } from './repo.ts';
import { VulnerabilityFeedList } from './schemas.ts';
import * as ops from './operations.ts';

const listFeedsRoute = defineRoute({
  method: 'get',
  path: '/vulnerability-feeds',
  operationId: 'listVulnerabilityFeeds',
  tags: ['Vulnerabilities'],
  summary: 'The security feeds: where each is read from, when it last succeeded, its last error',
  description:
    "The worker reads the Debian Security Tracker (`debian`) and Ubuntu's OSV records (`ubuntu`) at start and every " +
    '`VULN_FEED_INTERVAL_MINUTES`. A read that fails keeps the last good data and shows its error here.',
  operation: ops.listVulnerabilityFeeds,
  errors: [],
  request: {},
  responses: { 200: json(VulnerabilityFeedList, 'The feeds') },
});

export function vulnerabilityRoutes() {
  return newRouter().openapi(listFeedsRoute, async (c) => {
    const rows = await listFeeds(c.get('db'));
    return c.json({ items: rows.map((r) => ({ ...r, last_success_at: iso(r.last_success_at) })) }, 200);
  });
}
