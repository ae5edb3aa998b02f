/**
 * What each device has, in the portal over HTTP in-process: the device page's last report
 * and convergence per Merkmal after a real agent report, the device list's status and
 * convergence columns, and the fleet overview at /portal with the fleet-status figures,
 * each a link to the devices it counts, and the ISO builds in progress; the overview in
 * English. A viewer reads the same pages; another organization's ids are 404 and its
 * devices and builds are on no page.
 */
import { describe, expect, it } from 'vitest';
import { catalogs } from '../../api/portal/i18n/catalog.ts';
import { createApiKey } from '../support/access.ts';
import { enrollAgent, report } from '../support/agent.ts';
import { useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { insertDevice, TEMPLATE_IDS } from '../support/devices.ts';
import { PortalClient } from '../support/portal_client.ts';

const ctx = useTestApp();

async function signedIn(key: string, acceptLanguage?: string) {
  const b = new PortalClient(ctx.app, `10.2.0.${Math.floor(Math.random() * 250) + 1}`, acceptLanguage);
  expect((await b.signIn(key)).status).toBe(303);
  return b;
}

/** Every string of a catalog section by its path (its functions left out). */
function flatStrings(value: unknown, path = ''): Record<string, string> {
  if (typeof value === 'string') return { [path]: value };
  if (value === null || typeof value !== 'object') return {};
  return Object.assign({}, ...Object.entries(value).map(([k, v]) => flatStrings(v, `${path}.${k}`)));
}

/** The text of the page's element with this attribute, its tags removed. */
function textOf(html: string, row: string, field: string): string {
  const start = html.indexOf(row);
  expect(start, row).toBeGreaterThan(-1);
  const cell = new RegExp(`data-field="${field}"[^>]*>([\\s\\S]*?)</td>`).exec(html.slice(start));
  expect(cell, `${row} ${field}`).not.toBeNull();
  return cell![1]!
    .replace(/<[^>]+>/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

/**
 * An organization with a bootstrapped device whose firefox apply failed (as the device
 * agent reports it: a detail object with the message), an enrolled one without an agent,
 * a stale one, and its admin's and viewer's sessions.
 */
async function fleet() {
  const org = await createOrganization(ctx);
  const agent = await enrollAgent(ctx, { organizationId: org.id, serial: `FP-${crypto.randomUUID().slice(0, 6)}` });
  const res = await report(ctx, agent.secret, [
    {
      merkmal: 'firefox',
      event: 'apply_failed',
      detail: { role: 'firefox', changed: false, message: 'firefox: Paketquelle nicht erreichbar' },
    },
    { merkmal: 'libreoffice', event: 'removed', detail: 'libreoffice entfernt' },
  ]);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const enrolled = await insertDevice(ctx.sql, { organizationId: org.id, templateId: TEMPLATE_IDS.debianStandard });
  const stale = await insertDevice(ctx.sql, { organizationId: org.id, templateId: TEMPLATE_IDS.debianStandard });
  await ctx.sql`update devices set agent_secret_hash = sha256('x'::bytea || id::text::bytea),
    agent_secret_issued_at = now() - interval '1 day' where id = ${stale.id}`;
  const admin = await signedIn((await createApiKey(ctx, org.id, 'admin', { name: 'Portal-Admin' })).key);
  const viewer = await signedIn((await createApiKey(ctx, org.id, 'viewer', { name: 'Portal-Leser' })).key);
  return { org, deviceId: agent.device_id, enrolled, stale, admin, viewer };
}

describe('the device page: last report and convergence per Merkmal', () => {
  it("shows a failed apply with the agent's message, a removal with its text, and the device's worst convergence", async () => {
    const f = await fleet();
    for (const b of [f.admin, f.viewer]) {
      const page = await b.get(`/portal/devices/${f.deviceId}`);
      expect(page.status).toBe(200);
      const firefox = 'data-merkmal="firefox"';
      expect(textOf(page.text, firefox, 'convergence')).toBe('fehlgeschlagen');
      expect(textOf(page.text, firefox, 'reported')).toMatch(
        /^Anwenden fehlgeschlagen \d\d\.\d\d\.\d{4}, \d\d:\d\d UTC firefox: Paketquelle nicht erreichbar$/,
      );
      const libreoffice = 'data-merkmal="libreoffice"';
      expect(textOf(page.text, libreoffice, 'convergence')).toBe('umgesetzt'); // absent by default, removed
      expect(textOf(page.text, libreoffice, 'reported')).toContain('entfernt');
      expect(textOf(page.text, libreoffice, 'reported')).toContain('libreoffice entfernt');
      expect(textOf(page.text, 'data-merkmal="qgis"', 'reported')).toBe('noch keiner');
      expect(textOf(page.text, 'data-merkmal="qgis"', 'convergence')).toBe('ausstehend');
      expect(textOf(page.text, '<th scope="row">Status', 'status')).toBe('aktiv');
      expect(textOf(page.text, '<th scope="row">Umsetzung', 'convergence')).toBe('fehlgeschlagen');
      expect(page.text).toContain('class="badge failed"');
    }
    // The page says what the API says.
    const api = await ctx.request('GET', `/api/v1/devices/${f.deviceId}/catalog`);
    expect(api.body.items.find((i: { merkmal: string }) => i.merkmal === 'firefox')).toMatchObject({
      convergence: 'failed',
      reported: { event: 'apply_failed' },
    });
  });

  it('a device without an agent shows its status and no convergence', async () => {
    const f = await fleet();
    const page = await f.viewer.get(`/portal/devices/${f.enrolled.id}`);
    expect(page.status).toBe(200);
    expect(textOf(page.text, '<th scope="row">Status', 'status')).toBe('registriert');
    expect(textOf(page.text, '<th scope="row">Umsetzung', 'convergence')).toBe('–');
  });
});

describe('the device list: status and convergence', () => {
  it('shows each device with its status and worst convergence, for admins and viewers alike', async () => {
    const f = await fleet();
    for (const b of [f.admin, f.viewer]) {
      const list = await b.get('/portal/devices');
      expect(list.status).toBe(200);
      const row = (id: string) => `href="/portal/devices/${id}"`;
      expect(textOf(list.text, row(f.deviceId), 'status')).toBe('aktiv');
      expect(textOf(list.text, row(f.deviceId), 'convergence')).toBe('fehlgeschlagen');
      expect(textOf(list.text, row(f.enrolled.id), 'status')).toBe('registriert');
      expect(textOf(list.text, row(f.enrolled.id), 'convergence')).toBe('–');
      expect(textOf(list.text, row(f.stale.id), 'status')).toBe('veraltet');
      expect(textOf(list.text, row(f.stale.id), 'convergence')).toBe('ausstehend');
    }
  });
});

describe('the fleet overview at /portal', () => {
  it('shows the fleet-status figures, each a link to the devices it counts; a viewer sees the same', async () => {
    const f = await fleet();
    await insertDevice(ctx.sql, { organizationId: f.org.id, deprovisioned: true });
    await insertDevice(ctx.sql, { organizationId: f.org.id, archived: true });
    const api = await ctx.request('GET', `/api/v1/organizations/${f.org.id}/fleet-status`);
    expect(api.body.devices).toEqual({ total: 4, enrolled: 1, active: 1, stale: 1, deprovisioned: 1 });
    const firefox = api.body.merkmale.find((m: { merkmal: string }) => m.merkmal === 'firefox');
    expect(firefox).toMatchObject({ present: 2, failed: 1, pending: 1 });
    const pages = [await f.admin.get('/portal'), await f.viewer.get('/portal')];
    for (const page of pages) {
      expect(page.status).toBe(200);
      expect(page.text).toContain('<title>Übersicht');
      expect(page.text).toMatch(/data-figure="total"><a class="figure" href="\/portal\/devices">4<\/a>/);
      for (const status of ['enrolled', 'active', 'stale', 'deprovisioned']) {
        expect(page.text).toMatch(
          new RegExp(`data-figure="${status}">.*?href="/portal/devices\\?status=${status}"[^>]*>1<`),
        );
      }
      for (const m of api.body.merkmale as Array<Record<string, number | string>>) {
        const row = `data-merkmal="${m.merkmal}"`;
        for (const field of ['present', 'absent', 'converged', 'pending', 'failed']) {
          expect(textOf(page.text, row, field), `${m.merkmal} ${field}`).toBe(String(m[field]));
        }
      }
      expect(page.text).toContain('href="/portal/devices?merkmal=firefox&amp;convergence=failed"');
      expect(page.text).toContain('href="/portal/devices?merkmal=firefox&amp;convergence=pending"');
      // A figure of zero links nowhere; a Merkmal's converged figure links as its others.
      expect(page.text).not.toContain('merkmal=qgis&amp;convergence=failed');
      expect(textOf(page.text, 'data-merkmal="libreoffice"', 'converged')).toBe('1');
      expect(page.text).toContain('href="/portal/devices?merkmal=libreoffice&amp;convergence=converged"');
    }
    // Apart from who is signed in (the header, the sign-in's flash), the viewer's page is the admin's.
    const content = (html: string) =>
      html.replace(/<header>[\s\S]*<\/header>/, '').replace(/<p class="flash"[^>]*>.*?<\/p>/, '');
    expect(content(pages[1]!.text)).toBe(content(pages[0]!.text));
  });

  it('each figure links to the device list showing exactly the devices it counts', async () => {
    const f = await fleet();
    const overview = await f.viewer.get('/portal');
    const links = [
      ...overview.text.matchAll(/<a (?:class="figure" )?href="(\/portal\/devices[^"]*)"[^>]*>(\d+)<\/a>/g),
    ];
    expect(links.length).toBeGreaterThan(8);
    for (const [, href, figure] of links) {
      const list = await f.viewer.get(href!.replaceAll('&amp;', '&'));
      expect(list.status, href).toBe(200);
      const rows = list.text.match(/<td><a href="\/portal\/devices\/[0-9a-f-]+">/g) ?? [];
      expect(rows.length, href).toBe(Number(figure));
    }
    const failed = await f.viewer.get('/portal/devices?merkmal=firefox&convergence=failed');
    expect(failed.text).toContain(`href="/portal/devices/${f.deviceId}"`);
    expect(failed.text).toContain('data-filter="merkmal"');
    expect(textOf(failed.text, `href="/portal/devices/${f.deviceId}"`, 'convergence')).toBe('fehlgeschlagen');
  });

  it('the device list filters by status and convergence, and sorts', async () => {
    const f = await fleet();
    const ids = async (query: string) => {
      const list = await f.admin.get(`/portal/devices${query}`);
      expect(list.status, query).toBe(200);
      return [...list.text.matchAll(/<td><a href="\/portal\/devices\/([0-9a-f-]+)">/g)].map((m) => m[1]);
    };
    expect(await ids('')).toEqual([f.deviceId, f.enrolled.id, f.stale.id]); // creation order, as always
    expect(await ids('?sort=-created_at')).toEqual([f.stale.id, f.enrolled.id, f.deviceId]);
    expect(await ids('?status=stale')).toEqual([f.stale.id]);
    expect(await ids('?status=enrolled')).toEqual([f.enrolled.id]);
    expect(await ids('?convergence=failed')).toEqual([f.deviceId]);
    expect(await ids('?convergence=pending')).toEqual([f.stale.id]);
    expect(await ids('?merkmal=libreoffice&convergence=pending')).toEqual([f.stale.id]);
    // A Merkmal with a convergence filters by that Merkmal's; without one it is no filter.
    expect(await ids('?merkmal=firefox&convergence=converged')).toEqual([]);
    expect(await ids('?merkmal=firefox')).toEqual([f.deviceId, f.enrolled.id, f.stale.id]);
    const unknown = await f.admin.get('/portal/devices?merkmal=nichts&convergence=failed');
    expect(unknown.status).toBe(422);
    expect(unknown.text).toContain('Dieses Merkmal gibt es nicht');
  });

  it('in English: the figures, the catalog table and the ISO builds, none of its German left', async () => {
    const f = await fleet();
    const english = await signedIn((await createApiKey(ctx, f.org.id, 'viewer')).key, 'en');
    const page = await english.get('/portal');
    expect(page.status).toBe(200);
    expect(page.text).toContain('<html lang="en">');
    expect(page.text).toContain('<title>Overview');
    expect(page.text).toContain('<ul class="figures" aria-label="Devices by status">');
    expect(page.text).toMatch(
      /data-figure="total"><a class="figure" href="\/portal\/devices">3<\/a>devices \(archived ones excluded\)/,
    );
    expect(page.text).toMatch(/data-figure="stale">.*?aria-label="1 stale">1<\/a><\/span>stale</);
    expect(page.text).toContain('<h2>Catalog</h2>');
    expect(page.text).toContain('<th scope="col">Catalog item</th>');
    expect(page.text).toContain('aria-label="Firefox: 1 failed"');
    expect(page.text).toContain('<h2>ISO builds in progress</h2>');
    expect(page.text).toContain(
      'No ISO build in progress. Build an installation ISO under <a href="/portal/iso-builds">ISO builds</a>.',
    );
    // None of the overview's German strings is on the English page (the functions' are checked above).
    for (const [key, german] of Object.entries(flatStrings(catalogs.de.overview))) {
      if (german !== flatStrings(catalogs.en.overview)[key]) expect(page.text, key).not.toContain(`>${german}<`);
    }
    const deutsch = await f.viewer.get('/portal');
    expect(deutsch.text).toContain('<ul class="figures" aria-label="Geräte nach Status">');
    expect(deutsch.text).toContain('<h2>ISO-Builds in Arbeit</h2>');
    expect(deutsch.text).toContain(
      'Kein ISO-Build in Arbeit. Ein Installations-ISO erzeugen Sie unter <a href="/portal/iso-builds">ISO-Builds</a>.',
    );
  });

  it('lists the ISO builds queued or running, oldest first, at most five, in both languages', async () => {
    const f = await fleet();
    const other = await fleet();
    const build = async (org: string, status: string, hoursAgo: number, progress = 0) => {
      const [row] = await ctx.sql<{ id: string }[]>`
        insert into iso_builds (organization_id, status, progress, created_at, started_at, finished_at, expires_at,
                                size_bytes, sha256, file_name)
        select ${org}, ${status}, ${progress}, now() - make_interval(hours => ${hoursAgo}),
               case when ${status} <> 'pending' then now() end,
               case when ${status} in ('completed', 'failed') then now() end,
               case when ${status} = 'completed' then now() + interval '7 days' end,
               case when ${status} = 'completed' then 1000 end,
               case when ${status} = 'completed' then repeat('a', 64) end,
               case when ${status} = 'completed' then 'x.iso' end
        returning id`;
      return row!.id;
    };
    const running = await build(f.org.id, 'running', 3, 40);
    const queued = await build(f.org.id, 'pending', 2);
    const done = await build(f.org.id, 'completed', 4, 100);
    const failed = await build(f.org.id, 'failed', 5, 10);
    const theirs = await build(other.org.id, 'running', 6, 70);
    const english = await signedIn((await createApiKey(ctx, f.org.id, 'viewer')).key, 'en');
    const pages = { de: await f.viewer.get('/portal'), en: await english.get('/portal') };
    for (const [language, page] of Object.entries(pages)) {
      const section = page.text.slice(page.text.indexOf('data-section="iso-builds"'));
      expect(
        [...section.matchAll(/data-build="([0-9a-f-]+)"/g)].map((m) => m[1]),
        language,
      ).toEqual([running, queued]);
      for (const id of [done, failed, theirs]) expect(page.text).not.toContain(id);
      expect(section).toContain('href="/portal/iso-builds"');
    }
    expect(textOf(pages.de.text, `data-build="${running}"`, 'status')).toBe('läuft');
    expect(textOf(pages.de.text, `data-build="${queued}"`, 'status')).toBe('wartet');
    expect(textOf(pages.de.text, `data-build="${running}"`, 'progress')).toBe('40 % 40 %');
    expect(pages.de.text).toContain('aria-label="Fortschritt 40\u00a0%"');
    expect(pages.de.text).toContain('<th scope="col">Angelegt</th>');
    expect(textOf(pages.en.text, `data-build="${running}"`, 'status')).toBe('running');
    expect(textOf(pages.en.text, `data-build="${queued}"`, 'status')).toBe('queued');
    expect(textOf(pages.en.text, `data-build="${running}"`, 'progress')).toBe('40% 40%');
    expect(pages.en.text).toContain('aria-label="Progress 40%"');
    expect(pages.en.text).toContain('<th scope="col">Created</th>');
    expect(pages.en.text).toContain('>all ISO builds</a>');

    // More than five in progress: the oldest five, and how many there are in all.
    for (let i = 0; i < 5; i++) await build(f.org.id, 'pending', 1);
    const de = (await f.viewer.get('/portal')).text;
    const en = (await english.get('/portal')).text;
    for (const page of [de, en]) {
      const section = page.slice(page.indexOf('data-section="iso-builds"'));
      expect(section.match(/data-build="/g)).toHaveLength(5);
      expect(section.indexOf(running)).toBeLessThan(section.indexOf(queued));
    }
    expect(de).toContain('5 von 7 gezeigt: <a href="/portal/iso-builds">alle ISO-Builds</a>');
    expect(en).toContain('5 of 7 shown: <a href="/portal/iso-builds">all ISO builds</a>');
  });

  it("counts none of another organization's devices; its device is 404; without a session /portal is the sign-in", async () => {
    const f = await fleet();
    const other = await fleet();
    const page = await f.admin.get('/portal');
    expect(page.text).toMatch(/data-figure="total"><a class="figure" href="\/portal\/devices">3<\/a>/);
    for (const b of [f.admin, f.viewer]) {
      expect((await b.get(`/portal/devices/${other.deviceId}`)).status).toBe(404);
      expect((await b.get(`/portal/devices?group_id=${crypto.randomUUID()}`)).status).toBe(404);
    }
    const anonymous = new PortalClient(ctx.app, '10.2.1.1');
    const res = await anonymous.get('/portal');
    expect(res.status).toBe(303);
    expect(res.location).toBe('/portal/login');
  });
});
