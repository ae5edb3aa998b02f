/**
 * Benchmark (not a test): server time to render the portal's device list (first page of 50,
 * a stale filter, a broad search and a search that finds ten) for one organization with
 * 10,000 devices (`--devices=N`), in-process (app.request) against an embedded PostgreSQL.
 * Run: npx tsx test/bench/portal_device_list.ts [--devices=N]
 */
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSql } from '../../api/db/client.ts';
import { migrate } from '../../api/db/migrate.ts';
import { randomToken } from '../../api/http/crypto.ts';
import { silentLogger } from '../../api/log.ts';
import { startEmbeddedPostgres } from '../../api/runtime/embedded_postgres.ts';
import { testApp, testConfig } from '../support/app.ts';
import { seedFleet } from './seed_fleet.ts';

const DEVICES = Number(process.argv.find((a) => a.startsWith('--devices='))?.slice('--devices='.length) ?? 10_000);
const ROUNDS = 30;

const stateDir = await mkdtemp(join(tmpdir(), 'fleet-bench-portal-'));
await chmod(stateDir, 0o711); // the postgres user must traverse into it when run as root
const pg = await startEmbeddedPostgres({ stateDir, database: 'fleet', log: silentLogger, ephemeral: true });
try {
  await migrate(pg.url, silentLogger);
  const sql = createSql(pg.url, { max: 4, timeoutSeconds: 600 });
  const secrets = Array.from({ length: DEVICES }, () => randomToken(16));
  await seedFleet(sql, secrets, { organizations: 1 });
  const [org] = await sql<{ id: string }[]>`select id from organizations limit 1`;
  const config = testConfig();
  const app = testApp(sql, config);
  const created = await app.request(`/api/v1/organizations/${org!.id}/api-keys`, {
    method: 'POST',
    headers: { authorization: `Bearer ${config.adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'bench', role: 'viewer' }),
  });
  const { key } = (await created.json()) as { key: string };
  const login = await app.request('/portal/login');
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await login.text())![1]!;
  const loginCookie = login.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
  const signedIn = await app.request('/portal/login', {
    method: 'POST',
    headers: { cookie: loginCookie, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ _csrf: csrf, key }).toString(),
  });
  const cookie = signedIn.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .find((c) => c!.startsWith('fleet_session='))!;
  const [count] = await sql<{ n: number }[]>`select count(*)::int as n from devices`;
  console.log(`devices in the organization: ${count!.n}`);
  for (const [label, path] of [
    ['first page (50)', '/portal/devices'],
    ['stale filter', '/portal/devices?stale=true'],
    ['search q=b', '/portal/devices?q=b'],
    // The serial prefix of ten devices in the middle (seed_fleet.ts names them BENCH-0000001 on).
    [
      'search, 10 found',
      `/portal/devices?q=BENCH-${String(Math.floor(DEVICES / 2))
        .padStart(7, '0')
        .slice(0, 6)}`,
    ],
  ] as const) {
    const times: number[] = [];
    for (let i = 0; i < ROUNDS + 3; i++) {
      const t = performance.now();
      const res = await app.request(path, { headers: { cookie } });
      const html = await res.text();
      if (res.status !== 200 || !html.includes('</html>')) throw new Error(`${path}: ${res.status}`);
      if (i >= 3) times.push(performance.now() - t); // three warm-up rounds
    }
    if (process.env.BENCH_TRACE) console.log(`${label}: ${times.map((t) => t.toFixed(0)).join(' ')}`);
    times.sort((a, b) => a - b);
    const p = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))]!.toFixed(1);
    console.log(`${label.padEnd(16)} median ${p(0.5)} ms, p90 ${p(0.9)} ms, max ${p(1)} ms (${ROUNDS} rounds)`);
  }
  await sql.end();
} finally {
  await pg.stop();
  await rm(stateDir, { recursive: true, force: true });
}
