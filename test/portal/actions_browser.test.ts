/**
 * A device action in a real browser (Debian's Chromium, headless, driven by playwright-core,
 * with JavaScript switched off: the portal needs none) against the real service process:
 * an admin opens a device, fills in the reboot's delay and message, reads the confirmation
 * naming "1 Gerät", queues it and finds it in the device's queue, opens the action's page
 * and cancels it there; at 390 px the device page and the confirmation are no wider than
 * the window. Screenshots go to test-output/portal/.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomToken } from '../../api/http/crypto.ts';
import { sharedChromium } from '../support/chromium.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { insertDevice, TEMPLATE_IDS } from '../support/devices.ts';
import { httpTestContext, type ServiceProcess, startService } from '../support/service_process.ts';
import { missingTools } from '../support/tools.ts';

const outputDir = fileURLToPath(new URL('../../test-output/portal/', import.meta.url));
const adminToken = randomToken();

describe.skipIf(missingTools('chromium'))('a device action in the portal, in Chromium', () => {
  let db: TestDatabase;
  let service: ServiceProcess;
  let dataDir: string;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const fleet = { deviceId: '', adminKey: '' };
  const overHttp = httpTestContext(() => service.base, adminToken);

  beforeAll(async () => {
    db = await createTestDatabase();
    dataDir = await mkdtemp(join(tmpdir(), 'fleet-portal-actions-'));
    await mkdir(outputDir, { recursive: true });
    service = await startService({ DATABASE_URL: db.url, ADMIN_TOKEN: adminToken, DATA_DIR: dataDir });
    const org = (await overHttp.request('POST', '/api/v1/organizations', { body: { name: 'Schulträger' } })).body;
    const key = await overHttp.request('POST', `/api/v1/organizations/${org.id}/api-keys`, {
      body: { name: 'Frau Admin', role: 'admin' },
    });
    expect(key.status).toBe(201);
    fleet.adminKey = key.body.key;
    const device = await insertDevice(db.sql, {
      organizationId: org.id,
      serial: 'PF3XK2QZ',
      hostname: 'arbeitsplatz-017',
      templateId: TEMPLATE_IDS.debianStandard,
    });
    fleet.deviceId = device.id;
    browser = await sharedChromium();
    context = await browser.newContext({ locale: 'de-DE', javaScriptEnabled: false });
    page = await context.newPage();
  }, 180_000);

  afterAll(async () => {
    await context?.close();
    await browser?.close();
    expect(await service?.stop('SIGTERM')).toBe(0);
    await db?.drop();
    await rm(dataDir, { recursive: true, force: true });
  });

  async function shot(name: string) {
    const path = join(outputDir, name);
    await page.screenshot({ path, fullPage: true });
    console.log(`screenshot: ${path}`);
  }

  const widths = () =>
    page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, inner: window.innerWidth }));

  it('queues a reboot from the device page through its confirmation, finds it queued and cancels it on its page', async () => {
    await page.goto(`${service.base}/portal/login`);
    await page.getByLabel('API-Schlüssel').fill(fleet.adminKey);
    await page.getByRole('button', { name: 'Anmelden' }).click();
    await page.waitForURL('**/portal/devices');
    await page.getByRole('link', { name: 'PF3XK2QZ' }).click();
    await page.waitForURL(`**/portal/devices/${fleet.deviceId}`);

    const actions = page.locator('section#actions');
    await actions.getByText('Keine offenen Aktionen.').waitFor();
    const reboot = actions.locator('[data-action-form=reboot]');
    await reboot.getByLabel('Verzögerung in Sekunden (0–3600)').fill('120');
    await reboot.getByLabel('Nachricht an angemeldete Benutzer').fill('Neustart für Updates');
    await reboot.getByRole('button', { name: 'Neustart …' }).click();

    // The confirmation names the device and the count; nothing is queued yet.
    await page.getByRole('heading', { name: 'Aktion bestätigen' }).waitFor();
    expect(await page.locator('[data-field=count]').textContent()).toBe('1 Gerät');
    expect(await page.locator('td[data-field=parameters]').textContent()).toBe(
      'in 120 s, Nachricht: „Neustart für Updates“',
    );
    expect(await db.sql`select 1 from device_actions where device_id = ${fleet.deviceId}`).toHaveLength(0);
    await shot('action-confirmation.png');
    await page.getByRole('button', { name: 'Neustart für 1 Gerät einreihen' }).click();

    await page.waitForURL(`**/portal/devices/${fleet.deviceId}#actions`);
    await page.getByText('Neustart eingereiht').waitFor();
    const [queued] = await db.sql<{ id: string; status: string; parameters: Record<string, unknown> }[]>`
      select id, status, parameters from device_actions where device_id = ${fleet.deviceId}`;
    expect(queued).toMatchObject({
      status: 'pending',
      parameters: { delay_seconds: 120, message: 'Neustart für Updates' },
    });
    const row = page.locator(`tr[data-action="${queued!.id}"]`);
    expect(await row.locator('[data-field=status] .badge').textContent()).toBe('wartet auf das Gerät');
    await shot('action-queued.png');

    await row.getByRole('link', { name: 'Neustart' }).click();
    await page.waitForURL(`**/portal/actions/${queued!.id}`);
    await page.getByRole('heading', { name: 'Neustart auf PF3XK2QZ' }).waitFor();
    await page.getByRole('button', { name: 'Neustart abbrechen' }).click();
    await page.getByText('Neustart abgebrochen').waitFor();
    expect(await page.locator('td[data-field=status] .badge').textContent()).toBe('abgebrochen');
    const [after] = await db.sql`select status from device_actions where id = ${queued!.id}`;
    expect(after!.status).toBe('canceled');
  }, 120_000);

  it('at 390 px the device page with its action forms and a confirmation are no wider than the window', async () => {
    await page.setViewportSize({ width: 390, height: 800 });
    await page.goto(`${service.base}/portal/devices/${fleet.deviceId}`);
    await page.locator('section#actions').waitFor();
    expect(await widths()).toMatchObject({ inner: 390, scroll: 390 });
    const script = page.locator('[data-action-form=script]');
    await script.getByLabel('Skript (läuft als root, höchstens 64 KiB)').fill(`echo ${'x'.repeat(300)}\nexit 0`);
    await script.getByRole('button', { name: 'Skript ausführen …' }).click();
    await page.getByRole('heading', { name: 'Aktion bestätigen' }).waitFor();
    expect(await page.locator('pre[data-field=script]').textContent()).toBe(`echo ${'x'.repeat(300)}\nexit 0`);
    expect((await widths()).scroll).toBeLessThanOrEqual(390);
    await shot('action-confirmation-390.png');
  }, 60_000);
});
