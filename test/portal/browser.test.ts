/**
 * The portal in a real browser (Debian's Chromium, headless, driven by playwright-core)
 * against the real service process (API and worker in one, as `npm start` runs them):
 * an admin signs in, opens a device, reads each Merkmal's origin and explanation, selects
 * qgis on the device's org unit (confirmed, all at once) and sees the state change with
 * origin `oe`; creates an enrollment session; triggers an ISO build, watches the bar reach "fertig" and downloads
 * the image; a viewer finds no write control; a bootstrapped device's failed apply, reported
 * by the agent's own call, is one click from the overview and shows as failed with the
 * agent's message on the device page; the device list keeps 300-character names inside
 * the page at 1366 × 768 and at 390 px wide; an admin ticks two devices, adds them to a
 * group in bulk, confirms the count and sees the result; the hardware reads as a table, a
 * development ISO is marked above its download, and a webhook's test button queues a
 * delivery the page lists; the Security page leads from a CVE to its affected devices and
 * back, in both languages. Screenshots go to test-output/portal/.
 */
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomToken } from '../../api/http/crypto.ts';
import { catalogs } from '../../api/portal/i18n/catalog.ts';
import { refreshFeed } from '../../api/vulnerabilities/feeds.ts';
import { matchOutdated } from '../../api/vulnerabilities/matching.ts';
import { checkin, enrollAgent, report } from '../support/agent.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { addToGroup, insertDevice, insertGroup, insertOrgUnit, TEMPLATE_IDS } from '../support/devices.ts';
import { startService, type ServiceProcess, httpTestContext } from '../support/service_process.ts';
import { sharedChromium } from '../support/chromium.ts';
import { BOOKWORM, DEBIAN_SAMPLE, insertInventory, insertPackageSet } from '../support/vulnerabilities.ts';
import { missingTools } from '../support/tools.ts';

const outputDir = fileURLToPath(new URL('../../test-output/portal/', import.meta.url));
const adminToken = randomToken();

describe.skipIf(missingTools('chromium', 'xorriso'))('the portal in Chromium', () => {
  let db: TestDatabase;
  let service: ServiceProcess;
  let dataDir: string;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const fleet = { orgId: '', deviceId: '', serial: '', adminKey: '', viewerKey: '', unitId: '', groupId: '' };
  /** What Chromium reported about the Content-Security-Policy (it logs every refusal). */
  const cspReports: string[] = [];

  async function api(method: string, path: string, body?: unknown) {
    const res = await fetch(`${service.base}${path}`, {
      method,
      headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    expect(res.status, `${method} ${path}`).toBeLessThan(300);
    return res.json();
  }

  /** The test builders' context over HTTP to the service process (the operator token unless told). */
  const overHttp = httpTestContext(() => service.base, adminToken);

  beforeAll(async () => {
    db = await createTestDatabase();
    dataDir = await mkdtemp(join(tmpdir(), 'fleet-portal-browser-'));
    await mkdir(outputDir, { recursive: true });
    service = await startService({ DATABASE_URL: db.url, ADMIN_TOKEN: adminToken, DATA_DIR: dataDir });
    const org = await api('POST', '/api/v1/organizations', { name: 'Portal Schule' });
    fleet.orgId = org.id;
    fleet.adminKey = (
      await api('POST', `/api/v1/organizations/${org.id}/api-keys`, { name: 'Frau Admin', role: 'admin' })
    ).key;
    fleet.viewerKey = (
      await api('POST', `/api/v1/organizations/${org.id}/api-keys`, { name: 'Herr Leser', role: 'viewer' })
    ).key;
    const unit = await insertOrgUnit(db.sql, org.id, 'Grundschule');
    await insertOrgUnit(db.sql, org.id, 'Klasse 4a', unit); // a nested unit: the org-unit tree is indented
    const device = await insertDevice(db.sql, {
      organizationId: org.id,
      oeId: unit,
      serial: 'PF3XK2QZ',
      hostname: 'arbeitsplatz-017',
      templateId: TEMPLATE_IDS.debianStandard,
    });
    fleet.deviceId = device.id;
    fleet.serial = device.serial;
    fleet.unitId = unit;
    fleet.groupId = await insertGroup(db.sql, org.id, 'Lehrerzimmer');
    await addToGroup(db.sql, fleet.groupId, device.id);
    browser = await sharedChromium();
    context = await browser.newContext({ locale: 'de-DE', acceptDownloads: true });
    page = await context.newPage();
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) cspReports.push(message.text());
    });
  }, 180_000);

  afterAll(async () => {
    await context?.close();
    await browser?.close();
    expect(await service?.stop('SIGTERM')).toBe(0);
    await db?.drop();
    await rm(dataDir, { recursive: true, force: true });
  });

  async function signIn(key: string) {
    await page.goto(`${service.base}/portal/login`);
    await page.getByLabel('API-Schlüssel').fill(key);
    await page.getByRole('button', { name: 'Anmelden' }).click();
    await page.waitForURL('**/portal/devices');
  }

  it('an admin signs in, opens a device, reads every origin and explanation, and selects qgis on its org unit', async () => {
    await signIn(fleet.adminKey);
    await page.getByRole('cell', { name: 'arbeitsplatz-017' }).waitFor();
    const listShot = join(outputDir, 'device-list.png');
    await page.screenshot({ path: listShot, fullPage: true });
    console.log(`screenshot: ${listShot}`);

    await page.getByRole('link', { name: fleet.serial }).click();
    await page.waitForURL(`**/portal/devices/${fleet.deviceId}`);
    const rows = page.locator('tr[data-merkmal]');
    const count = await rows.count();
    expect(count).toBeGreaterThan(3);
    for (let i = 0; i < count; i++) {
      const row = rows.nth(i);
      expect(await row.locator('td[data-field=origin]').getAttribute('data-origin')).toBe('workspace');
      await row.getByText('Warum?').click();
      const steps = row.locator('ol.steps li');
      await steps.first().waitFor({ state: 'visible' });
      expect(await steps.count()).toBe(4); // workspace, the unit, the groups, the device
      expect(await steps.nth(1).textContent()).toContain('Grundschule');
    }
    const qgis = page.locator('tr[data-merkmal=qgis]');
    expect(await qgis.locator('td[data-field=state]').textContent()).toBe('nicht vorhanden');
    // The unit's change is confirmed first, with the devices it changes; then all at once.
    await qgis.getByRole('button', { name: 'QGIS an der OE Grundschule: auswählen' }).click();
    await page.getByText('ändert den Zustand von 1 Gerät.').waitFor();
    await page.getByRole('button', { name: 'Alle auf einmal ändern' }).click();
    await page.waitForURL(`**/portal/devices/${fleet.deviceId}`);
    await page.getByText('qgis: auswählen gespeichert.').waitFor();
    expect(await qgis.locator('td[data-field=state]').textContent()).toBe('vorhanden');
    expect(await qgis.locator('td[data-field=origin]').getAttribute('data-origin')).toBe('oe');
    await qgis.getByText('Warum?').click();
    expect(await qgis.locator('ol.steps li').nth(1).textContent()).toContain('vorhanden');
    const deviceShot = join(outputDir, 'device-page.png');
    await page.screenshot({ path: deviceShot, fullPage: true });
    console.log(`screenshot: ${deviceShot}`);
  }, 120_000);

  it('creates an enrollment session, builds an ISO for it, watches the progress reach "fertig" and downloads it', async () => {
    await page.goto(`${service.base}/portal/enrollment-sessions`);
    await page.getByLabel('Höchstzahl Geräte').fill('30');
    await page.getByRole('button', { name: 'Session erstellen' }).click();
    await page.getByText('Enrollment-Session erstellt.').waitFor();
    await page.getByRole('cell', { name: '0 von 30' }).waitFor();

    await page.goto(`${service.base}/portal/iso-builds`);
    await page.getByLabel('Netzwerkname (SSID)').fill('Schulnetz');
    await page.getByLabel('WLAN-Passwort').fill('geheim-und-lang-genug');
    await page.getByRole('button', { name: 'ISO erzeugen' }).click();
    await page.getByText('ISO-Build gestartet.').waitFor();
    // The page refreshes itself (meta refresh) until the build is done; no script, no reload by the test.
    const seen = new Set<string>();
    const deadline = Date.now() + 120_000;
    for (;;) {
      const status = await page
        .locator('td[data-field=status]')
        .first()
        .textContent({ timeout: 2000 })
        .catch(() => null);
      if (status) seen.add(status.trim());
      if (status?.trim() === 'fertig' || status?.startsWith('fehlgeschlagen')) break;
      if (Date.now() > deadline) throw new Error(`no "fertig" in time; seen: ${[...seen].join(', ')}`);
      await new Promise((r) => setTimeout(r, 300));
    }
    expect([...seen].at(-1)).toBe('fertig');
    expect(await page.locator('progress').first().getAttribute('value')).toBe('100');
    // No installer image on this host: the mark that it does not boot stands above the link.
    const built = page.locator('tr[data-build]').first();
    const mark = built.locator('[data-warning=development-base]');
    expect(await mark.textContent()).toContain('NICHT bootfähig');
    const link = built.getByRole('link', { name: 'Test-ISO herunterladen (bootet nicht)' });
    expect((await mark.boundingBox())!.y).toBeLessThan((await link.boundingBox())!.y);
    expect((await built.locator('td[data-field=sha256]').textContent())?.trim()).toMatch(/^[0-9a-f]{64}$/);
    expect(await built.locator('td[data-field=source]').textContent()).toContain('Enrollment-Session');
    const isoShot = join(outputDir, 'iso-builds.png');
    await page.screenshot({ path: isoShot, fullPage: true });
    console.log(`screenshot: ${isoShot}`);
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('link', { name: 'ISO herunterladen' }).first().click(),
    ]);
    const file = join(outputDir, 'portal.iso');
    await download.saveAs(file);
    const bytes = await readFile(file);
    expect(bytes.subarray(32768 + 1, 32768 + 6).toString('latin1')).toBe('CD001');
    await rm(file);
  }, 240_000);

  it('a viewer finds no write control, and a crawl from the navigation meets no 403', async () => {
    // Signed out whoever was signed in (the test runs alone too).
    await context.clearCookies();
    await signIn(fleet.viewerKey);
    for (const path of [
      '/portal/devices',
      `/portal/devices/${fleet.deviceId}`,
      '/portal/iso-builds',
      '/portal/org-units',
      `/portal/org-units/${fleet.unitId}`,
      '/portal/groups',
      `/portal/groups/${fleet.groupId}`,
      '/portal/rollouts',
    ]) {
      const res = await page.goto(`${service.base}${path}`);
      expect(res?.status(), path).toBe(200);
      const buttons = await page.getByRole('button').allTextContents();
      expect(
        buttons.map((b) => b.trim()).filter((b) => b !== 'Abmelden' && b !== 'Filtern'),
        path,
      ).toEqual([]);
      expect(await page.locator('form[method=post]').count(), path).toBe(1); // sign-out only
    }
    // The org unit's and the group's pages: path, device counts and the catalog, read only.
    await page.goto(`${service.base}/portal/org-units/${fleet.unitId}`);
    expect(await page.locator('td[data-field=path]').textContent()).toBe('Grundschule');
    expect(await page.locator('tr[data-merkmal]').count()).toBeGreaterThan(3);
    expect(await page.getByRole('link', { name: 'Lehrerzimmer' }).count()).toBe(0);
    await page.goto(`${service.base}/portal/groups`);
    await page.getByRole('link', { name: 'Lehrerzimmer' }).click();
    await page.waitForURL(`**/portal/groups/${fleet.groupId}`);
    expect(await page.getByRole('link', { name: fleet.serial }).count()).toBe(1);
    expect(await page.getByRole('link', { name: 'Enrollment-Sessions' }).count()).toBe(0);

    // Every link the viewer can reach from the navigation, followed in the browser: none answers 403.
    const seen = new Map<string, number>();
    const queue = ['/portal'];
    while (queue.length > 0 && seen.size < 60) {
      const path = queue.shift()!;
      if (seen.has(path)) continue;
      const res = await page.goto(`${service.base}${path}`);
      seen.set(path, res?.status() ?? 0);
      const links = await page
        .locator('a[href^="/portal"]')
        .evaluateAll((as) => as.map((a) => a.getAttribute('href')!));
      for (const link of links) {
        const bare = link.split('#')[0]!;
        if (bare === '/portal/style.css' || bare.startsWith('/portal/language/') || seen.has(bare)) continue;
        // Each page once; a paged list's further pages once each.
        if (bare.includes('?') && [...seen.keys(), ...queue].some((s) => s.split('?')[0] === bare.split('?')[0]))
          continue;
        queue.push(bare);
      }
    }
    expect([...seen].filter(([, status]) => status !== 200)).toEqual([]);
    for (const path of [`/portal/org-units/${fleet.unitId}`, `/portal/groups/${fleet.groupId}`]) {
      expect(seen.get(path), path).toBe(200);
    }
  }, 180_000);

  it('the pages work under their Content-Security-Policy: the style sheet applies, nothing is refused', async () => {
    const res = await page.goto(`${service.base}/portal/org-units`);
    expect(res?.headers()['content-security-policy']).toContain("frame-ancestors 'none'");
    // A nested unit is indented by the style sheet's rule (no inline style to refuse).
    const indent = await page.locator('span.indent').first().boundingBox();
    expect(indent?.width).toBeCloseTo(24, 0);
    expect(await page.locator('header').evaluate((h) => getComputedStyle(h).display)).toBe('flex');
    expect(cspReports).toEqual([]);
  }, 60_000);

  it("a failed apply, reported by the device's agent, is one click from the overview and shows the agent's message", async () => {
    const agent = await enrollAgent(overHttp, { organizationId: fleet.orgId, serial: 'PF9FAIL1' });
    const message = 'firefox: Paketquelle nicht erreichbar (exit 100)';
    // As the device agent reports a failed role: its name, whether anything changed, the message.
    const res = await report(overHttp, agent.secret, [
      { merkmal: 'firefox', event: 'apply_failed', detail: { role: 'firefox', changed: false, message } },
    ]);
    expect(res.status, JSON.stringify(res.body)).toBe(200);

    await signIn(fleet.adminKey);
    await page.getByRole('link', { name: 'Übersicht' }).click();
    await page.waitForURL(/\/portal$/);
    const failed = page.locator('tr[data-merkmal=firefox] td[data-field=failed]');
    expect((await failed.textContent())?.trim()).toBe('1');
    const overviewShot = join(outputDir, 'overview.png');
    await page.screenshot({ path: overviewShot, fullPage: true });
    console.log(`screenshot: ${overviewShot}`);

    // One click: the devices whose firefox failed, this one alone, marked failed.
    await page.getByRole('link', { name: 'Firefox: 1 fehlgeschlagen' }).click();
    await page.waitForURL('**/portal/devices?merkmal=firefox&convergence=failed');
    expect(await page.locator('tbody tr').count()).toBe(1);
    const row = page.locator('tr', { has: page.getByRole('link', { name: 'PF9FAIL1' }) });
    expect((await row.locator('td[data-field=convergence]').textContent())?.trim()).toBe('fehlgeschlagen');
    expect((await row.locator('td[data-field=status]').textContent())?.trim()).toBe('aktiv');

    await row.getByRole('link', { name: 'PF9FAIL1' }).click();
    await page.waitForURL(`**/portal/devices/${agent.device_id}`);
    const firefox = page.locator('tr[data-merkmal=firefox]');
    expect((await firefox.locator('td[data-field=convergence]').textContent())?.trim()).toBe('fehlgeschlagen');
    expect(await firefox.locator('td[data-field=reported] [data-event]').textContent()).toBe('Anwenden fehlgeschlagen');
    expect(await firefox.locator('[data-field=message]').textContent()).toBe(message);
    // The badge is styled by the style sheet (no inline style): the failed colour, not the text's.
    const badge = firefox.locator('.badge.failed');
    expect(await badge.evaluate((b) => getComputedStyle(b).color)).toBe('rgb(155, 28, 28)');
    expect(await page.locator('td[data-field=convergence] .badge').first().isVisible()).toBe(true);
    const deviceShot = join(outputDir, 'device-failed.png');
    await page.screenshot({ path: deviceShot, fullPage: true });
    console.log(`screenshot: ${deviceShot}`);
    expect(cspReports).toEqual([]);
  }, 120_000);

  it('the device list: the longest names the schema allows wrap, the page never scrolls sideways at 1366 × 768 nor at 390 px', async () => {
    // 300 characters are asked for; the schema stops names at 200 (units, groups), serials at
    // 128 and hostnames at 253, so each is as long as it may be, most without a space.
    const long = (word: string, length: number) => word.repeat(Math.ceil(length / word.length)).slice(0, length);
    const unit = await insertOrgUnit(db.sql, fleet.orgId, long('Außenstelle-ohne-Leerzeichen-', 200));
    await db.sql`insert into groups (organization_id, name) values (${fleet.orgId}, ${long('Gruppe mit sehr langem Namen ', 200)})`;
    await db.sql`insert into groups (organization_id, name) values (${fleet.orgId}, ${long('GruppeOhneLeerzeichen', 200)})`;
    await insertDevice(db.sql, {
      organizationId: fleet.orgId,
      oeId: unit,
      serial: long('SERIENNUMMER', 128),
      hostname: long('hostname-ohne-leerzeichen-', 253),
      templateId: TEMPLATE_IDS.debianStandard,
    });
    await signIn(fleet.adminKey);
    for (const [width, height] of [
      [1366, 768],
      [390, 844],
    ] as const) {
      await page.setViewportSize({ width, height });
      for (const path of ['/portal/devices', `/portal/devices?oe_id=${unit}`]) {
        await page.goto(`${service.base}${path}`);
        const { scrollWidth, innerWidth } = await page.evaluate(() => ({
          scrollWidth: document.documentElement.scrollWidth,
          innerWidth: window.innerWidth,
        }));
        expect(scrollWidth, `${path} at ${width} px`).toBeLessThanOrEqual(innerWidth);
      }
      const shot = join(outputDir, `device-list-${width}.png`);
      await page.screenshot({ path: shot, fullPage: true });
      console.log(`screenshot: ${shot}`);
    }
    await page.setViewportSize({ width: 1280, height: 720 });
  }, 120_000);

  it('an admin ticks two devices, adds them to a group in bulk, confirms the count and sees the result', async () => {
    const group = await api('POST', `/api/v1/organizations/${fleet.orgId}/groups`, { name: 'Laptopwagen 2' });
    for (const serial of ['PFBULK01', 'PFBULK02']) {
      await insertDevice(db.sql, { organizationId: fleet.orgId, serial, templateId: TEMPLATE_IDS.debianStandard });
    }
    await db.sql`
      update device_heartbeats set at = now() - interval '3 minutes 5 seconds'
      where device_id in (select id from devices where serial = 'PFBULK02')`;
    await signIn(fleet.adminKey);
    await page.goto(`${service.base}/portal/devices?q=PFBULK`);
    // The last check-in reads as a relative time, the exact time on hover.
    const checkin = page
      .locator('tr', { has: page.getByRole('link', { name: 'PFBULK02' }) })
      .locator('time')
      .first();
    expect(await checkin.textContent()).toBe('vor 3 Minuten');
    expect(await checkin.getAttribute('title')).toMatch(/^\d\d\.\d\d\.\d{4}, \d\d:\d\d:\d\d UTC$/);
    await page.getByLabel('PFBULK01 auswählen').check();
    await page.getByLabel('PFBULK02 auswählen').check();
    await page.getByLabel('Aktion', { exact: true }).selectOption({ label: 'Zu Gruppe hinzufügen' });
    await page.getByLabel('Ziel-Gruppe').selectOption({ label: 'Laptopwagen 2' });
    await page.getByRole('button', { name: 'Auf ausgewählte Geräte anwenden …' }).click();
    await page.waitForURL('**/portal/devices/bulk?**');
    expect(await page.locator('[data-field=count]').textContent()).toBe('2 Geräte');
    await page.getByText('Zur Gruppe „Laptopwagen 2“ hinzufügen').waitFor();
    const confirmShot = join(outputDir, 'device-bulk-confirm.png');
    await page.screenshot({ path: confirmShot, fullPage: true });
    console.log(`screenshot: ${confirmShot}`);
    await page.getByRole('button', { name: '2 Geräte ändern' }).click();
    await page.getByText('Sammelaktion ausgeführt').first().waitFor();
    expect(await page.locator('[data-field=changed]').textContent()).toBe('2 Geräte');
    expect(await page.locator('[data-field=failed]').count()).toBe(0);
    const resultShot = join(outputDir, 'device-bulk-result.png');
    await page.screenshot({ path: resultShot, fullPage: true });
    console.log(`screenshot: ${resultShot}`);
    const members = await api('GET', `/api/v1/groups/${group.id}/devices`);
    expect(members.items.map((d: { serial: string }) => d.serial).sort()).toEqual(['PFBULK01', 'PFBULK02']);
    await page.getByRole('link', { name: '← Zurück zur Geräteliste' }).click();
    await page.waitForURL('**/portal/devices?q=PFBULK');
    expect(cspReports).toEqual([]);
  }, 120_000);

  it('the device page reads the hardware as a table, the raw JSON one click away', async () => {
    const agent = await enrollAgent(overHttp, { organizationId: fleet.orgId, serial: 'PF7HW001' });
    const hardware = {
      dmi: { sys_vendor: 'LENOVO', product_name: '20N2S0A400' },
      cpu: { cores: 8, model: 'Intel(R) Core(TM) i5-8365U CPU @ 1.60GHz' },
      memory_mb: 16_384,
      disks: [{ name: 'nvme0n1', size_gb: 512, model: 'SAMSUNG MZVLB512' }],
      os: 'Debian GNU/Linux 12 (bookworm)',
    };
    const res = await checkin(overHttp, agent.secret, { hardware, agent_version: '1.4.2' });
    expect(res.status).toBe(200);
    await page.goto(`${service.base}/portal/devices/${agent.device_id}`);
    const cell = (key: string) => page.locator(`tr[data-hardware=${key}] td`);
    expect(await cell('cpu').textContent()).toBe('Intel(R) Core(TM) i5-8365U CPU @ 1.60GHz (8 Kerne)');
    expect(await cell('memory').textContent()).toBe('16 GiB');
    expect(await cell('disks').locator('li').allTextContents()).toEqual(['nvme0n1 · 512 GB · SAMSUNG MZVLB512']);
    expect(await cell('agent_version').textContent()).toBe('1.4.2');
    const raw = page.locator('.table-wrap:has(> table.hardware) + details pre');
    expect(await raw.isVisible()).toBe(false);
    await page.getByText('Rohdaten (JSON)').click();
    expect(await raw.isVisible()).toBe(true);
    expect(JSON.parse((await raw.textContent()) ?? '')).toEqual(hardware);
    const shot = join(outputDir, 'device-hardware.png');
    await page.locator('table.hardware').screenshot({ path: shot });
    console.log(`screenshot: ${shot}`);
  }, 60_000);

  it('the webhooks page sends a test event with its button and lists the delivery', async () => {
    const hook = await api('POST', `/api/v1/organizations/${fleet.orgId}/webhooks`, {
      url: 'https://hooks.example.invalid/fleet',
      events: ['iso_build.failed'],
    });
    await page.goto(`${service.base}/portal/webhooks`);
    const section = page.locator(`section[data-webhook="${hook.id}"]`);
    expect((await section.locator('[data-field=webhook-status]').textContent())?.trim()).toBe(
      'Status: aktiv, noch keine Zustellung',
    );
    await section.getByRole('button', { name: 'Test-Ereignis senden' }).click();
    await page.getByText('Test-Ereignis eingereiht').waitFor();
    const delivery = page.locator(`section[data-webhook="${hook.id}"] tr[data-delivery]`);
    expect(await delivery.count()).toBe(1);
    expect(await delivery.locator('code').textContent()).toBe('webhook.test');
    const listed = await api('GET', `/api/v1/webhooks/${hook.id}/deliveries`);
    expect(listed.items.map((d: { event: string }) => d.event)).toEqual(['webhook.test']);
    const shot = join(outputDir, 'webhooks.png');
    await page.screenshot({ path: shot, fullPage: true });
    console.log(`screenshot: ${shot}`);
    expect(cspReports).toEqual([]);
  }, 60_000);
  it("the header's switch turns every page English and back, kept across pages; the overview, the device list and a device page in both languages", async () => {
    await signIn(fleet.adminKey);
    const shots: string[] = [];
    for (const language of ['de', 'en'] as const) {
      if (language === 'en') {
        // From the German device page: the switch comes back to it, in English.
        await page.getByRole('link', { name: 'English' }).click();
        await page.waitForURL(`**/portal/devices/${fleet.deviceId}`);
        expect(await page.locator('html').getAttribute('lang')).toBe('en');
      }
      for (const [name, path] of [
        ['overview', '/portal'],
        ['device-list', '/portal/devices'],
        ['device-page', `/portal/devices/${fleet.deviceId}`],
      ] as const) {
        await page.goto(`${service.base}${path}`);
        expect(await page.locator('html').getAttribute('lang')).toBe(language);
        const nav = page.getByRole('navigation', { name: language === 'en' ? 'Main navigation' : 'Hauptnavigation' });
        expect(await nav.getByRole('link', { name: language === 'en' ? 'Devices' : 'Geräte' }).count()).toBe(1);
        const shot = join(outputDir, `${name}-${language}.png`);
        await page.screenshot({ path: shot, fullPage: true });
        shots.push(shot);
      }
    }
    // The choice outlives the page: a new tab of the same browser context opens in English.
    const tab = await context.newPage();
    await tab.goto(`${service.base}/portal/devices`);
    expect(await tab.locator('html').getAttribute('lang')).toBe('en');
    await tab.close();
    await page.getByRole('link', { name: 'Deutsch' }).click();
    await page.waitForURL(`**/portal/devices/${fleet.deviceId}`);
    expect(await page.locator('html').getAttribute('lang')).toBe('de');
    for (const shot of shots) console.log(`screenshot: ${shot}`);
    expect(cspReports).toEqual([]);
  }, 120_000);

  it('the Security page leads from a CVE to its affected devices and back, in German and in English', async () => {
    expect((await refreshFeed(db.sql, 'debian', DEBIAN_SAMPLE)).outcome).toBe('changed');
    const set = await insertPackageSet(db.sql, [
      { name: 'curl', version: '7.88.1-10+deb12u3' },
      { name: 'libcurl4', version: '7.88.1-10+deb12u3', source: 'curl' },
    ]);
    await insertInventory(db.sql, { id: fleet.deviceId, organization_id: fleet.orgId }, set, BOOKWORM);
    await matchOutdated(db.sql);
    await signIn(fleet.adminKey);
    for (const language of ['de', 'en'] as const) {
      const text = catalogs[language].security;
      if (language === 'en') await page.goto(`${service.base}/portal/language/en?back=%2Fportal%2Fdevices`);
      await page
        .getByRole('navigation', { name: language === 'en' ? 'Main navigation' : 'Hauptnavigation' })
        .getByRole('link', { name: text.nav })
        .click();
      await page.waitForURL('**/portal/security');
      const row = page.locator('tr[data-cve="CVE-2023-38545"]');
      expect(await row.locator('[data-urgency]').innerText()).toBe(text.urgencies.high);
      await page.screenshot({ path: join(outputDir, `security-${language}.png`), fullPage: true });
      await row.getByRole('link', { name: text.affectedLabel('CVE-2023-38545', '1') }).click();
      await page.waitForURL('**/portal/devices?cve=CVE-2023-38545');
      expect(await page.locator('tr[data-device]').count()).toBe(1);
      expect(await page.getByRole('link', { name: fleet.serial }).count()).toBe(1);
      // The device's own page lists the CVE with its versions.
      await page.getByRole('link', { name: fleet.serial }).click();
      await page.waitForURL(`**/portal/devices/${fleet.deviceId}`);
      const own = page.locator('section[data-section="vulnerabilities"] tr[data-cve="CVE-2023-38545"]');
      expect(await own.locator('[data-field="fixed"]').innerText()).toBe('7.88.1-10+deb12u4');
      await page.goBack();
      await page.waitForURL('**/portal/devices?cve=CVE-2023-38545');
      // Back by the note's link, which finds the CVE on the Security page.
      await page.getByRole('link', { name: text.deviceFilter.back }).click();
      await page.waitForURL('**/portal/security?q=CVE-2023-38545&include_unimportant=true');
      expect(await page.locator('tr[data-cve]').count()).toBe(1);
      expect(await page.locator('html').getAttribute('lang')).toBe(language);
    }
    await page.goto(`${service.base}/portal/language/de`);
    expect(cspReports).toEqual([]);
  }, 60_000);
});
