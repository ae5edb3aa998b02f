/**
 * A staged rollout in a real browser (Debian's Chromium, headless, driven by playwright-core)
 * against the real service process (API and worker in one, as `npm start` runs them), with
 * simulated agents speaking the agent protocol over HTTP with their own secrets: an admin
 * selects LibreOffice on an org unit's page, reads how many devices it changes and rolls it
 * out in two rings; the bars of the rollout's page move as ring 1's agents report (the page
 * refreshes itself by its script, the test never reloads it); ring 2 opens, its agents
 * fail, and the worker's judge pauses the rollout, which the page shows with its reason;
 * the admin resumes it, accepting the failures, and it completes with the override written
 * at the org unit. Screenshots go to test-output/portal/.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomToken } from '../../api/http/crypto.ts';
import { type AgentAnswer, SimAgent } from '../bench/fleet_agent.ts';
import { activateDevice, resolveDevice } from '../support/activation.ts';
import { sharedChromium } from '../support/chromium.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { startService, type ServiceProcess, httpTestContext } from '../support/service_process.ts';
import { missingTools } from '../support/tools.ts';

const outputDir = fileURLToPath(new URL('../../test-output/portal/', import.meta.url));
const adminToken = randomToken();
const MERKMAL = 'libreoffice'; // absent by default
const DEVICES = 12;

describe.skipIf(missingTools('chromium'))('a staged rollout in the portal, in Chromium', () => {
  let db: TestDatabase;
  let service: ServiceProcess;
  let dataDir: string;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const cspReports: string[] = [];
  const fleet = { orgId: '', unitId: '', adminKey: '' };
  /** The agents, and the devices whose LibreOffice orders fail. */
  const agents: SimAgent[] = [];
  const failing = new Set<string>();

  /** The test builders' context over HTTP to the service process (the operator token unless told). */
  const overHttp = httpTestContext(() => service.base, adminToken);

  async function api(method: string, path: string, body?: unknown) {
    const res = await overHttp.request(method, path, { body });
    expect(res.status, `${method} ${path}: ${JSON.stringify(res.body)}`).toBeLessThan(300);
    return res.body;
  }

  /** The agent's requests, to the service process over HTTP. */
  const send = async (path: string, headers: Record<string, string>, body: string): Promise<AgentAnswer> => {
    const res = await fetch(`${service.base}${path}`, { method: 'POST', headers, body });
    return {
      status: res.status,
      etag: res.headers.get('etag'),
      retryAfter: res.headers.get('retry-after'),
      body: await res.text(),
    };
  };

  /** One round of these agents: check in, and report what a 200 ordered (through the agent routes, with their secrets). */
  async function cycle(some: SimAgent[]) {
    for (const agent of some) expect([200, 304]).toContain((await agent.cycle()).checkin);
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    dataDir = await mkdtemp(join(tmpdir(), 'fleet-portal-rollout-'));
    await mkdir(outputDir, { recursive: true });
    service = await startService({ DATABASE_URL: db.url, ADMIN_TOKEN: adminToken, DATA_DIR: dataDir });
    const org = await api('POST', '/api/v1/organizations', { name: 'Stadtverwaltung' });
    fleet.orgId = org.id;
    fleet.adminKey = (
      await api('POST', `/api/v1/organizations/${org.id}/api-keys`, { name: 'Frau Admin', role: 'admin' })
    ).key;
    fleet.unitId = (await api('POST', `/api/v1/organizations/${org.id}/org-units`, { name: 'Bürgerbüro' })).id;
    for (let i = 0; i < DEVICES; i++) {
      const activated = await activateDevice(overHttp, org.id, `BB-${String(i).padStart(3, '0')}`);
      const blueprint = await resolveDevice(overHttp, { code: activated.code, device_id: activated.device_id });
      await api('PUT', `/api/v1/devices/${activated.device_id}/org-unit`, { oe_id: fleet.unitId });
      const id = activated.device_id;
      agents.push(
        new SimAgent(id, blueprint.agent.bootstrap_token, send, {
          pollSeconds: 300,
          failMerkmal: MERKMAL,
          failProbability: 0.5,
          random: () => (failing.has(id) ? 0 : 0.9),
        }),
      );
    }
    // Bootstrapped, checked in, and every order of the state before reported.
    await cycle(agents);
    // The pages' German texts are what this test reads: the browser asks for German.
    browser = await sharedChromium();
    context = await browser.newContext({ locale: 'de-DE' });
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

  async function screenshot(name: string) {
    const file = join(outputDir, name);
    await page.screenshot({ path: file, fullPage: true });
    console.log(`screenshot: ${file}`);
  }

  /** A ring's figure as the page shows it now. */
  async function figure(ring: number, count: 'converged' | 'pending' | 'failed'): Promise<number> {
    const text = await page.locator(`tr[data-ring="${ring}"] [data-count=${count}]`).textContent({ timeout: 1000 });
    return Number.parseInt(text ?? '', 10);
  }

  /** Waits until the page (refreshing itself) shows what `check` wants. */
  async function until(what: string, check: () => Promise<boolean>, timeoutMs = 30_000) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (await check().catch(() => false)) return;
      if (Date.now() > deadline) throw new Error(`the page never showed: ${what}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  it('creates the rollout in rings from the org unit page, watches its bars, sees the automatic pause, resumes and completes', async () => {
    await page.goto(`${service.base}/portal/login`);
    await page.getByLabel('API-Schlüssel').fill(fleet.adminKey);
    await page.getByRole('button', { name: 'Anmelden' }).click();
    await page.waitForURL('**/portal/devices');

    // The org unit's page: its catalog, and the change that leads to its confirmation.
    await page.getByRole('link', { name: 'Organisationseinheiten' }).click();
    await page.getByRole('link', { name: 'Bearbeiten …' }).click();
    await page.waitForURL(`**/portal/org-units/${fleet.unitId}`);
    await page.getByRole('button', { name: 'LibreOffice an der OE Bürgerbüro: auswählen' }).click();
    await page.waitForURL(`**/portal/org-units/${fleet.unitId}/catalog/${MERKMAL}/select?**`);
    expect(await page.locator('[data-field=count]').getAttribute('data-count')).toBe(String(DEVICES));
    await page.getByText(`ändert den Zustand von ${DEVICES} Geräten`).waitFor();
    expect(await page.getByLabel(/^Ringe/).inputValue()).toBe('10, 50, 100');
    await screenshot('rollout-confirm.png');
    await page.getByLabel(/^Ringe/).fill('50, 100');
    await page.getByLabel(/^Wartezeit je Ring/).fill('0');
    await page.getByRole('button', { name: 'In Ringen ausrollen' }).click();
    await page.waitForURL(/\/portal\/rollouts\/[0-9a-f-]{36}$/);
    await page.getByText('Rollout gestartet').waitFor();
    const rolloutId = page.url().split('/').pop()!;

    const rows = await db.sql<{ device_id: string; ring: number }[]>`
      select device_id, ring::int from rollout_devices where rollout_id = ${rolloutId}`;
    expect(rows).toHaveLength(DEVICES);
    const ring = (k: number) => agents.filter((a) => rows.some((r) => r.device_id === a.deviceId && r.ring === k));
    const [first, second] = [ring(0), ring(1)];
    expect(first.length).toBeGreaterThan(0);
    expect(second.length).toBeGreaterThan(0);
    for (const a of second) failing.add(a.deviceId);
    expect(await page.locator('tr[data-ring="1"]').getAttribute('data-opened')).toBe('false');
    expect(await figure(0, 'converged')).toBe(0);
    expect(await figure(0, 'pending')).toBe(first.length);

    // Ring 1's agents report, one half and then the rest: the bar moves without a reload.
    const half = first.slice(0, Math.ceil(first.length / 2));
    await cycle(half);
    await until(`ring 1: ${half.length} converged`, async () => (await figure(0, 'converged')) === half.length);
    const bar = page.locator('tr[data-ring="0"] svg.bar rect.converged');
    expect(Number(await bar.getAttribute('width'))).toBeCloseTo((100 * half.length) / first.length, 5);
    await screenshot('rollout-ring1-half.png');
    await cycle(first.slice(half.length));
    await until(`ring 1: all ${first.length} converged`, async () => (await figure(0, 'converged')) === first.length);

    // All of ring 1 reported well: the judge opens ring 2 (no soak); its agents fail.
    await until(
      'ring 2 opened',
      async () => (await page.locator('tr[data-ring="1"]').getAttribute('data-opened')) === 'true',
    );
    await cycle(second);
    const reason = `in Ring 2 sind ${second.length} von ${second.length} berichtenden Geräten fehlgeschlagen`;
    await until(
      'the automatic pause with its reason',
      async () =>
        (await page.locator('[data-field=status]').getAttribute('data-reason')) === 'failure_ratio' &&
        ((await page.locator('[data-field=status]').textContent()) ?? '').includes(reason),
    );
    expect(await page.locator('[data-field=status]').textContent()).toContain('automatisch angehalten');
    expect(await figure(1, 'failed')).toBe(second.length);
    await screenshot('rollout-paused.png');

    // Resume after the confirmation: the failures are accepted and the last ring passes.
    await page.getByRole('link', { name: 'Fortsetzen …' }).click();
    await page.waitForURL(`**/portal/rollouts/${rolloutId}/confirm/resume`);
    await page.getByRole('button', { name: 'Fortsetzen' }).click();
    await page.waitForURL(`**/portal/rollouts/${rolloutId}`);
    await page.getByText('Rollout fortgesetzt.').waitFor();
    await until(
      'completed',
      async () => (await page.locator('[data-field=status]').getAttribute('data-status')) === 'completed',
    );
    expect(await page.locator('[data-field=status]').textContent()).toBe('abgeschlossen');
    expect(await page.getByRole('link', { name: /Anhalten|Fortsetzen|Abbrechen/ }).count()).toBe(0);
    await screenshot('rollout-completed.png');

    // The change is written at the org unit, as a selection would.
    await page.goto(`${service.base}/portal/org-units/${fleet.unitId}`);
    expect(await page.locator(`tr[data-merkmal=${MERKMAL}] [data-field=override]`).textContent()).toBe('vorhanden');
    await page.goto(`${service.base}/portal/rollouts?status=completed`);
    expect(await page.locator(`tr[data-rollout="${rolloutId}"]`).count()).toBe(1);
    expect(cspReports).toEqual([]);
  }, 240_000);
});
