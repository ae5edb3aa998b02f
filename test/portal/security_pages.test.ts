/**
 * Security in the portal over HTTP in-process: the Security page's empty states before any
 * security data and inventory; then, with the samples matched, the organization's CVEs
 * worst first (then most devices) as the API counts them, each count a link to the device
 * list filtered to the CVE (and to its fix), the filters, paging forward and back; a
 * device's vulnerabilities; the overview's security figures; a viewer reads it all, in
 * English too. The device list's `cve_status` filter through the API.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { refreshFeed } from '../../api/vulnerabilities/feeds.ts';
import { URGENCIES } from '../../api/vulnerabilities/feed_parse.ts';
import { matchOutdated } from '../../api/vulnerabilities/matching.ts';
import { createApiKey } from '../support/access.ts';
import { useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { insertDevice } from '../support/devices.ts';
import { PortalClient } from '../support/portal_client.ts';
import {
  BOOKWORM,
  DEBIAN_SAMPLE,
  insertInventory,
  insertPackageSet,
  UBUNTU_SAMPLE_FOLDER,
} from '../support/vulnerabilities.ts';

const ctx = useTestApp();

const OLD_BOOKWORM = [
  { name: 'curl', version: '7.88.1-10+deb12u3' },
  { name: 'libcurl4', version: '7.88.1-10+deb12u3', source: 'curl' },
  { name: 'fleet-test-pkg', version: '1.0-1' },
  { name: 'epoch-test', version: '2.0-1' },
  { name: 'tilde-test', version: '1.2~rc1-1' },
];
const NEW_BOOKWORM = [
  { name: 'curl', version: '7.88.1-10+deb12u15' },
  { name: 'libcurl4', version: '7.88.1-10+deb12u15', source: 'curl' },
  { name: 'fleet-test-pkg', version: '1.1-1' },
  { name: 'tilde-test', version: '1.2-1' },
];

let n = 0;
async function signedIn(key: string, acceptLanguage?: string) {
  const b = new PortalClient(ctx.app, `10.5.1.${++n}`, acceptLanguage);
  expect((await b.signIn(key)).status).toBe(303);
  return b;
}

/** The rows of a page's table by their data attribute, in page order. */
const rowsOf = (html: string, attribute: string) =>
  [...html.matchAll(new RegExp(`<tr ${attribute}="([^"]+)"`, 'g'))].map((m) => m[1]!);
/** The href of the link in a row's cell. */
function linkIn(html: string, row: string, field: string): string | null {
  const start = html.indexOf(row);
  expect(start, row).toBeGreaterThan(-1);
  const cell = new RegExp(`data-field="${field}"[^>]*>([\\s\\S]*?)</td>`).exec(html.slice(start))![1]!;
  const href = /href="([^"]+)"/.exec(cell);
  return href ? href[1]!.replace(/&amp;/g, '&') : null;
}
const textIn = (html: string, row: string, field: string) => {
  const start = html.indexOf(row);
  const cell = new RegExp(`data-field="${field}"[^>]*>([\\s\\S]*?)</td>`).exec(html.slice(start))![1]!;
  return cell
    .replace(/<[^>]+>/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
};

const fleet = {
  orgId: '',
  adminKey: '',
  viewerKey: '',
  old: { id: '', serial: '' },
  old2: { id: '', serial: '' },
  fresh: { id: '', serial: '' },
  bare: { id: '', serial: '' },
};

beforeAll(async () => {
  const org = await createOrganization(ctx);
  fleet.orgId = org.id;
  fleet.adminKey = (await createApiKey(ctx, org.id, 'admin')).key;
  fleet.viewerKey = (await createApiKey(ctx, org.id, 'viewer')).key;
  for (const name of ['old', 'old2', 'fresh', 'bare'] as const) {
    const d = await insertDevice(ctx.sql, { organizationId: org.id });
    fleet[name] = { id: d.id, serial: d.serial };
  }
});

describe('before any security data', () => {
  it('the Security page says what is missing: the feed settings and the first inventory; the device page too', async () => {
    const viewer = await signedIn(fleet.viewerKey);
    const page = await viewer.get('/portal/security');
    expect(page.status).toBe(200);
    expect(page.text).toContain('data-empty="no-feed"');
    expect(page.text).toContain('VULN_FEED_DEBIAN_URL');
    expect(page.text).toContain('VULN_FEED_UBUNTU_URL');
    expect(page.text).toContain('Noch kein Gerät hat seine Software-Inventur gesendet');
    expect(page.text).not.toContain('<table');
    // The navigation leads there, for a viewer too.
    expect(page.text).toContain('<a href="/portal/security">Sicherheit</a>');
    const device = await viewer.get(`/portal/devices/${fleet.old.id}`);
    expect(device.status).toBe(200);
    expect(device.text).toContain('data-empty="no-inventory"');
    // The feed read but no device inventoried yet: only the inventory is missing.
    expect((await refreshFeed(ctx.sql, 'debian', DEBIAN_SAMPLE)).outcome).toBe('changed');
    const noInventory = await viewer.get('/portal/security');
    expect(noInventory.text).toContain('data-empty="no-inventory"');
    expect(noInventory.text).not.toContain('VULN_FEED_DEBIAN_URL');
    // An English admin reads the same in English.
    const english = await signedIn(fleet.adminKey, 'en');
    const en = await english.get('/portal/security');
    expect(en.text).toContain('<h1>Security</h1>');
    expect(en.text).toContain('No device has sent its software inventory yet');
  });
});

describe('with the samples matched', () => {
  beforeAll(async () => {
    expect((await refreshFeed(ctx.sql, 'ubuntu', UBUNTU_SAMPLE_FOLDER)).outcome).toBe('changed');
    const oldSet = await insertPackageSet(ctx.sql, OLD_BOOKWORM);
    await insertInventory(ctx.sql, { id: fleet.old.id, organization_id: fleet.orgId }, oldSet, BOOKWORM, {
      security_pending_count: 3,
      reboot_required: true,
    });
    await insertInventory(ctx.sql, { id: fleet.old2.id, organization_id: fleet.orgId }, oldSet, BOOKWORM, {
      security_pending_count: 1,
    });
    await insertInventory(
      ctx.sql,
      { id: fleet.fresh.id, organization_id: fleet.orgId },
      await insertPackageSet(ctx.sql, NEW_BOOKWORM),
      BOOKWORM,
    );
    await matchOutdated(ctx.sql);
  });

  it('lists the CVEs worst first, then most devices, with the counts the API answers, each a link to its devices', async () => {
    const viewer = await signedIn(fleet.viewerKey);
    const page = await viewer.get('/portal/security');
    expect(page.status).toBe(200);
    const api = await ctx.request('GET', `/api/v1/organizations/${fleet.orgId}/vulnerabilities?limit=200`);
    expect(api.status).toBe(200);
    const items = api.body.items as Array<{
      cve: string;
      urgency: string;
      devices_affected: number;
      devices_fix_available: number;
    }>;
    expect(items.length).toBeGreaterThan(3);
    const expected = [...items].sort(
      (a, b) =>
        URGENCIES.indexOf(a.urgency as never) - URGENCIES.indexOf(b.urgency as never) ||
        b.devices_affected - a.devices_affected ||
        a.cve.localeCompare(b.cve),
    );
    expect(rowsOf(page.text, 'data-cve')).toEqual(expected.map((v) => v.cve));
    expect(page.text).toContain('<div class="table-wrap">');
    for (const v of items) {
      const row = `data-cve="${v.cve}"`;
      expect(textIn(page.text, row, 'affected')).toBe(String(v.devices_affected));
      expect(textIn(page.text, row, 'fix_available')).toBe(String(v.devices_fix_available));
      expect(linkIn(page.text, row, 'affected')).toBe(`/portal/devices?cve=${v.cve}`);
      expect(linkIn(page.text, row, 'fix_available')).toBe(
        v.devices_fix_available === 0 ? null : `/portal/devices?cve=${v.cve}&cve_status=fixed_available`,
      );
    }
    expect(textIn(page.text, 'data-cve="CVE-2023-38545"', 'urgency')).toBe('hoch');
    // Unimportant ones only when asked.
    expect(rowsOf(page.text, 'data-cve')).not.toContain('CVE-2099-0003');
  });

  it('a count leads to exactly its devices, the note names the CVE and leads back to Security', async () => {
    const viewer = await signedIn(fleet.viewerKey);
    const list = await viewer.get('/portal/devices?cve=cve-2023-38545');
    expect(list.status).toBe(200);
    expect(rowsOf(list.text, 'data-device').sort()).toEqual([fleet.old.id, fleet.old2.id].sort());
    expect(list.text).toContain('data-filter="cve"');
    expect(list.text).toContain('<strong>CVE-2023-38545</strong>');
    expect(list.text).toContain('href="/portal/security?q=CVE-2023-38545&amp;include_unimportant=true"');
    // The filter form keeps the CVE when filtered again.
    expect(list.text).toContain('<input type="hidden" name="cve" value="CVE-2023-38545"/>');
    const back = await viewer.get('/portal/security?q=CVE-2023-38545&include_unimportant=true');
    expect(rowsOf(back.text, 'data-cve')).toEqual(['CVE-2023-38545']);
    // No fix for CVE-2099-0002 (the test package, any version): no device with an update, all three without.
    const noFix = await viewer.get('/portal/devices?cve=CVE-2099-0002&cve_status=no_fix');
    expect(rowsOf(noFix.text, 'data-device').sort()).toEqual([fleet.old.id, fleet.old2.id, fleet.fresh.id].sort());
    const withFix = await viewer.get('/portal/devices?cve=CVE-2099-0002&cve_status=fixed_available');
    expect(rowsOf(withFix.text, 'data-device')).toEqual([]);
    // A malformed CVE is no filter, as every malformed filter of the list.
    const bad = await viewer.get('/portal/devices?cve=nonsense');
    expect(bad.status).toBe(200);
    expect(bad.text).not.toContain('data-filter="cve"');
    expect(rowsOf(bad.text, 'data-device')).toHaveLength(4);
  });

  it('filters by urgency, fix, CVE prefix and unimportant ones; a filter matching nothing offers the reset', async () => {
    const viewer = await signedIn(fleet.viewerKey);
    const urgencyOf = async (query: string) => {
      const page = await viewer.get(`/portal/security?${query}`);
      expect(page.status, query).toBe(200);
      return [...page.text.matchAll(/<tr data-cve="([^"]+)"[\s\S]*?data-urgency="([a-z]+)"/g)].map((m) => [m[1], m[2]]);
    };
    const low = await urgencyOf('urgency=low');
    expect(low.length).toBeGreaterThan(0);
    expect(low.every(([, u]) => u === 'low')).toBe(true);
    const severe = await urgencyOf('urgency=critical,high');
    expect(severe.map(([cve]) => cve)).toContain('CVE-2023-38545');
    expect(severe.every(([, u]) => u === 'critical' || u === 'high')).toBe(true);
    expect((await urgencyOf('q=cve-2023')).map(([cve]) => cve)).toEqual(['CVE-2023-38545']);
    const all = await urgencyOf('include_unimportant=true');
    expect(all.map(([cve]) => cve)).toContain('CVE-2099-0003');
    expect(all[all.length - 1]![1]).toBe('unimportant');
    const noFix = await urgencyOf('status=no_fix');
    expect(noFix.map(([cve]) => cve)).toContain('CVE-2099-0002');
    expect(noFix.map(([cve]) => cve)).not.toContain('CVE-2023-38545');
    const none = await viewer.get('/portal/security?q=CVE-1999');
    expect(none.text).toContain('data-empty="filtered"');
    expect(none.text).toContain('href="/portal/security"');
    // What is not a valid value is no filter.
    expect(await urgencyOf('urgency=severe&q=%25%27')).toEqual(await urgencyOf(''));
  });

  it("a device's vulnerabilities: worst first as the API lists them; a device without any says so", async () => {
    const viewer = await signedIn(fleet.viewerKey);
    const page = await viewer.get(`/portal/devices/${fleet.old.id}`);
    expect(page.status).toBe(200);
    const api = await ctx.request('GET', `/api/v1/devices/${fleet.old.id}/vulnerabilities`);
    const items = api.body.items as Array<Record<string, string | string[] | null>>;
    expect(rowsOf(page.text, 'data-cve')).toEqual(items.map((v) => v.cve));
    const curl = 'data-cve="CVE-2023-38545"';
    expect(textIn(page.text, curl, 'urgency')).toBe('hoch');
    expect(textIn(page.text, curl, 'status')).toBe('Update verfügbar');
    expect(textIn(page.text, curl, 'source')).toBe('curl');
    expect(textIn(page.text, curl, 'installed')).toBe('7.88.1-10+deb12u3');
    expect(textIn(page.text, curl, 'fixed')).toBe('7.88.1-10+deb12u4');
    expect(textIn(page.text, curl, 'binaries')).toBe('curl, libcurl4');
    expect(textIn(page.text, 'data-cve="CVE-2099-0002"', 'fixed')).toBe('–');
    const fresh = await viewer.get(`/portal/devices/${fleet.fresh.id}`);
    const freshApi = await ctx.request('GET', `/api/v1/devices/${fleet.fresh.id}/vulnerabilities`);
    expect(rowsOf(fresh.text, 'data-cve')).toEqual((freshApi.body.items as Array<{ cve: string }>).map((v) => v.cve));
    const bare = await viewer.get(`/portal/devices/${fleet.bare.id}`);
    expect(bare.text).toContain('data-empty="no-inventory"');
  });

  it('the overview shows the security figures of fleet status, each a link to its devices', async () => {
    const viewer = await signedIn(fleet.viewerKey);
    const page = await viewer.get('/portal');
    expect(page.status).toBe(200);
    const status = await ctx.request('GET', `/api/v1/organizations/${fleet.orgId}/fleet-status`);
    const updates = status.body.updates as Record<string, number>;
    expect(updates).toEqual({ security_pending: 2, reboot_required: 1, vulnerable_high: 2 });
    const figure = (key: string) =>
      new RegExp(`data-figure="${key}"[\\s\\S]*?<a href="([^"]+)"[^>]*>(\\d+)</a>`).exec(page.text)!.slice(1);
    expect(figure('security_pending')).toEqual(['/portal/devices?security_updates=true', '2']);
    expect(figure('reboot_required')).toEqual(['/portal/devices?reboot_required=true', '1']);
    expect(figure('vulnerable_high')).toEqual(['/portal/security?urgency=critical,high', '2']);
  });

  it('in English: the page, the urgencies and the device list note', async () => {
    const english = await signedIn(fleet.viewerKey, 'en-GB,en;q=0.9');
    const page = await english.get('/portal/security');
    expect(page.text).toContain('<a href="/portal/security">Security</a>');
    expect(textIn(page.text, 'data-cve="CVE-2023-38545"', 'urgency')).toBe('high');
    const list = await english.get('/portal/devices?cve=CVE-2023-38545&cve_status=fixed_available');
    expect(list.text).toContain('Only devices affected by <strong>CVE-2023-38545</strong> (with an update available).');
  });

  it('pages forward and back across urgencies, most urgent first; a broken cursor is 400', async () => {
    const other = await createOrganization(ctx);
    const key = (await createApiKey(ctx, other.id, 'viewer')).key;
    // 120 CVEs as the matching stores its counts: 40 high, 40 medium, 40 low, devices 1..40.
    const rows = ['high', 'medium', 'low'].flatMap((urgency, u) =>
      Array.from({ length: 40 }, (_, i) => ({
        organization_id: other.id,
        cve: `CVE-2098-${String(u * 100 + i).padStart(4, '0')}`,
        urgency,
        sources: ['pkg'],
        devices_affected: i + 1,
        devices_fix_available: i,
        devices_no_fix: 1,
      })),
    );
    await ctx.sql`insert into organization_vulnerabilities ${ctx.sql(rows)}`;
    const expected = [...rows]
      .sort(
        (a, b) =>
          URGENCIES.indexOf(a.urgency as never) - URGENCIES.indexOf(b.urgency as never) ||
          b.devices_affected - a.devices_affected ||
          a.cve.localeCompare(b.cve),
      )
      .map((r) => r.cve);
    const viewer = await signedIn(key);
    const pages: string[][] = [];
    const links: string[] = ['/portal/security?urgency=high,medium,low'];
    let path: string | null = links[0]!;
    while (path !== null) {
      const page = await viewer.get(path);
      expect(page.status, path).toBe(200);
      pages.push(rowsOf(page.text, 'data-cve'));
      const next = /<a href="([^"]+)" rel="next">/.exec(page.text);
      path = next ? next[1]!.replace(/&amp;/g, '&') : null;
      if (path) links.push(path);
    }
    expect(pages.map((p) => p.length)).toEqual([50, 50, 20]);
    expect(pages.flat()).toEqual(expected);
    // Back from the last page: the same pages again, then the first page has no previous.
    let page = await viewer.get(links[2]!);
    for (const i of [1, 0]) {
      const previous = /<a href="([^"]+)" rel="prev">/.exec(page.text)![1]!.replace(/&amp;/g, '&');
      page = await viewer.get(previous);
      expect(rowsOf(page.text, 'data-cve'), `page ${i}`).toEqual(pages[i]);
    }
    expect(page.text).not.toContain('rel="prev"');
    // A page that ends with an urgency's last CVE: a next page only when a later urgency has one.
    const third = await createOrganization(ctx);
    const fifty = Array.from({ length: 50 }, (_, i) => ({
      ...rows[i]!,
      organization_id: third.id,
      cve: `CVE-2097-${String(i).padStart(4, '0')}`,
    }));
    await ctx.sql`insert into organization_vulnerabilities ${ctx.sql(fifty)}`;
    const thirdViewer = await signedIn((await createApiKey(ctx, third.id, 'viewer')).key);
    let full = await thirdViewer.get('/portal/security');
    expect(rowsOf(full.text, 'data-cve')).toHaveLength(50);
    expect(full.text).not.toContain('rel="next"');
    await ctx.sql`insert into organization_vulnerabilities ${ctx.sql({ ...fifty[0]!, cve: 'CVE-2097-9999', urgency: 'unknown' })}`;
    full = await thirdViewer.get('/portal/security');
    const after = /<a href="([^"]+)" rel="next">/.exec(full.text)![1]!.replace(/&amp;/g, '&');
    expect(rowsOf((await thirdViewer.get(after)).text, 'data-cve')).toEqual(['CVE-2097-9999']);
    const broken = await viewer.get('/portal/security?at=high&cursor=not-a-cursor');
    expect(broken.status).toBe(400);
    // The other organization's CVEs are on no page of the first.
    const first = await signedIn(fleet.viewerKey);
    expect((await first.get('/portal/security?q=CVE-2098')).text).toContain('data-empty="filtered"');
  });
});

describe('another organization', () => {
  it("sees none of these CVEs nor this device's; with its inventories matched and nothing found, it reads that it is clean", async () => {
    const other = await createOrganization(ctx);
    const device = await insertDevice(ctx.sql, { organizationId: other.id });
    await insertInventory(
      ctx.sql,
      device,
      await insertPackageSet(ctx.sql, [{ name: 'zz-unaffected', version: '1.0-1' }]),
      BOOKWORM,
    );
    await matchOutdated(ctx.sql);
    const viewer = await signedIn((await createApiKey(ctx, other.id, 'viewer')).key);
    const page = await viewer.get('/portal/security');
    expect(page.status).toBe(200);
    expect(page.text).toContain('data-empty="clean"');
    expect(page.text).not.toContain('CVE-2023-38545');
    expect((await viewer.get(`/portal/devices/${fleet.old.id}`)).status).toBe(404);
    const list = await viewer.get('/portal/devices?cve=CVE-2023-38545');
    expect(rowsOf(list.text, 'data-device')).toEqual([]);
    expect((await viewer.get(`/portal/devices/${device.id}`)).text).toContain('data-empty="none"');
  });
});

describe("the device list's cve_status filter", () => {
  it('keeps the devices whose row of the CVE has that status; without cve it is 400', async () => {
    const base = `/api/v1/organizations/${fleet.orgId}/devices`;
    const ids = async (query: string) => {
      const res = await ctx.request('GET', `${base}?${query}`);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return (res.body.items as Array<{ id: string }>).map((d) => d.id).sort();
    };
    const both = [fleet.old.id, fleet.old2.id].sort();
    expect(await ids('cve=CVE-2023-38545&cve_status=fixed_available')).toEqual(both);
    expect(await ids('cve=CVE-2023-38545&cve_status=no_fix')).toEqual([]);
    expect(await ids('cve=CVE-2099-0002&cve_status=no_fix')).toEqual([...both, fleet.fresh.id].sort());
    expect(await ids('cve=CVE-2099-0002&cve_status=fixed_available')).toEqual([]);
    const alone = await ctx.request('GET', `${base}?cve_status=no_fix`);
    expect(alone.status).toBe(400);
    expect(alone.body.error).toBe('invalid_request');
    const bad = await ctx.request('GET', `${base}?cve=CVE-2023-38545&cve_status=maybe`);
    expect(bad.status).toBe(400);
  });
});
