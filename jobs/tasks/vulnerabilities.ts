/**
 * Tasks of the security data. `refresh_vulnerability_feeds`: queued at the worker's start
 * and every minute by the crontab, it reads each configured feed whose last attempt is
 * older than VULN_FEED_INTERVAL_MINUTES (at start: all), then matches whatever (set,
 * release) pairs are outdated (all after a feed changed). `vulnerability_match`
 * (api/vulnerabilities/match_jobs.ts): queued by the inventory upload when a device's
 * (package set, release) changed, `{ organization_id }`; matches every pair of that
 * organization's devices not yet matched at its feed's version, and recounts the
 * organization. Both are idempotent: a repeated job finds nothing to do but the recount.
 */
import type { Task } from 'graphile-worker';
import type { Sql } from '../../api/db/client.ts';
import type { Logger } from '../../api/log.ts';
import type { FeedName } from '../../api/vulnerabilities/feed_parse.ts';
import { type FeedResult, refreshFeed } from '../../api/vulnerabilities/feeds.ts';
import { type MatchSummary, matchOutdated } from '../../api/vulnerabilities/matching.ts';
import type { TaskDeps, WorkerConfig } from '../worker_deps.ts';

export const REFRESH_VULNERABILITY_FEEDS_TASK = 'refresh_vulnerability_feeds';

/** VULN_FEED_INTERVAL_MINUTES when unset. */
const DEFAULT_VULN_FEED_INTERVAL_MINUTES = 60;

export function refreshVulnerabilityFeedsTask(deps: TaskDeps): Task {
  return async (payload) => {
    const force = (payload as { force?: unknown } | null)?.force === true;
    await refreshVulnerabilityFeeds(deps.sql, deps.config.vulnFeeds, deps.log, { force });
  };
}

/** Reads the feeds that are due (all with `force`), then matches what is outdated. */
export async function refreshVulnerabilityFeeds(
  sql: Sql,
  config: WorkerConfig['vulnFeeds'],
  log: Logger,
  options: { force?: boolean } = {},
): Promise<{ feeds: FeedResult[]; matched: MatchSummary }> {
  const interval = config?.intervalMinutes ?? DEFAULT_VULN_FEED_INTERVAL_MINUTES;
  const feeds: FeedResult[] = [];
  for (const name of ['debian', 'ubuntu'] as FeedName[]) {
    const source = config?.[name];
    if (!source) continue;
    if (!options.force) {
      const [due] = await sql<{ due: boolean }[]>`
        select last_attempt_at is null or last_attempt_at <= now_ms() - make_interval(mins => ${interval}) as due
          from vulnerability_feeds where name = ${name}`;
      if (!due?.due) continue;
    }
    const result = await refreshFeed(sql, name, source);
    if (result.outcome === 'failed') log.warn('security feed read failed', { feed: name, error: result.error });
    else log.info('security feed read', { feed: name, outcome: result.outcome });
    feeds.push(result);
  }
  const matched = await matchOutdated(sql);
  if (matched.pairs > 0) log.info('security data matched', { ...matched });
  return { feeds, matched };
}

/** `{ organization_id }`: the organization matched and recounted. */
function organizationOf(payload: unknown): string {
  const organizationId = (payload as { organization_id?: unknown } | null)?.organization_id;
  if (typeof organizationId !== 'string' || !/^[0-9a-f-]{36}$/i.test(organizationId)) {
    throw new Error('vulnerability_match needs organization_id');
  }
  return organizationId;
}

export function vulnerabilityMatchTask(deps: TaskDeps): Task {
  return async (payload) => {
    const organizationId = organizationOf(payload);
    await matchOutdated(deps.sql, { organizationId, organizations: [organizationId] });
  };
}
