/**
 * The interactive docs as a customer meets them, in a real browser (Debian's Chromium,
 * headless, driven by playwright-core): "Authorize" on the first screen, each operation's
 * callers shown, and an organization key that works once authorized but is kept nowhere
 * after a reload. A screenshot of the first screen lands in test-output/.
 */
import { mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { serve, type ServerType } from '@hono/node-server';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../support/access.ts';
import { useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { sharedChromium } from '../support/chromium.ts';
import { missingTools } from '../support/tools.ts';

const ctx = useTestApp();
const outputDir = fileURLToPath(new URL('../../test-output/', import.meta.url));
const viewport = { width: 1280, height: 800 };

describe.skipIf(missingTools('chromium'))('GET /api/v1/docs in Chromium', () => {
  let server: ServerType;
  let base: string;
  let browser: Browser;

  beforeAll(async () => {
    server = await new Promise<ServerType>((resolve) => {
      const s = serve({ fetch: ctx.app.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve(s));
    });
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    // Every page below is in a fresh context of its own: an empty profile, nothing kept.
    browser = await sharedChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => server?.close(resolve));
  });

  async function openDocs(page: Page) {
    await page.goto(`${base}/api/v1/docs`);
    await page.locator('.btn.authorize').waitFor();
    await page.locator('.opblock').first().waitFor();
  }

  it('shows Authorize on the first screen and the callers of an operation', async () => {
    const page = await browser.newPage({ viewport });
    await openDocs(page);
    const box = await page.locator('.btn.authorize').boundingBox();
    expect(box).not.toBeNull();
    expect(box!.y + box!.height).toBeLessThanOrEqual(viewport.height);
    mkdirSync(outputDir, { recursive: true });
    await page.screenshot({ path: join(outputDir, 'docs-first-screen.png') });

    const operation = page.locator('#operations-Devices-getDevice');
    expect(await operation.locator('.opblock-summary .x-callers').innerText()).toBe(
      'operator · admin key · viewer key',
    );
    const operatorOnly = page.locator('#operations-Organizations-createOrganization .opblock-summary .x-callers');
    expect(await operatorOnly.innerText()).toBe('operator');
    await operation.locator('.opblock-summary-control').click();
    const callers = operation.locator('.opblock-body', { hasText: 'x-callers' });
    await callers.waitFor();
    const text = await callers.innerText();
    for (const caller of ['operator', 'admin', 'viewer']) expect(text).toContain(caller);
    await operation.screenshot({ path: join(outputDir, 'docs-operation.png') });
    await page.close();
  }, 120_000);

  it('uses an authorized organization key, and keeps it nowhere after a reload', async () => {
    const org = await createOrganization(ctx);
    const { key } = await createApiKey(ctx, org.id, 'admin');
    const context = await browser.newContext({ viewport });
    const page = await context.newPage();
    await openDocs(page);

    await page.locator('.btn.authorize').first().click();
    const dialog = page.locator('.dialog-ux');
    const scheme = dialog.locator('.auth-container', { hasText: 'OrganizationKey' });
    await scheme.locator('input').fill(key);
    await scheme.locator('button.authorize').click();
    await dialog.locator('button.close-modal').click();

    // The key works: "Execute" on GET /organizations answers its own organization.
    const list = page.locator('#operations-Organizations-listOrganizations');
    await list.locator('.opblock-summary-control').click();
    await list.locator('button.execute').click();
    const answer = list.locator('.live-responses-table tr.response');
    await answer.waitFor();
    expect(await answer.locator('.response-col_status').innerText()).toContain('200');
    expect(await answer.locator('.response-col_description').innerText()).toContain(org.id);

    // Compared as booleans, so a failure does not print the key.
    const kept = async () =>
      (
        await page.evaluate(() => JSON.stringify({ local: { ...localStorage }, session: { ...sessionStorage } }))
      ).includes(key);
    expect(await kept()).toBe(false);
    await page.reload();
    await openDocs(page);
    expect(await page.evaluate(() => localStorage.length)).toBe(0);
    expect(await kept()).toBe(false);
    expect(JSON.stringify(await context.cookies()).includes(key)).toBe(false);
    // Nothing authorized any more: the lock is open again.
    await expect(page.locator('.btn.authorize.unlocked').count()).resolves.toBeGreaterThan(0);
    await context.close();
  }, 120_000);
});
