/**
 * The portal fits its screen, in a real browser (Debian's Chromium, headless, driven by
 * playwright-core) against the real service process: an organization whose names are as
 * long as the schema allows (units, groups, the organization, a key, a webhook's URL, a
 * device's serial and hostname, its hardware and its agent's message), and an admin who
 * walks every page the navigation reaches, as the language test's crawl does, at 1366 × 800
 * and at 390 × 800. No page is wider than the window, and a name of several words breaks
 * between its words, never inside one. Screenshots of every page at both sizes go to
 * test-output/screenshots/. One browser, one tab for the whole walk.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomToken } from '../../api/http/crypto.ts';
import { createEnrollmentSession } from '../support/activation.ts';
import { checkin, enrollAgent, report } from '../support/agent.ts';
import { sharedChromium } from '../support/chromium.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { startService, type ServiceProcess, httpTestContext } from '../support/service_process.ts';
import { missingTools } from '../support/tools.ts';

const outputDir = fileURLToPath(new URL('../../test-output/screenshots/', import.meta.url));
const adminToken = randomToken();
const SIZES = [
  [1366, 800],
  [390, 800],
] as const;

/** `words` repeated to exactly `length` characters, ending on a whole word (as a long real name would). */
function longName(words: string, length: number): string {
  let name = words;
  while (name.length + 1 + words.length <= length) name = `${name} ${words}`;
  return `${name} ${'X'.repeat(Math.max(0, length - name.length - 1))}`.slice(0, length).trim();
}
const long = (word: string, length: number) => word.repeat(Math.ceil(length / word.length)).slice(0, length);

/** Multi-word names the schema allows at their longest: each must break between its words. */
const UNIT = longName('Grundschule Nord', 200);
const CHILD_UNIT = longName('Computerraum Erdgeschoss', 200);
const GROUP = longName('Laptopwagen Lehrerzimmer', 200);
const ORGANIZATION = longName('Stadtverwaltung Musterstadt', 200);
const KEY = longName('Schulträger Verwaltung', 200);

describe.skipIf(missingTools('chromium'))('the portal fits its screen, in Chromium', () => {
  let db: TestDatabase;
  let service: ServiceProcess;
  let dataDir: string;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let adminKey = '';

  const overHttp = httpTestContext(() => service.base, adminToken);
  async function api(method: string, path: string, body?: unknown, token?: string) {
    const res = await overHttp.request(method, path, { body, ...(token ? { token } : {}) });
    expect(res.status, `${method} ${path}: ${JSON.stringify(res.body)}`).toBeLessThan(300);
    return res.body;
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    dataDir = await mkdtemp(join(tmpdir(), 'fleet-portal-fit-'));
    await mkdir(outputDir, { recursive: true });
    service = await startService({ DATABASE_URL: db.url, ADMIN_TOKEN: adminToken, DATA_DIR: dataDir });

    const org = await api('POST', '/api/v1/organizations', { name: ORGANIZATION });
    adminKey = (await api('POST', `/api/v1/organizations/${org.id}/api-keys`, { name: KEY, role: 'admin' })).key;
    const unit = (await api('POST', `/api/v1/organizations/${org.id}/org-units`, { name: UNIT })).id;
    const child = (
      await api('POST', `/api/v1/organizations/${org.id}/org-units`, { name: CHILD_UNIT, parent_id: unit })
    ).id;
    const unbroken = (
      await api('POST', `/api/v1/organizations/${org.id}/org-units`, {
        name: long('AußenstelleOhneLeerzeichen', 200),
        parent_id: child,
      })
    ).id;
    const group = (await api('POST', `/api/v1/organizations/${org.id}/groups`, { name: GROUP })).id;
    await api('POST', `/api/v1/organizations/${org.id}/groups`, { name: long('GruppeOhneLeerzeichen', 200) });

    // A device as long as it may be, with hardware, an agent's version and a failed report.
    const agent = await enrollAgent(overHttp, { organizationId: org.id, serial: long('SERIENNUMMER', 128) });
    const res = await checkin(overHttp, agent.secret, {
      agent_version: long('1.4.2-', 100),
      hardware: {
        cpu: { cores: 8, model: longName('Intel(R) Core(TM) i5-8250U CPU @ 1.60GHz', 200) },
        memory_mb: 16_000,
        disks: [{ name: long('nvme0n1', 60), size_bytes: 512_000_000_000 }],
        os: { name: 'Debian GNU/Linux 12 (bookworm)', kernel: long('6.1.0-13-amd64', 80) },
      },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    await report(overHttp, agent.secret, [
      {
        merkmal: 'firefox',
        event: 'apply_failed',
        detail: { message: `${longName('Paketquelle nicht erreichbar', 300)} ${long('/var/cache/apt/', 200)}` },
      },
    ]);
    // Its actions: a script with long lines, finished with a long output and upgraded packages; a reboot waiting.
    const script = await api('POST', `/api/v1/devices/${agent.device_id}/actions`, {
      type: 'script',
      parameters: {
        interpreter: 'bash',
        script: `${longName('echo Wartungsfenster', 300)}\n${long('/usr/local/sbin/', 400)}`,
      },
    });
    const agentCall = (path: string, body?: unknown) =>
      overHttp.request('POST', `/api/v1/agent/actions/${script.id}/${path}`, { token: agent.secret, body });
    expect((await agentCall('start')).status).toBe(204);
    const result = await agentCall('result', {
      exit_code: 1,
      output: `${longName('Paketquelle nicht erreichbar', 3000)}\n${long('/var/log/apt/', 3000)}`,
      duration_ms: 1234,
      details: { upgraded: [{ name: long('paket-', 100), from: long('1.0-', 60), to: long('1.1-', 60) }] },
    });
    expect(result.status, JSON.stringify(result.body)).toBe(204);
    await api('POST', `/api/v1/devices/${agent.device_id}/actions`, {
      type: 'reboot',
      parameters: { message: longName('Neustart für Sicherheitsupdates', 200) },
    });
    await db.sql`update devices set hostname = ${long('hostname-ohne-leerzeichen-', 253)} where id = ${agent.device_id}`;
    await api('PUT', `/api/v1/devices/${agent.device_id}/org-unit`, { oe_id: unbroken });
    await api('PUT', `/api/v1/groups/${group}/devices/${agent.device_id}`);
    await api('POST', `/api/v1/organizations/${org.id}/rollouts`, {
      scope: 'org_unit',
      scope_id: unit,
      merkmal: 'qgis',
      action: 'select',
      rings: [50, 100],
    });
    await api('POST', `/api/v1/organizations/${org.id}/rollouts`, {
      scope: 'org_unit',
      scope_id: unit,
      device_action: { type: 'reboot', parameters: { message: longName('Neustart für Sicherheitsupdates', 200) } },
      rings: [50, 100],
    });
    await createEnrollmentSession(overHttp, org.id, { max_devices: 30 });
    await api('POST', `/api/v1/organizations/${org.id}/webhooks`, {
      url: `https://hooks.example.com/${long('pfad/', 2000)}`,
      events: ['device.activated'],
    });

    browser = await sharedChromium();
    context = await browser.newContext({ locale: 'de-DE' });
    page = await context.newPage();
  }, 180_000);

  afterAll(async () => {
    await context?.close();
    await browser?.close();
    expect(await service?.stop('SIGTERM')).toBe(0);
    await db?.drop();
    await rm(dataDir, { recursive: true, force: true });
  });

  /** The page's width, and each multi-word long name whose words a line break splits. */
  async function measure(): Promise<{ scrollWidth: number; innerWidth: number; split: string[] }> {
    return page.evaluate(
      (names) => {
        const split: string[] = [];
        const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
          const text = node.textContent ?? '';
          if (!names.some((name) => text.includes(name.slice(0, 40)))) continue;
          if (!node.parentElement?.checkVisibility()) continue; // not shown (a closed <details>, an option)
          // Each word on one line: a word split by a line break has two boxes.
          for (const m of text.matchAll(/\S+/g)) {
            // A word of a name without spaces (in a path beside a long name) must break: not a split.
            if (m[0].length > 40) continue;
            const range = document.createRange();
            range.setStart(node, m.index);
            range.setEnd(node, m.index + m[0].length);
            const lines = new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top)));
            if (lines.size > 1) split.push(`"${m[0]}" in "${text.slice(0, 60)}…"`);
          }
        }
        return { scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth, split };
      },
      [UNIT, CHILD_UNIT, GROUP, ORGANIZATION, KEY],
    );
  }

  it('every page the navigation reaches is no wider than 1366 nor 390 px, and long names break between words', async () => {
    await page.setViewportSize({ width: SIZES[0][0], height: SIZES[0][1] });
    await page.goto(`${service.base}/portal/login`);
    await page.getByLabel('API-Schlüssel').fill(adminKey);
    await page.getByRole('button', { name: 'Anmelden' }).click();
    await page.waitForURL('**/portal/devices');

    const problems: string[] = [];
    const shots: string[] = [];
    /** Measures the page open at this size and keeps its screenshot. */
    async function check(path: string, index: number, width: number) {
      const { scrollWidth, innerWidth, split } = await measure();
      if (scrollWidth > innerWidth) problems.push(`${path} at ${width} px: ${scrollWidth} px wide`);
      if (split.length > 0) problems.push(`${path} at ${width} px: ${split.length} words split, first ${split[0]}`);
      const name = `${String(index).padStart(2, '0')}-${path.replace(/^\/portal\/?/, '').replace(/[^a-z0-9-]+/gi, '_') || 'overview'}`;
      const shot = join(outputDir, String(width), `${name.slice(0, 80)}.png`);
      await page.screenshot({ path: shot, fullPage: true });
      shots.push(shot);
    }
    for (const [width] of SIZES) {
      await rm(join(outputDir, String(width)), { recursive: true, force: true });
      await mkdir(join(outputDir, String(width)), { recursive: true });
    }

    // The crawl of languages.test.ts at the first size: every page once, a list's filters and cursors once each.
    const paths: string[] = [];
    const queue = ['/portal'];
    while (queue.length > 0 && paths.length < 80) {
      const path = queue.shift()!;
      if (paths.includes(path)) continue;
      const res = await page.goto(`${service.base}${path}`);
      expect(res?.status(), path).toBe(200);
      await check(path, paths.length, SIZES[0][0]);
      paths.push(path);
      const links = await page.$$eval('a[href^="/portal"]', (as) => as.map((a) => a.getAttribute('href')!));
      for (const link of links) {
        if (/^\/portal\/(style\.css|rollouts\.js|language\/|logout)/.test(link) || paths.includes(link)) continue;
        if (/\/download$|\.iso$/.test(link.split('?')[0]!)) continue;
        const base = link.split('?')[0];
        if (link.includes('?') && [...paths, ...queue].some((s) => s.includes('?') && s.split('?')[0] === base))
          continue;
        if (!queue.includes(link)) queue.push(link);
      }
    }
    expect(paths.length).toBeGreaterThan(12);
    // The same pages at the other sizes.
    for (const [width, height] of SIZES.slice(1)) {
      await page.setViewportSize({ width, height });
      for (const [i, path] of paths.entries()) {
        await page.goto(`${service.base}${path}`);
        await check(path, i, width);
      }
    }
    console.log(`screenshots: ${join(outputDir, '{1366,390}')}/ (${shots.length})`);
    expect(problems).toEqual([]);
  }, 240_000);
});
