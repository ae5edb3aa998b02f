/**
 * Benchmark (not a test): the security data at fleet scale. One organization of
 * `--devices` devices (default 100,000) on `--sets` distinct package sets (500) of
 * `--packages` packages each (2,000), all on bookworm, and a synthetic Debian tracker
 * feed (`--cves` CVE entries per release, default 12,000, over four releases, a third
 * unimportant). Prints, never asserts: rows stored against devices × packages, the feed's
 * import, the time to match after a feed change (median of `--rounds`, default 3: all
 * sets rematched and the organization recounted), the server time (in-process,
 * app.request) of the organization's vulnerability list (stored counts, and scoped to an
 * org unit or a group of a tenth of the devices: counted from the sets' bitmaps) and of a
 * device's (p50, p99 over 50 calls), and the host's load average as it goes (a shared
 * host inflates every figure). A read that fails is reported and the others still run.
 * Run: npx tsx test/bench/vulnerabilities.ts [--devices=N --sets=N --packages=N --cves=N --rounds=N]
 */
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createSql } from '../../api/db/client.ts';
import { migrate } from '../../api/db/migrate.ts';
import { silentLogger } from '../../api/log.ts';
import { startEmbeddedPostgres } from '../../api/runtime/embedded_postgres.ts';
import { refreshFeed } from '../../api/vulnerabilities/feeds.ts';
import { matchOutdated } from '../../api/vulnerabilities/matching.ts';
import { testApp, testConfig } from '../support/app.ts';

const arg = (name: string, fallback: number) =>
  Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback);
const DEVICES = arg('devices', 100_000);
const SETS = arg('sets', 500);
const PACKAGES = arg('packages', 2_000);
const CVES = arg('cves', 12_000);
const ROUNDS = arg('rounds', 3);
const SOURCES = Math.round(PACKAGES * 1.5); // the archive's sources; a set has two thirds of them
const CALLS = 50;

const seconds = (t: number) => ((performance.now() - t) / 1000).toFixed(1);
const load = () =>
  `load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`;

/** A synthetic tracker: per release, CVEs on random sources, fixed at a random revision (or open). */
function trackerJson(round: number): string {
  const urgencies = ['high', 'medium', 'low', 'not yet assigned', 'unimportant', 'end-of-life'];
  const data: Record<string, Record<string, { releases: Record<string, unknown> }>> = {};
  let seed = 7 + round;
  const rnd = () => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed / 2147483648;
  };
  for (let i = 0; i < CVES; i++) {
    const source = `pkg${Math.floor(rnd() * SOURCES)}`;
    const cve = `CVE-2025-${String(10000 + i)}`;
    const releases: Record<string, unknown> = {};
    for (const release of ['bullseye', 'bookworm', 'trixie', 'sid']) {
      const open = rnd() < 0.3;
      releases[release] = {
        status: open ? 'open' : 'resolved',
        ...(open
          ? {}
          : {
              fixed_version: `1.${Math.floor(rnd() * 20)}-${1 + Math.floor(rnd() * 6)}+deb12u${Math.floor(rnd() * 10)}`,
            }),
        urgency: urgencies[Math.floor(rnd() * urgencies.length)],
      };
    }
    data[source] ??= {};
    data[source][cve] = { releases };
  }
  return JSON.stringify(data);
}

const stateDir = await mkdtemp(join(tmpdir(), 'fleet-bench-vuln-'));
await chmod(stateDir, 0o711);
const pg = await startEmbeddedPostgres({ stateDir, database: 'fleet', log: silentLogger, ephemeral: true });
try {
  await migrate(pg.url, silentLogger);
  const sql = createSql(pg.url, { max: 4, timeoutSeconds: 600 });
  let t = performance.now();
  const [org] = await sql<{ id: string }[]>`
    insert into organizations (name, kontakt_name, kontakt_email)
    values ('Bench-Organisation', 'Kontakt', 'it@example.org') returning id`;
  const orgId = org!.id;
  await sql`insert into org_units (organization_id, name, protected) values (${orgId}, 'Neue Geräte', true)`;
  await sql`insert into org_units (organization_id, name) select ${orgId}, format('Schule %s', i) from generate_series(1, 10) i`;
  await sql`
    with units as (select array_agg(id order by id) as ids from org_units where organization_id = ${orgId} and not protected)
    insert into devices (organization_id, serial, oe_id)
    select ${orgId}, format('BENCH-%s', lpad(n::text, 7, '0')), units.ids[1 + n % cardinality(units.ids)]
      from units, generate_series(1, ${DEVICES}) n`;
  // Sets: each a different two thirds of the sources, at its own revisions (update levels).
  await sql`
    insert into package_sets (content_hash, packages_count)
    select sha256(convert_to('set' || s, 'UTF8')), ${PACKAGES} from generate_series(1, ${SETS}) s`;
  await sql`
    insert into package_set_packages (set_id, name, arch, version, source, source_version)
    select p.id, 'pkg' || src, 'amd64', v, 'pkg' || src, v
      from package_sets p
      cross join lateral (
        select src, format('1.%s-%s+deb12u%s', src % 20, 1 + (src + p.id) % 6, (p.id * 7 + src) % 10) as v
          from generate_series(0, ${SOURCES - 1}) src
         where (src + p.id) % 3 <> 0
         limit ${PACKAGES}) x`;
  await sql`
    insert into device_inventories (device_id, organization_id, package_set_id, os_id, os_version_id, os_codename, release, kernel)
    select d.id, d.organization_id, s.ids[1 + (row_number() over (order by d.id))::int % cardinality(s.ids)],
           'debian', '12', 'bookworm', 'bookworm', '6.1.0-28-amd64'
      from devices d, (select array_agg(id order by id) as ids from package_sets) s`;
  // A group of every tenth device, across the org units.
  const [group] = await sql<{ id: string }[]>`
    insert into groups (organization_id, name) values (${orgId}, 'Bench-Gruppe') returning id`;
  await sql`
    insert into group_members (group_id, device_id, organization_id)
    select ${group!.id}, id, organization_id from devices where organization_id = ${orgId} and serial like '%3'`;
  await sql`vacuum analyze`;
  const [sizes] = await sql<{ packages: number }[]>`select count(*)::int as packages from package_set_packages`;
  console.log(
    `seeded ${DEVICES} devices on ${SETS} sets, ${sizes!.packages} package rows, in ${seconds(t)} s (${load()})`,
  );

  const matchTimes: number[] = [];
  let lastMatches = 0;
  for (let round = 0; round <= ROUNDS; round++) {
    const file = join(stateDir, `tracker-${round}.json`);
    const json = trackerJson(round);
    await writeFile(file, json);
    t = performance.now();
    const read = await refreshFeed(sql, 'debian', pathToFileURL(file).href);
    const importSeconds = seconds(t);
    t = performance.now();
    const summary = await matchOutdated(sql);
    const ms = performance.now() - t;
    if (round > 0) matchTimes.push(ms); // round 0: the first match of a new fleet
    lastMatches = summary.matches;
    console.log(
      `${round === 0 ? 'first feed' : `feed change ${round}`}: ${(json.length / 1e6).toFixed(1)} MB read and stored in ${importSeconds} s (${read.outcome}); ` +
        `matched ${summary.pairs} sets, ${summary.matches} matches, ${summary.organizations} organization recounted in ${(ms / 1000).toFixed(1)} s (${load()})`,
    );
  }
  matchTimes.sort((a, b) => a - b);
  console.log(
    `time to match after a feed change: median ${(matchTimes[Math.floor(matchTimes.length / 2)]! / 1000).toFixed(1)} s over ${matchTimes.length}`,
  );
  await sql`vacuum analyze`;
  const [stored] = await sql<
    { sets: number; bitmap_bytes: number; lists: number; list_entries: number; cves: number }[]
  >`
    select (select count(*)::int from vulnerability_matched_sets) as sets,
           (select coalesce(sum(octet_length(affected)), 0)::int from vulnerability_matched_sets) as bitmap_bytes,
           (select count(*)::int from vulnerability_entry_lists) as lists,
           (select coalesce(sum(cardinality(cves)), 0)::int from vulnerability_entry_lists) as list_entries,
           (select count(*)::int from organization_vulnerabilities where devices_affected > 0) as cves`;
  const perDevice = DEVICES * PACKAGES;
  const rowsStored = stored!.sets + stored!.lists + sizes!.packages;
  console.log(
    `rows stored: ${stored!.sets} match bitmaps (one per set and release, ${(stored!.bitmap_bytes / 1024).toFixed(0)} KiB in all, ` +
      `holding ${lastMatches} (set, CVE, source) matches) + ${stored!.lists} entry list(s) of ${stored!.list_entries} entries + ` +
      `${sizes!.packages} package rows = ${rowsStored} rows, against ${perDevice.toLocaleString('en')} device × package pairs ` +
      `(${((rowsStored / perDevice) * 100).toFixed(2)} %); ${stored!.cves} CVEs in the organization`,
  );

  const config = testConfig();
  const app = testApp(sql, config);
  const headers = { authorization: `Bearer ${config.adminToken}` };
  const timed = async (label: string, paths: () => string, calls: number) => {
    const times: number[] = [];
    for (let i = 0; i < calls + 3; i++) {
      const path = paths();
      const start = performance.now();
      const res = await app.request(path, { headers });
      const body = await res.json();
      if (res.status !== 200) {
        // Reported, and the next reads still measured.
        console.log(`${label.padEnd(44)} FAILED: ${path} answered ${res.status} ${JSON.stringify(body).slice(0, 200)}`);
        return;
      }
      if (i >= 3) times.push(performance.now() - start);
    }
    times.sort((a, b) => a - b);
    const p = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))]!.toFixed(1);
    console.log(`${label.padEnd(44)} p50 ${p(0.5)} ms, p99 ${p(0.99)} ms (${calls} calls)`);
  };
  await timed('organization list (first page)', () => `/api/v1/organizations/${orgId}/vulnerabilities`, CALLS);
  await timed(
    'organization list ?urgency=high&status=fixed_available',
    () => `/api/v1/organizations/${orgId}/vulnerabilities?urgency=high&status=fixed_available`,
    CALLS,
  );
  const [unit] = await sql<{ id: string }[]>`
    select id from org_units where organization_id = ${orgId} and not protected limit 1`;
  await timed(
    'organization list ?oe_id (a tenth: counted)',
    () => `/api/v1/organizations/${orgId}/vulnerabilities?oe_id=${unit!.id}`,
    CALLS,
  );
  await timed(
    'organization list ?group_id (a tenth: counted)',
    () => `/api/v1/organizations/${orgId}/vulnerabilities?group_id=${group!.id}`,
    CALLS,
  );
  await timed(
    'organization list ?oe_id&urgency=high&status=no_fix',
    () => `/api/v1/organizations/${orgId}/vulnerabilities?oe_id=${unit!.id}&urgency=high&status=no_fix`,
    CALLS,
  );
  const ids = (await sql<{ id: string }[]>`select id from devices order by random() limit 200`).map((r) => r.id);
  let next = 0;
  await timed(
    'device list (first page, 100 rows)',
    () => `/api/v1/devices/${ids[next++ % ids.length]}/vulnerabilities`,
    CALLS,
  );
  await timed(
    'device list ?include_unimportant=true&limit=500',
    () => `/api/v1/devices/${ids[next++ % ids.length]}/vulnerabilities?include_unimportant=true&limit=500`,
    CALLS,
  );
  await timed('device list filter ?cve=', () => `/api/v1/organizations/${orgId}/devices?cve=CVE-2025-10001`, 10);
  console.log(`reads done (${load()})`);
  await sql.end();
} finally {
  await pg.stop();
  await rm(stateDir, { recursive: true, force: true });
}
