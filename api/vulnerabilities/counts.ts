/** How many of an organization's devices each CVE affects: one rule for the stored counts and the scoped reads. */
import type postgres from 'postgres';
import type { Db } from '../db/client.ts';
import { URGENCIES } from './feed_parse.ts';

/**
 * The CTEs `sets` (the devices' (set, release) pairs and how many devices run each) and
 * `counts` (per CVE: worst urgency, source packages, devices affected, with a fix
 * available, without a fix), over the organization's devices `d` that are not archived and
 * meet `scope`. A device counts once per CVE, however many of its source packages it hits.
 */
export function cveCounts(db: Db, organizationId: string, scope: postgres.PendingQuery<postgres.Row[]> = db`true`) {
  return db`
    sets as materialized (
      select i.package_set_id, i.release, count(*)::int as n
        from device_inventories i join devices d on d.id = i.device_id
       where i.organization_id = ${organizationId} and d.archived_at is null and ${scope}
       group by i.package_set_id, i.release
    ), per_set as (
      select m.cve, s.n, min(urgency_rank(m.urgency)) as rank, array_agg(m.source) as sources,
             bool_or(m.status = 'fixed_available') as fix, bool_or(m.status = 'no_fix') as no_fix
        from sets s
        join vulnerability_matches m on m.package_set_id = s.package_set_id and m.release = s.release
       group by s.package_set_id, s.release, m.cve, s.n
    ), counts as (
      select p.cve, (${URGENCIES as unknown as string[]}::text[])[min(p.rank) + 1] as urgency,
             sum(p.n)::int as devices_affected,
             coalesce(sum(p.n) filter (where p.fix), 0)::int as devices_fix_available,
             coalesce(sum(p.n) filter (where p.no_fix), 0)::int as devices_no_fix,
             array(select distinct x from unnest(array_cat_agg(p.sources)) x order by x) as sources
        from per_set p group by p.cve
    )`;
}
