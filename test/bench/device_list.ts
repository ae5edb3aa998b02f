/**
 * Benchmark (not a test): the portal's device list and its bulk actions at one
 * organization of 10,000 devices (`--devices=N`, e.g. 100000), seeded as fleet_status.ts
 * seeds it (seed_organization.ts). Prints, never asserts: server time (in-process,
 * app.request, an admin's session) p50/p99 over 50 renders of the first page, of the
 * first page sorted by last check-in, and of pages deep in a filtered, sorted list (found
 * by following "next" links); then a bulk action (add to a group, then select a Merkmal)
 * over 5,000 devices (`--bulk=N`) of one unit, confirmed and applied as the portal's
 * forms do: total time, per device, and the transactions it took.
 * Run: npx tsx test/bench/device_list.ts [--devices=N] [--bulk=N]
 */
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSql } from '../../api/db/client.ts';
import { migrate } from '../../api/db/migrate.ts';
import { silentLogger } from '../../api/log.ts';
import { BULK_CHUNK } from '../../api/access/bulk.ts';
import { startEmbeddedPostgres } from '../../api/runtime/embedded_postgres.ts';
import { testApp, testConfig } from '../support/app.ts';
import { seedOrganization } from './seed_organization.ts';

const arg = (name: string, fallback: number) =>
  Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback);
const DEVICES = arg('devices', 10_000);
const BULK = Math.min(arg('bulk', 5_000), DEVICES);
const RENDERS = 50;

const stateDir = await mkdtemp(join(tmpdir(), 'fleet-bench-device-list-'));
await chmod(stateDir, 0o711); // the postgres user must traverse into it when run as root
const pg = await startEmbeddedPostgres({ stateDir, database: 'fleet', log: silentLogger, ephemeral: true });
try {
  await migrate(pg.url, silentLogger);
  const sql = createSql(pg.url, { max: 4, timeoutSeconds: 600 });
  const t0 = performance.now();
  const orgId = await seedOrganization(sql, DEVICES);
  // The bulk action's devices: the first BULK devices, in a unit of their own.
  const [bulkUnit] = await sql<{ id: string }[]>`
    insert into org_units (organization_id, name) values (${orgId}, 'Sammelaktion') returning id`;
  await sql`
    update devices set oe_id = ${bulkUnit!.id}
    where id in (select id from devices where organization_id = ${orgId} order by serial limit ${BULK})`;
  await sql`vacuum analyze`;
  console.log(`seeded ${DEVICES} devices in one organization in ${((performance.now() - t0) / 1000).toFixed(0)} s`);

  const config = testConfig();
  const app = testApp(sql, config);
  const created = await app.request(`/api/v1/organizations/${orgId}/api-keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${config.adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'bench', role: 'admin' }),
  });
  const { key } = (await created.json()) as { key: string };
  const login = await app.request('/portal/login');
  const loginCsrf = /name="_csrf" value="([^"]+)"/.exec(await login.text())![1]!;
  const loginCookie = login.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
  const signedIn = await app.request('/portal/login', {
    method: 'POST',
    headers: { cookie: loginCookie, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ _csrf: loginCsrf, key }).toString(),
  });
  const cookie = signedIn.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .find((c) => c!.startsWith('fleet_session='))!;
  const get = async (path: string) => {
    const res = await app.request(path, { headers: { cookie } });
    const html = await res.text();
    if (res.status !== 200 || !html.includes('</html>')) throw new Error(`${path}: ${res.status}`);
    return html;
  };
  const next = (html: string) => /<a href="([^"]+)" rel="next">/.exec(html)?.[1]?.replaceAll('&amp;', '&') ?? null;
  /** The page `pages` "next" clicks from `path`. */
  const deep = async (path: string, pages: number) => {
    let at = path;
    for (let i = 0; i < pages; i++) {
      const link = next(await get(at));
      if (link === null) break;
      at = link;
    }
    return at;
  };
  const timed = async (label: string, path: string, renders = RENDERS) => {
    const times: number[] = [];
    let html = '';
    for (let i = 0; i < renders + 3; i++) {
      const t = performance.now();
      html = await get(path);
      if (i >= 3) times.push(performance.now() - t); // three warm-up renders
    }
    times.sort((a, b) => a - b);
    const p = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))]!.toFixed(1);
    const total = /data-field="total"><strong>([^<]+)</.exec(html)?.[1] ?? '?';
    console.log(
      `${label.padEnd(52)} p50 ${p(0.5)} ms, p99 ${p(0.99)} ms, max ${p(1)} ms (${renders} renders; ${total})`,
    );
  };

  const [unit] = await sql<{ id: string }[]>`
    select id from org_units where organization_id = ${orgId} and name = 'Klasse 1' order by id limit 1`;
  await timed('first page (creation order)', '/portal/devices');
  await timed('first page, sort=-last_checkin', '/portal/devices?sort=-last_checkin');
  await timed('first page, status=active, sort=-last_checkin', '/portal/devices?status=active&sort=-last_checkin');
  const deepActive = await deep('/portal/devices?status=active&sort=-last_checkin', 20);
  await timed('page 21, status=active, sort=-last_checkin', deepActive);
  const deepSerial = await deep('/portal/devices?q=BENCH&sort=serial', 40);
  await timed('page 41, q=BENCH, sort=serial', deepSerial);
  const deepUnit = await deep(`/portal/devices?oe_id=${unit!.id}&sort=-created_at`, 3);
  await timed('page 4, one unit, sort=-created_at', deepUnit);
  // A unit's filter is its subtree: a top unit holds a fifth of the fleet, in its nine classes.
  const [school] = await sql<{ id: string }[]>`
    select id from org_units where organization_id = ${orgId} and name = 'Schule 1' and parent_id is null`;
  await timed('first page, a top unit (subtree), sort=serial', `/portal/devices?oe_id=${school!.id}&sort=serial`);
  const deepSchool = await deep(`/portal/devices?oe_id=${school!.id}&sort=-created_at`, 10);
  await timed('page 11, a top unit (subtree), sort=-created_at', deepSchool);
  await timed('first page, stale=true', '/portal/devices?stale=true');
  await timed('first page, q=b (a broad search)', '/portal/devices?q=b');
  // The serial prefix of ten devices in the middle (seed_organization.ts names them BENCH-0000001 on).
  const tenth = String(Math.floor(DEVICES / 2))
    .padStart(7, '0')
    .slice(0, 6);
  await timed('first page, q=BENCH-<6 digits> (10 found)', `/portal/devices?q=BENCH-${tenth}`);
  // The convergence filter reads every device's catalog (fleet_status.ts's figure, made fast elsewhere): fewer renders.
  await timed(
    'first page, convergence=failed, sort=-last_checkin',
    '/portal/devices?convergence=failed&sort=-last_checkin',
    5,
  );

  // Bulk actions over the unit's devices, as an admin confirms and applies them (none with --bulk=0).
  const [group] = await sql<{ id: string }[]>`
    insert into groups (organization_id, name) values (${orgId}, 'Sammelgruppe') returning id`;
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await get('/portal/devices'))![1]!;
  for (const [label, confirmPath] of BULK === 0
    ? []
    : ([
        [
          'add to a group',
          `/portal/devices/bulk?oe_id=${bulkUnit!.id}&action=group-add&target_group=${group!.id}&scope=filter`,
        ],
        [
          'select a Merkmal',
          `/portal/devices/bulk?oe_id=${bulkUnit!.id}&action=select&target_merkmal=qgis&scope=filter`,
        ],
      ] as const)) {
    let t = performance.now();
    const confirm = await get(confirmPath);
    const confirmMs = performance.now() - t;
    const count = /data-field="count">([^<]+)</.exec(confirm)?.[1];
    const form = /<form method="post" action="([^"]+)">([\s\S]*?)<\/form>/.exec(
      confirm.slice(confirm.indexOf('<main>')),
    )!;
    const fields = new URLSearchParams({ _csrf: csrf });
    for (const m of form[2]!.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"/g)) {
      if (m[1] !== '_csrf') fields.set(m[1]!, m[2]!.replaceAll('&amp;', '&'));
    }
    t = performance.now();
    const res = await app.request(form[1]!.replaceAll('&amp;', '&'), {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: fields.toString(),
    });
    const result = await res.text();
    const ms = performance.now() - t;
    const changed = /data-field="changed">([^<]+)</.exec(result)?.[1];
    const [audit] = await sql<{ n: number }[]>`
      select count(*)::int as n from audit_events where organization_id = ${orgId}
      and action = ${label === 'add to a group' ? 'group.add_device' : 'catalog.select'}`;
    console.log(
      `bulk ${label.padEnd(16)} confirmation ${confirmMs.toFixed(0)} ms (${count}); applied ${res.status} in ` +
        `${(ms / 1000).toFixed(1)} s: ${changed} changed, ${((ms * 1000) / BULK).toFixed(0)} µs per device, ` +
        `${audit!.n} audit rows, in ${Math.ceil(BULK / BULK_CHUNK)} transactions of at most ${BULK_CHUNK} devices`,
    );
  }
  await sql.end();
} finally {
  await pg.stop();
  await rm(stateDir, { recursive: true, force: true });
}
