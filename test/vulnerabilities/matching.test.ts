/**
 * Matching the security samples against devices' package sets: every case the samples hold
 * (test/fixtures/vulndata/README.md), read back through the API as a device's and an
 * organization's vulnerabilities, and the webhook `vulnerability.detected` once per CVE.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { refreshFeed } from '../../api/vulnerabilities/feeds.ts';
import { affects, matchOutdated } from '../../api/vulnerabilities/matching.ts';
import { createApiKey } from '../support/access.ts';
import { useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { addToGroup, insertDevice, insertGroup, insertOrgUnit } from '../support/devices.ts';
import {
  BOOKWORM,
  DEBIAN_SAMPLE,
  insertInventory,
  insertPackageSet,
  JAMMY,
  NOBLE,
  TRIXIE,
  UBUNTU_SAMPLE_FOLDER,
} from '../support/vulnerabilities.ts';

const ctx = useTestApp();

/** A bookworm desktop: an old curl, the test package, the epoch and tilde packages. */
const OLD_BOOKWORM = [
  { name: 'curl', version: '7.88.1-10+deb12u3' },
  { name: 'libcurl4', version: '7.88.1-10+deb12u3', source: 'curl' },
  { name: 'libcurl3-gnutls', version: '7.88.1-10+deb12u3', source: 'curl' },
  { name: 'fleet-test-pkg', version: '1.0-1' },
  { name: 'epoch-test', version: '2.0-1' },
  { name: 'tilde-test', version: '1.2~rc1-1' },
  { name: 'bash', version: '5.2.15-2+b7', source: 'bash', source_version: '5.2.15-2' },
];
/** The same, updated: curl deb12u15, the fixed test package, the released tilde package. */
const NEW_BOOKWORM = [
  { name: 'curl', version: '7.88.1-10+deb12u15' },
  { name: 'libcurl4', version: '7.88.1-10+deb12u15', source: 'curl' },
  { name: 'fleet-test-pkg', version: '1.1-1' },
  { name: 'tilde-test', version: '1.2-1' },
];

let org: { id: string };
const devices: Record<string, string> = {};
let viewerKey: string;

async function deviceWith(name: string, packages: typeof OLD_BOOKWORM, os = BOOKWORM, oeId?: string) {
  const device = await insertDevice(ctx.sql, { organizationId: org.id, ...(oeId ? { oeId } : {}) });
  await insertInventory(ctx.sql, device, await insertPackageSet(ctx.sql, packages), os);
  devices[name] = device.id;
  return device;
}

async function vulnerabilitiesOf(name: string, query = '', token?: string) {
  const res = await ctx.request('GET', `/api/v1/devices/${devices[name]}/vulnerabilities${query}`, { token });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.items as Array<Record<string, unknown>>;
}

let unit: string;
let group: string;

beforeAll(async () => {
  org = await createOrganization(ctx);
  viewerKey = (await createApiKey(ctx, org.id, 'viewer')).key;
  const hook = await ctx.request('POST', `/api/v1/organizations/${org.id}/webhooks`, {
    body: { url: 'https://hooks.example.com/fleet', events: ['vulnerability.detected'] },
  });
  expect(hook.status, JSON.stringify(hook.body)).toBe(201);
  expect((await refreshFeed(ctx.sql, 'debian', DEBIAN_SAMPLE)).outcome).toBe('changed');
  expect((await refreshFeed(ctx.sql, 'ubuntu', UBUNTU_SAMPLE_FOLDER)).outcome).toBe('changed');
  unit = await insertOrgUnit(ctx.sql, org.id, 'Schule');
  group = await insertGroup(ctx.sql, org.id);
  await deviceWith('old', OLD_BOOKWORM, BOOKWORM, unit);
  await deviceWith('old2', OLD_BOOKWORM);
  await deviceWith('new', NEW_BOOKWORM);
  await addToGroup(ctx.sql, group, devices.new!);
  await deviceWith('trixie', OLD_BOOKWORM, TRIXIE);
  await deviceWith(
    'noble',
    [
      { name: 'openssl', version: '3.0.10-1ubuntu2' },
      { name: 'libssl3', version: '3.0.10-1ubuntu2', source: 'openssl' },
      { name: 'ovmf', version: '2024.02-2', source: 'edk2' },
    ],
    NOBLE,
  );
  await deviceWith('jammy-old', [{ name: 'libssl3', version: '3.0.2-0ubuntu1.9', source: 'openssl' }], JAMMY);
  await deviceWith('jammy-new', [{ name: 'libssl3', version: '3.0.2-0ubuntu1.14', source: 'openssl' }], JAMMY);
  const summary = await matchOutdated(ctx.sql);
  // Two devices share one set: matched once.
  expect(summary.pairs).toBe(6);
});

describe('a device affected by the samples', () => {
  it('lists fixed_available and no_fix rows by source package, worst urgency first, unimportant left out', async () => {
    const rows = await vulnerabilitiesOf('old');
    expect(rows.map((r) => [r.cve, r.urgency, r.status])).toEqual([
      ['CVE-2023-38545', 'high', 'fixed_available'],
      ['CVE-2099-0001', 'high', 'fixed_available'],
      ['CVE-2099-0005', 'medium', 'fixed_available'], // an epoch: 1:0.9-1 > 2.0-1
      ['CVE-2099-0101', 'medium', 'fixed_available'],
      ['CVE-2099-0002', 'low', 'no_fix'],
      ['CVE-2099-0006', 'unknown', 'fixed_available'], // "not yet assigned"; 1.2~rc1-1 < 1.2-1
    ]);
    expect(rows[0]).toEqual({
      cve: 'CVE-2023-38545',
      urgency: 'high',
      status: 'fixed_available',
      source: 'curl',
      installed_version: '7.88.1-10+deb12u3',
      fixed_version: '7.88.1-10+deb12u4',
      binaries: ['curl', 'libcurl3-gnutls', 'libcurl4'],
    });
    expect(rows.find((r) => r.cve === 'CVE-2099-0002')).toMatchObject({
      fixed_version: null,
      binaries: ['fleet-test-pkg'],
    });
  });

  it('shows nodsa/ignored and unimportant entries as unimportant only when asked', async () => {
    const all = await vulnerabilitiesOf('old', '?include_unimportant=true');
    expect(all.filter((r) => r.urgency === 'unimportant').map((r) => r.cve)).toEqual([
      'CVE-2099-0003',
      'CVE-2099-0004',
    ]);
    expect(all).toHaveLength(8);
    expect((await vulnerabilitiesOf('old', '?urgency=unimportant')).map((r) => r.cve)).toEqual([
      'CVE-2099-0003',
      'CVE-2099-0004',
    ]);
  });

  it('filters by urgency (one or several, comma-separated) and status', async () => {
    expect((await vulnerabilitiesOf('old', '?urgency=high')).map((r) => r.cve)).toEqual([
      'CVE-2023-38545',
      'CVE-2099-0001',
    ]);
    expect((await vulnerabilitiesOf('old', '?urgency=low,unknown')).map((r) => r.cve)).toEqual([
      'CVE-2099-0002',
      'CVE-2099-0006',
    ]);
    expect((await vulnerabilitiesOf('old', '?status=no_fix')).map((r) => r.cve)).toEqual(['CVE-2099-0002']);
  });

  it('compares versions as dpkg does: deb12u15 is fixed for deb12u4 but not for deb12u16; 1.1-1 is the fix itself', async () => {
    const rows = await vulnerabilitiesOf('new', '?include_unimportant=true');
    // Entries without a fix (open) affect every installed version.
    expect(rows.map((r) => [r.cve, r.installed_version, r.status])).toEqual([
      ['CVE-2099-0101', '7.88.1-10+deb12u15', 'fixed_available'],
      ['CVE-2099-0002', '1.1-1', 'no_fix'],
      ['CVE-2099-0003', '1.1-1', 'no_fix'],
      ['CVE-2099-0004', '1.1-1', 'no_fix'],
    ]);
  });

  it('finds nothing for a release the entries do not name, nor where the release was never affected (fixed "0")', async () => {
    // trixie: only tilde-test names it, with fixed_version "0".
    expect(await vulnerabilitiesOf('trixie', '?include_unimportant=true')).toEqual([]);
  });

  it('matches Ubuntu OSV records: a fixed range, an introduced-only range (no fix, no priority: unknown)', async () => {
    expect(await vulnerabilitiesOf('noble')).toEqual(
      [
        {
          cve: 'CVE-2024-0727',
          urgency: 'low',
          status: 'fixed_available',
          source: 'openssl',
          installed_version: '3.0.10-1ubuntu2',
          fixed_version: '3.0.10-1ubuntu4',
          binaries: ['libssl3', 'openssl'],
        },
        {
          cve: 'CVE-2024-0727',
          urgency: 'unknown',
          status: 'no_fix',
          source: 'edk2',
          installed_version: '2024.02-2',
          fixed_version: null,
          binaries: ['ovmf'],
        },
      ].sort((a, b) => (a.urgency === b.urgency ? 0 : a.urgency === 'low' ? -1 : 1)),
    );
    // 1.9 < 1.14 as numbers, not as text.
    expect((await vulnerabilitiesOf('jammy-old')).map((r) => r.fixed_version)).toEqual(['3.0.2-0ubuntu1.14']);
    expect(await vulnerabilitiesOf('jammy-new')).toEqual([]);
  });

  it('pages with a cursor in the same order', async () => {
    const first = await ctx.request('GET', `/api/v1/devices/${devices.old}/vulnerabilities?limit=4`);
    expect(first.body.items).toHaveLength(4);
    const second = await ctx.request(
      'GET',
      `/api/v1/devices/${devices.old}/vulnerabilities?limit=4&cursor=${first.body.next_cursor}`,
    );
    expect(second.body.next_cursor).toBeNull();
    expect([...first.body.items, ...second.body.items].map((r: { cve: string }) => r.cve)).toEqual(
      (await vulnerabilitiesOf('old')).map((r) => r.cve),
    );
    const bad = await ctx.request('GET', `/api/v1/devices/${devices.old}/vulnerabilities?cursor=bm9wZQ`);
    expect(bad.status).toBe(400);
  });
});

describe('introduced-only ranges', () => {
  it('affect a version from `introduced` on, never one before', () => {
    const entry = { introduced: '2.0-1', fixed: null };
    expect(affects('1.9-1', entry)).toBe(false);
    expect(affects('2.0-1', entry)).toBe(true);
    expect(affects('1:1.0-1', entry)).toBe(true);
    const ranged = { introduced: '2.0-1', fixed: '2.0-3' };
    expect([affects('2.0-2', ranged), affects('2.0-3', ranged), affects('2.0~rc1-1', ranged)]).toEqual([
      true,
      false,
      false,
    ]);
  });
});

describe("the organization's vulnerabilities", () => {
  async function list(query = '', token?: string) {
    const res = await ctx.request('GET', `/api/v1/organizations/${org.id}/vulnerabilities${query}`, { token });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.items as Array<Record<string, unknown>>;
  }

  it('counts devices per CVE, most devices first, with the worst urgency of its rows and its sources', async () => {
    const items = await list();
    const byCve = Object.fromEntries(items.map((i) => [i.cve, i]));
    // trixie is named by neither: old, old2 and new each; ties by CVE.
    expect(items.slice(0, 2)).toMatchObject([
      { cve: 'CVE-2099-0002', devices_affected: 3, devices_fix_available: 0 },
      { cve: 'CVE-2099-0101', devices_affected: 3, devices_fix_available: 3 },
    ]);
    expect(byCve['CVE-2024-0727']).toMatchObject({
      urgency: 'low',
      sources: ['edk2', 'openssl'],
      devices_affected: 2,
      devices_fix_available: 2,
    });
    expect(byCve['CVE-2023-38545']).toMatchObject({ urgency: 'high', sources: ['curl'], devices_affected: 2 });
    expect(byCve['CVE-2099-0003']).toBeUndefined();
    expect(byCve['CVE-2099-0002']).toMatchObject({ devices_affected: 3, devices_fix_available: 0 });
    expect(new Date(byCve['CVE-2023-38545']!.first_seen_at as string).getTime()).toBeLessThanOrEqual(Date.now());
    const counts = items.map((i) => i.devices_affected as number);
    expect(counts).toEqual([...counts].sort((a, b) => b - a));
  });

  it('filters by urgency, status, CVE prefix, unimportant, org unit subtree and group', async () => {
    expect((await list('?urgency=high')).map((i) => i.cve).sort()).toEqual(['CVE-2023-38545', 'CVE-2099-0001']);
    expect((await list('?status=no_fix')).map((i) => i.cve).sort()).toEqual(['CVE-2024-0727', 'CVE-2099-0002']);
    expect((await list('?q=cve-2024')).map((i) => i.cve)).toEqual(['CVE-2024-0727']);
    expect((await list('?include_unimportant=true&urgency=unimportant')).map((i) => i.cve).sort()).toEqual([
      'CVE-2099-0003',
      'CVE-2099-0004',
    ]);
    const inUnit = await list(`?oe_id=${unit}`);
    expect(inUnit.find((i) => i.cve === 'CVE-2023-38545')).toMatchObject({ devices_affected: 1 });
    expect((await list(`?group_id=${group}`)).map((i) => [i.cve, i.devices_affected])).toEqual([
      ['CVE-2099-0002', 1],
      ['CVE-2099-0101', 1],
    ]);
  });

  it('is read by a viewer key; another organization gets 404, a bad filter 400', async () => {
    expect((await list('', viewerKey)).length).toBeGreaterThan(0);
    expect((await vulnerabilitiesOf('old', '', viewerKey)).length).toBe(6);
    const other = await createOrganization(ctx);
    const otherKey = (await createApiKey(ctx, other.id, 'admin')).key;
    const foreign = await ctx.request('GET', `/api/v1/devices/${devices.old}/vulnerabilities`, { token: otherKey });
    expect(foreign.status).toBe(404);
    expect(foreign.body.error).toBe('not_found');
    const foreignOrg = await ctx.request('GET', `/api/v1/organizations/${org.id}/vulnerabilities`, { token: otherKey });
    expect(foreignOrg.status).toBe(404);
    for (const query of ['?urgency=severe', '?urgency=high,', '?status=open', '?include_unimportant=yes', '?q=%25']) {
      const res = await ctx.request('GET', `/api/v1/organizations/${org.id}/vulnerabilities${query}`);
      expect(res.status, query).toBe(400);
    }
    const otherUnit = await insertOrgUnit(ctx.sql, other.id, 'Fremd');
    const mismatch = await ctx.request('GET', `/api/v1/organizations/${org.id}/vulnerabilities?oe_id=${otherUnit}`);
    expect(mismatch.status).toBe(422);
  });

  it('answers 404 no_inventory for a device without inventory, 404 not_found for an unknown one', async () => {
    const bare = await insertDevice(ctx.sql, { organizationId: org.id });
    const res = await ctx.request('GET', `/api/v1/devices/${bare.id}/vulnerabilities`);
    expect(res.status).toBe(404);
    expect(res.body.error).toBe('no_inventory');
    const unknown = await ctx.request('GET', `/api/v1/devices/${crypto.randomUUID()}/vulnerabilities`);
    expect(unknown.body.error).toBe('not_found');
  });

  it('filters the device list by CVE (unimportant ones too)', async () => {
    const ids = async (cve: string) => {
      const res = await ctx.request('GET', `/api/v1/organizations/${org.id}/devices?cve=${cve}`);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return (res.body.items as Array<{ id: string }>).map((d) => d.id).sort();
    };
    expect(await ids('CVE-2023-38545')).toEqual([devices.old, devices.old2].sort());
    expect(await ids('cve-2099-0004')).toEqual([devices.old, devices.old2, devices.new].sort());
    expect(await ids('CVE-2024-0727')).toEqual([devices.noble, devices['jammy-old']].sort());
    expect((await ctx.request('GET', `/api/v1/organizations/${org.id}/devices?cve=openssl`)).status).toBe(400);
  });

  it('counts security updates, reboots and high vulnerabilities in the fleet status', async () => {
    await ctx.sql`update device_inventories set security_pending_count = 3 where device_id = ${devices.old!}`;
    await ctx.sql`update device_inventories set reboot_required = true where device_id = ${devices.noble!}`;
    const res = await ctx.request('GET', `/api/v1/organizations/${org.id}/fleet-status`);
    expect(res.status).toBe(200);
    // high or critical: old and old2 (curl, fleet-test-pkg).
    expect(res.body.updates).toEqual({ security_pending: 1, reboot_required: 1, vulnerable_high: 2 });
  });
});

describe('vulnerability.detected', () => {
  async function detected() {
    return ctx.sql<{ data: { cve: string; urgency: string; devices_affected: number } }[]>`
      select data from webhook_events where organization_id = ${org.id} and type = 'vulnerability.detected'
      order by data ->> 'cve'`;
  }

  it('is emitted once per CVE when its first device became affected, never for unimportant ones', async () => {
    const events = await detected();
    expect(events.map((e) => e.data.cve)).toEqual([
      'CVE-2023-38545',
      'CVE-2024-0727',
      'CVE-2099-0001',
      'CVE-2099-0002',
      'CVE-2099-0005',
      'CVE-2099-0006',
      'CVE-2099-0101',
    ]);
    expect(events[0]!.data).toEqual({ cve: 'CVE-2023-38545', urgency: 'high', devices_affected: 2 });
  });

  it('is not emitted again when more devices become affected or the match runs again', async () => {
    await deviceWith('old3', OLD_BOOKWORM); // a known set: nothing to match, the organization recounted
    const again = await matchOutdated(ctx.sql, { organizations: [org.id] });
    expect(again.detected).toBe(0);
    expect((await detected()).length).toBe(7);
    const items = (await ctx.request('GET', `/api/v1/organizations/${org.id}/vulnerabilities?q=CVE-2023`)).body.items;
    expect(items[0]).toMatchObject({ cve: 'CVE-2023-38545', devices_affected: 3 });
  });
});
