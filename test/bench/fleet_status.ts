/**
 * Benchmark (not a test): what each device has, at one organization of 100,000 devices
 * (`--devices=N`): 5 catalog Merkmale (the Debian default template's), a tree of 50 org
 * units, 20 groups, desired-state changes for a third of the devices and reports for 90 %.
 * Prints, never asserts: server time (in-process, app.request) of GET …/fleet-status over
 * 50 calls (p50, p99), of the device list's first page with `convergence=failed` and
 * `sort=-last_checkin`, and the cost per entry of a 5-entry report's insert with the
 * outcomes trigger against the same insert with the trigger disabled, in the same run.
 * Run: npx tsx test/bench/fleet_status.ts [--devices=N]
 */
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSql } from '../../api/db/client.ts';
import { migrate } from '../../api/db/migrate.ts';
import { silentLogger } from '../../api/log.ts';
import { startEmbeddedPostgres } from '../../api/runtime/embedded_postgres.ts';
import { testApp, testConfig } from '../support/app.ts';
import { seedOrganization } from './seed_organization.ts';

const DEVICES = Number(process.argv.find((a) => a.startsWith('--devices='))?.slice('--devices='.length) ?? 100_000);
const CALLS = 50;
const REPORTS = 2_000;

const stateDir = await mkdtemp(join(tmpdir(), 'fleet-bench-status-'));
await chmod(stateDir, 0o711); // the postgres user must traverse into it when run as root
const pg = await startEmbeddedPostgres({ stateDir, database: 'fleet', log: silentLogger, ephemeral: true });
try {
  await migrate(pg.url, silentLogger);
  const sql = createSql(pg.url, { max: 4, timeoutSeconds: 600 });
  const t0 = performance.now();
  const orgId = await seedOrganization(sql, DEVICES);
  const [counts] = await sql<{ devices: number; outcomes: number; events: number }[]>`
    select (select count(*)::int from devices) as devices, (select count(*)::int from device_merkmal_outcomes) as outcomes,
           (select count(*)::int from device_merkmal_events) as events`;
  console.log(
    `seeded ${counts!.devices} devices, ${counts!.events} events, ${counts!.outcomes} outcome rows in ${((performance.now() - t0) / 1000).toFixed(0)} s`,
  );

  const config = testConfig();
  const app = testApp(sql, config);
  const headers = { authorization: `Bearer ${config.adminToken}` };
  const timed = async (label: string, path: string, calls: number) => {
    const times: number[] = [];
    let body: unknown;
    for (let i = 0; i < calls + 3; i++) {
      const t = performance.now();
      const res = await app.request(path, { headers });
      body = await res.json();
      if (res.status !== 200) throw new Error(`${path}: ${res.status} ${JSON.stringify(body)}`);
      if (i >= 3) times.push(performance.now() - t); // three warm-up calls
    }
    times.sort((a, b) => a - b);
    const p = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))]!.toFixed(1);
    console.log(`${label.padEnd(34)} p50 ${p(0.5)} ms, p99 ${p(0.99)} ms, max ${p(1)} ms (${calls} calls)`);
    return body;
  };
  const status = (await timed('fleet-status (organization)', `/api/v1/organizations/${orgId}/fleet-status`, CALLS)) as {
    devices: unknown;
  };
  console.log(`  ${JSON.stringify(status.devices)}`);
  const [unit] = await sql<
    { id: string }[]
  >`select id from org_units where organization_id = ${orgId} and parent_id is null and not protected limit 1`;
  const [group] = await sql<{ id: string }[]>`select id from groups where organization_id = ${orgId} limit 1`;
  await timed('fleet-status ?oe_id (a school)', `/api/v1/organizations/${orgId}/fleet-status?oe_id=${unit!.id}`, CALLS);
  await timed('fleet-status ?group_id', `/api/v1/organizations/${orgId}/fleet-status?group_id=${group!.id}`, CALLS);
  const list = (await timed(
    'list convergence=failed -last_checkin',
    `/api/v1/organizations/${orgId}/devices?convergence=failed&sort=-last_checkin`,
    CALLS,
  )) as { items: unknown[] };
  console.log(`  first page: ${list.items.length} devices`);
  await timed('list first page (serial)', `/api/v1/organizations/${orgId}/devices`, CALLS);

  // A report's insert: 5 entries in one statement, as the report route writes them, with
  // the outcomes trigger and with it disabled, in alternating rounds on distinct devices.
  const reserved = await sql.reserve();
  try {
    await reserved`
      create function pg_temp.bench_reports(devices uuid[]) returns double precision language plpgsql as $$
      declare t0 timestamptz := clock_timestamp(); d uuid;
      begin
        foreach d in array devices loop
          insert into device_merkmal_events (device_id, merkmal, type, payload)
          select d, m.key, 'applied', jsonb_build_object('detail', 'bench')
          from merkmale m where m.im_auftragskatalog order by m.key limit 5;
        end loop;
        return extract(epoch from clock_timestamp() - t0) * 1000;
      end $$`;
    const ids = (await reserved<{ id: string }[]>`select id from devices order by random() limit ${REPORTS * 6}`).map(
      (r) => r.id,
    );
    const totals = { trigger: 0, plain: 0 };
    for (let round = 0; round < 6; round++) {
      const batch = ids.slice(round * REPORTS, (round + 1) * REPORTS);
      const kind = round % 2 === 0 ? 'trigger' : 'plain';
      if (kind === 'plain')
        await reserved`alter table device_merkmal_events disable trigger device_merkmal_outcomes_record`;
      const [row] = await reserved<{ ms: number }[]>`select pg_temp.bench_reports(${batch}::uuid[]) as ms`;
      if (kind === 'plain')
        await reserved`alter table device_merkmal_events enable trigger device_merkmal_outcomes_record`;
      totals[kind] += row!.ms;
    }
    const perEntry = (ms: number) => (ms * 1000) / (3 * REPORTS * 5);
    console.log(
      `report of 5 entries, per entry: with the trigger ${perEntry(totals.trigger).toFixed(1)} µs, ` +
        `plain insert ${perEntry(totals.plain).toFixed(1)} µs, ratio ${(totals.trigger / totals.plain).toFixed(2)} × ` +
        `(${3 * REPORTS} reports each, server time)`,
    );
  } finally {
    reserved.release();
  }
  await sql.end();
} finally {
  await pg.stop();
  await rm(stateDir, { recursive: true, force: true });
}
