/**
 * Reading the security feeds: file:// files and folders, https:// with conditional
 * requests (nock), archives (.tar.gz, .zip), and failures that keep the last good data and
 * show their error; a feed change is matched again.
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import nock from 'nock';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../api/log.ts';
import { refreshFeed } from '../../api/vulnerabilities/feeds.ts';
import { refreshVulnerabilityFeeds, vulnerabilityMatchTask } from '../../jobs/tasks/vulnerabilities.ts';
import type { TaskDeps } from '../../jobs/worker_deps.ts';
import { createApiKey } from '../support/access.ts';
import { useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { insertDevice } from '../support/devices.ts';
import { missingTools } from '../support/tools.ts';
import {
  BOOKWORM,
  DEBIAN_SAMPLE,
  insertInventory,
  insertPackageSet,
  NOBLE,
  UBUNTU_SAMPLE_FOLDER,
} from '../support/vulnerabilities.ts';

const ctx = useTestApp();
const FEED_HOST = 'https://security.example.org';
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'fleet-vulndata-'));
  if (!nock.isActive()) nock.activate();
  nock.disableNetConnect();
  nock.enableNetConnect('127.0.0.1');
});
afterEach(() => {
  nock.cleanAll();
});
afterAll(async () => {
  nock.enableNetConnect();
  nock.restore();
  await rm(dir, { recursive: true, force: true });
});

async function feeds(token?: string) {
  return ctx.request('GET', '/api/v1/vulnerability-feeds', { token });
}

async function feedRow(name: string) {
  const res = await feeds();
  expect(res.status).toBe(200);
  return (res.body.items as Array<Record<string, unknown>>).find((f) => f.name === name)!;
}

async function entriesOf(feed: string) {
  const [row] = await ctx.sql<
    { n: number }[]
  >`select count(*)::int as n from vulnerability_entries where feed = ${feed}`;
  return row!.n;
}

const sample = () => readFile(fileURLToPath(DEBIAN_SAMPLE));

describe('file://', () => {
  it('reads the Debian sample, counts its entries, and skips a re-read of the same content', async () => {
    expect(await refreshFeed(ctx.sql, 'debian', DEBIAN_SAMPLE)).toEqual({ feed: 'debian', outcome: 'changed' });
    const row = await feedRow('debian');
    // 10 (CVE, source, release) entries; trixie's "0" (never affected) is counted, not stored.
    expect(row).toMatchObject({ source: DEBIAN_SAMPLE, last_error: null, entries: 10 });
    expect(await entriesOf('debian')).toBe(9);
    expect(await refreshFeed(ctx.sql, 'debian', DEBIAN_SAMPLE)).toEqual({ feed: 'debian', outcome: 'unchanged' });
    expect(new Date((await feedRow('debian')).last_success_at as string).getTime()).toBeGreaterThanOrEqual(
      new Date(row.last_success_at as string).getTime(),
    );
  });

  it('reads a folder of Ubuntu OSV records', async () => {
    expect((await refreshFeed(ctx.sql, 'ubuntu', UBUNTU_SAMPLE_FOLDER)).outcome).toBe('changed');
    expect(await feedRow('ubuntu')).toMatchObject({ entries: 3, last_error: null });
    const rows = await ctx.sql`
      select release, source, introduced, fixed_version, urgency from vulnerability_entries
       where feed = 'ubuntu' order by release, source`;
    expect(rows).toEqual([
      { release: '22.04', source: 'openssl', introduced: null, fixed_version: '3.0.2-0ubuntu1.14', urgency: 'low' },
      { release: '24.04', source: 'edk2', introduced: null, fixed_version: null, urgency: 'unknown' },
      { release: '24.04', source: 'openssl', introduced: null, fixed_version: '3.0.10-1ubuntu4', urgency: 'low' },
    ]);
  });

  it('reads the records as Ubuntu names them since OSV 1.7 (UBUNTU-CVE-…), and skips the USN notices beside them', async () => {
    const sample = JSON.parse(await readFile(join(fileURLToPath(UBUNTU_SAMPLE_FOLDER), 'CVE-2024-0727.json'), 'utf8'));
    const folder = await mkdtemp(join(dir, 'osv-1.7-'));
    await writeFile(
      join(folder, 'UBUNTU-CVE-2024-0727.json'),
      JSON.stringify({ ...sample, schema_version: '1.7.0', id: 'UBUNTU-CVE-2024-0727', upstream: ['CVE-2024-0727'] }),
    );
    await writeFile(join(folder, 'USN-6622-1.json'), JSON.stringify({ ...sample, id: 'USN-6622-1' }));
    await writeFile(join(folder, 'UBUNTU-TEMP-1.json'), JSON.stringify({ ...sample, id: 'UBUNTU-TEMP-1' }));
    expect((await refreshFeed(ctx.sql, 'ubuntu', pathToFileURL(folder).href)).outcome).toBe('changed');
    expect(await feedRow('ubuntu')).toMatchObject({ entries: 3, last_error: null });
    const rows = await ctx.sql`select distinct cve from vulnerability_entries where feed = 'ubuntu'`;
    expect(rows).toEqual([{ cve: 'CVE-2024-0727' }]);
  });

  it('keeps the last good data when a read fails to parse or to find its file, and shows the error', async () => {
    const broken = join(dir, 'broken.json');
    await writeFile(broken, '{"curl": {"CVE-2099-1": ');
    const failed = await refreshFeed(ctx.sql, 'debian', pathToFileURL(broken).href);
    expect(failed.outcome).toBe('failed');
    expect(await entriesOf('debian')).toBe(9);
    const row = await feedRow('debian');
    expect(row.last_error).toMatch(/JSON/);
    expect(row.entries).toBe(10);
    const missing = await refreshFeed(ctx.sql, 'debian', pathToFileURL(join(dir, 'nope.json')).href);
    expect(missing.error).toMatch(/ENOENT/);
    const empty = join(dir, 'empty.json');
    await writeFile(empty, '{}');
    expect((await refreshFeed(ctx.sql, 'debian', pathToFileURL(empty).href)).error).toBe('the feed holds no entries');
    expect(await entriesOf('debian')).toBe(9);
    // A good read clears the error.
    expect((await refreshFeed(ctx.sql, 'debian', DEBIAN_SAMPLE)).outcome).toBe('changed');
    expect((await feedRow('debian')).last_error).toBeNull();
  });
});

describe('https://', () => {
  it('asks conditionally: a 304 changes nothing and counts as a success', async () => {
    const body = await sample();
    const url = `${FEED_HOST}/tracker/data/json`;
    nock(FEED_HOST).get('/tracker/data/json').reply(200, body, {
      ETag: '"v1"',
      'Last-Modified': 'Sat, 28 Nov 2026 10:00:00 GMT',
    });
    // Another source: its content is read whole, whatever the last one held.
    expect((await refreshFeed(ctx.sql, 'debian', url)).outcome).toBe('changed');
    const before = await feedRow('debian');
    expect(before.source).toBe(url);
    let asked: Record<string, unknown> = {};
    nock(FEED_HOST)
      .get('/tracker/data/json')
      .reply(function () {
        asked = this.req.headers;
        return [304, ''];
      });
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(await refreshFeed(ctx.sql, 'debian', url)).toEqual({ feed: 'debian', outcome: 'unchanged' });
    expect(asked['if-none-match']).toBe('"v1"');
    expect(asked['if-modified-since']).toBe('Sat, 28 Nov 2026 10:00:00 GMT');
    const after = await feedRow('debian');
    expect(new Date(after.last_success_at as string).getTime()).toBeGreaterThan(
      new Date(before.last_success_at as string).getTime(),
    );
    expect(await entriesOf('debian')).toBe(9);
  });

  it('keeps the last good data on a server error and shows it', async () => {
    nock(FEED_HOST).get('/tracker/data/json').reply(503, 'down');
    const result = await refreshFeed(ctx.sql, 'debian', `${FEED_HOST}/tracker/data/json`);
    expect(result).toEqual({ feed: 'debian', outcome: 'failed', error: 'download failed: HTTP 503' });
    expect(await entriesOf('debian')).toBe(9);
    expect((await feedRow('debian')).last_error).toBe('download failed: HTTP 503');
    // Plain http is refused before any request.
    expect((await refreshFeed(ctx.sql, 'debian', 'http://security.example.org/json')).error).toMatch(/https/);
  });

  describe.skipIf(missingTools('python3'))('archives of OSV records', () => {
    /** An archive made by Python's tarfile / zipfile (pax headers, a long path, deflate). */
    function archive(kind: 'tar.gz' | 'zip'): Buffer {
      const folder = fileURLToPath(UBUNTU_SAMPLE_FOLDER);
      const out = join(dir, `osv.${kind}`);
      const long = `osv/cve/2024/${'nested-'.repeat(20)}/CVE-2024-0727.json`;
      const script =
        kind === 'tar.gz'
          ? 'import sys, tarfile\n' +
            'with tarfile.open(sys.argv[2], "w:gz", format=tarfile.PAX_FORMAT) as t:\n' +
            '    t.add(sys.argv[1] + "/CVE-2024-0727.json", arcname=sys.argv[3])\n' +
            '    t.add(sys.argv[1] + "/CVE-2024-0727.json", arcname="osv/usn/USN-6622-1.json")\n'
          : 'import sys, zipfile\n' +
            'with zipfile.ZipFile(sys.argv[2], "w", zipfile.ZIP_DEFLATED) as z:\n' +
            '    z.write(sys.argv[1] + "/CVE-2024-0727.json", arcname=sys.argv[3])\n' +
            '    z.writestr("osv/README.md", "not a record")\n';
      const made = spawnSync('python3', ['-c', script, folder, out, long], { encoding: 'utf8' });
      expect(made.status, made.stderr).toBe(0);
      return spawnSync('cat', [out], { maxBuffer: 1 << 24 }).stdout as Buffer;
    }

    it.each(['tar.gz', 'zip'] as const)('reads a .%s over https', async (kind) => {
      await ctx.sql`update vulnerability_feeds set content_sha256 = null where name = 'ubuntu'`;
      nock(FEED_HOST).get(`/osv.${kind}`).reply(200, archive(kind));
      expect((await refreshFeed(ctx.sql, 'ubuntu', `${FEED_HOST}/osv.${kind}`)).outcome).toBe('changed');
      expect(await feedRow('ubuntu')).toMatchObject({ entries: 3, last_error: null });
    });

    it('refuses a damaged archive and keeps the records it had', async () => {
      const damaged = archive('tar.gz').subarray(0, 40);
      nock(FEED_HOST).get('/osv.tar.gz').reply(200, damaged);
      const result = await refreshFeed(ctx.sql, 'ubuntu', `${FEED_HOST}/osv.tar.gz`);
      expect(result.outcome).toBe('failed');
      expect(await entriesOf('ubuntu')).toBe(3);
    });
  });
});

describe('the feeds list', () => {
  it("is the operator's: an organization key gets 403, none 401", async () => {
    const org = await createOrganization(ctx);
    const admin = (await createApiKey(ctx, org.id, 'admin')).key;
    const refused = await feeds(admin);
    expect(refused.status).toBe(403);
    expect(refused.body.error).toBe('forbidden');
    expect((await feeds(null as unknown as string)).status).toBe(401);
    expect(((await feeds()).body.items as Array<{ name: string }>).map((f) => f.name)).toEqual(['debian', 'ubuntu']);
  });
});

describe('the refresh task', () => {
  it('matches again after a feed change: a fix that now covers the installed version clears the device', async () => {
    const org = await createOrganization(ctx);
    const device = await insertDevice(ctx.sql, { organizationId: org.id });
    await insertInventory(
      ctx.sql,
      device,
      await insertPackageSet(ctx.sql, [{ name: 'fleet-test-pkg', version: '1.0-1' }]),
      BOOKWORM,
    );
    const ubuntu = await insertDevice(ctx.sql, { organizationId: org.id });
    await insertInventory(
      ctx.sql,
      ubuntu,
      await insertPackageSet(ctx.sql, [{ name: 'openssl', version: '3.0.10-1ubuntu3' }]),
      NOBLE,
    );
    const config = { debian: DEBIAN_SAMPLE, ubuntu: UBUNTU_SAMPLE_FOLDER, intervalMinutes: 60 };
    const first = await refreshVulnerabilityFeeds(ctx.sql, config, silentLogger, { force: true });
    expect(first.matched.pairs).toBe(2);
    const cves = async () =>
      (await ctx.request('GET', `/api/v1/devices/${device.id}/vulnerabilities`)).body.items.map(
        (r: { cve: string }) => r.cve,
      );
    expect(await cves()).toEqual(['CVE-2099-0001', 'CVE-2099-0002']);
    // Not due again within the interval: nothing read, nothing matched.
    const idle = await refreshVulnerabilityFeeds(ctx.sql, config, silentLogger);
    expect(idle.feeds).toEqual([]);
    expect(idle.matched.pairs).toBe(0);

    const changed = JSON.parse((await sample()).toString('utf8'));
    changed['fleet-test-pkg']['CVE-2099-0001'].releases.bookworm.fixed_version = '1.0-1';
    const file = join(dir, 'changed.json');
    await writeFile(file, JSON.stringify(changed));
    await ctx.sql`update vulnerability_feeds set last_attempt_at = now() - interval '61 minutes'`;
    const second = await refreshVulnerabilityFeeds(
      ctx.sql,
      { ...config, debian: pathToFileURL(file).href },
      silentLogger,
    );
    expect(second.feeds.map((f) => [f.feed, f.outcome])).toEqual([
      ['debian', 'changed'],
      ['ubuntu', 'unchanged'],
    ]);
    expect(second.matched.pairs).toBe(1); // the Debian set only
    expect(await cves()).toEqual(['CVE-2099-0002']);
    const listed = await ctx.request('GET', `/api/v1/organizations/${org.id}/vulnerabilities?q=CVE-2099-0001`);
    expect(listed.body.items).toEqual([]);
  });
});

describe('the vulnerability_match task (queued by an inventory upload)', () => {
  it("matches the organization's new sets once, recounts it, and announces a CVE once however often it runs", async () => {
    const org = await createOrganization(ctx);
    await ctx.request('POST', `/api/v1/organizations/${org.id}/webhooks`, {
      body: { url: 'https://hooks.example.com/fleet', events: ['vulnerability.detected'] },
    });
    const device = await insertDevice(ctx.sql, { organizationId: org.id });
    const set = await insertPackageSet(ctx.sql, [{ name: 'epoch-test', version: '2.0-1' }]);
    await insertInventory(ctx.sql, device, set, BOOKWORM);
    const task = vulnerabilityMatchTask({ sql: ctx.sql, log: silentLogger } as unknown as TaskDeps);
    const payload = { organization_id: org.id };
    const helpers = {} as Parameters<typeof task>[1];
    await task(payload, helpers);
    await task(payload, helpers);
    const [matched] = await ctx.sql<{ n: number; at: Date }[]>`
      select count(*)::int as n, max(matched_at) as at from vulnerability_matched_sets where package_set_id = ${set}`;
    expect(matched!.n).toBe(1);
    const events = await ctx.sql`
      select data from webhook_events where organization_id = ${org.id} and type = 'vulnerability.detected'`;
    expect(events.map((e) => e.data)).toEqual([{ cve: 'CVE-2099-0005', urgency: 'medium', devices_affected: 1 }]);
    await expect(task({ package_set_id: set }, helpers)).rejects.toThrow(/organization_id/);
  });
});
