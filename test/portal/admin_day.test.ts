/**
 * The admin's day in the portal: a viewer reads an org unit's and a group's page (name,
 * path, device counts, the catalog) without controls; a sign-in moves the key's
 * `last_used_at`; every org unit select names the unit by its path, and a move offers no
 * unit below the one moved.
 */
import { describe, expect, it } from 'vitest';
import { createApiKey } from '../support/access.ts';
import { useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { addToGroup, insertDevice, insertGroup, insertOrgUnit, TEMPLATE_IDS } from '../support/devices.ts';
import { PortalClient } from '../support/portal_client.ts';

const ctx = useTestApp();

class Browser extends PortalClient {
  constructor() {
    super(ctx.app, `10.54.0.${Math.floor(Math.random() * 250) + 1}`);
  }

  static async signedIn(key: string) {
    const b = new Browser();
    expect((await b.signIn(key)).status).toBe(303);
    return b;
  }
}

/** Schulen / Grundschule Nord / Computerraum 1 with a device, and a group holding it. */
async function fleet() {
  const org = await createOrganization(ctx);
  const schools = await insertOrgUnit(ctx.sql, org.id, 'Schulen');
  const north = await insertOrgUnit(ctx.sql, org.id, 'Grundschule Nord', schools);
  const room = await insertOrgUnit(ctx.sql, org.id, 'Computerraum 1', north);
  const south = await insertOrgUnit(ctx.sql, org.id, 'Grundschule Süd', schools);
  const device = await insertDevice(ctx.sql, {
    organizationId: org.id,
    oeId: room,
    serial: `AD-${crypto.randomUUID().slice(0, 6)}`,
    templateId: TEMPLATE_IDS.debianStandard,
  });
  const group = await insertGroup(ctx.sql, org.id, 'Lehrerzimmer');
  await addToGroup(ctx.sql, group, device.id);
  const adminKey = await createApiKey(ctx, org.id, 'admin', { name: 'Portal-Admin' });
  const viewerKey = await createApiKey(ctx, org.id, 'viewer', { name: 'Portal-Leser' });
  return { org, schools, north, room, south, device, group, adminKey, viewerKey };
}

/** The options of the select named `name` on the page: value and text. */
function options(html: string, name: string): Array<{ value: string; text: string }> {
  const select = new RegExp(`<select[^>]*name="${name}"[^>]*>([\\s\\S]*?)</select>`).exec(html);
  if (!select) throw new Error(`no select ${name} on the page`);
  return [...select[1]!.matchAll(/<option value="([^"]*)"[^>]*>([^<]*)<\/option>/g)].map((m) => ({
    value: m[1]!,
    text: m[2]!,
  }));
}

describe("a viewer's org unit and group pages", () => {
  it('show name, path, device counts and the catalog, without a control', async () => {
    const f = await fleet();
    await ctx.request('POST', `/api/v1/org-units/${f.north}/catalog/qgis/select`, { body: {} });
    const viewer = await Browser.signedIn(f.viewerKey.key);
    const unit = await viewer.get(`/portal/org-units/${f.north}`);
    expect(unit.status).toBe(200);
    expect(unit.text).toContain('Schulen / Grundschule Nord');
    expect(unit.text).toMatch(/data-field="devices">0</);
    expect(unit.text).toMatch(/data-field="devices_total"><a href="\/portal\/devices\?oe_id=[^"]+">1</);
    expect(unit.text).toMatch(/<tr data-merkmal="qgis">[\s\S]*?data-field="override">vorhanden</);
    expect(unit.text).not.toMatch(/<form method="post" action="\/portal\/(org-units|groups)/);
    expect(unit.text).not.toContain('/catalog/qgis/select');
    expect(unit.text).not.toContain('<button type="submit">');
    const group = await viewer.get(`/portal/groups/${f.group}`);
    expect(group.status).toBe(200);
    expect(group.text).toContain('Lehrerzimmer');
    expect(group.text).toMatch(/data-field="devices"><a href="\/portal\/devices\?group_id=[^"]+">1</);
    expect(group.text).toContain(f.device.serial);
    expect(group.text).toContain('data-merkmal="qgis"');
    expect(group.text).not.toMatch(/<form method="post" action="\/portal\/groups/);
    expect(group.text).not.toContain('/catalog/qgis/select');
    // The list pages link each unit and group to its page, for a viewer too.
    expect((await viewer.get('/portal/org-units')).text).toContain(`href="/portal/org-units/${f.room}"`);
    expect((await viewer.get('/portal/groups')).text).toContain(`href="/portal/groups/${f.group}"`);
  });

  it("an admin's pages keep their controls; another organization's unit or group is 404", async () => {
    const f = await fleet();
    const other = await fleet();
    const admin = await Browser.signedIn(f.adminKey.key);
    const unit = await admin.get(`/portal/org-units/${f.north}`);
    expect(unit.text).toContain(`action="/portal/org-units/${f.north}/move"`);
    expect(unit.text).toContain(`/portal/org-units/${f.north}/catalog/qgis/select`);
    const group = await admin.get(`/portal/groups/${f.group}`);
    expect(group.text).toContain(`action="/portal/groups/${f.group}/rename"`);
    const viewer = await Browser.signedIn(f.viewerKey.key);
    for (const path of [`/portal/org-units/${other.north}`, `/portal/groups/${other.group}`, '/portal/groups/nope']) {
      expect((await viewer.get(path)).status, path).toBe(404);
    }
  });
});

describe('a portal sign-in', () => {
  it("sets the key's last_used_at; a wrong key sets nothing", async () => {
    const f = await fleet();
    const before = await ctx.sql`select last_used_at from api_keys where id = ${f.viewerKey.id}`;
    expect(before[0]!.last_used_at).toBeNull();
    const wrong = new Browser();
    expect((await wrong.signIn(`${f.viewerKey.key}x`)).status).toBe(401);
    expect((await ctx.sql`select last_used_at from api_keys where id = ${f.viewerKey.id}`)[0]!.last_used_at).toBeNull();
    await Browser.signedIn(f.viewerKey.key);
    const [after] = await ctx.sql`select last_used_at, now() - last_used_at < interval '1 minute' as fresh
      from api_keys where id = ${f.viewerKey.id}`;
    expect(after!.fresh).toBe(true);
    const listed = await ctx.request('GET', `/api/v1/organizations/${f.org.id}/api-keys`);
    const key = listed.body.items.find((k: { id: string }) => k.id === f.viewerKey.id);
    expect(key.last_used_at).not.toBeNull();
  });
});

describe('org unit selects', () => {
  it('name each unit by its path joined with " / "; a move offers neither the unit nor any unit below it', async () => {
    const f = await fleet();
    const admin = await Browser.signedIn(f.adminKey.key);
    const path = 'Schulen / Grundschule Nord / Computerraum 1';
    const listPage = await admin.get('/portal/org-units');
    expect(options(listPage.text, 'parent_id')).toContainEqual({ value: f.room, text: path });
    const devices = await admin.get('/portal/devices');
    expect(options(devices.text, 'oe_id')).toContainEqual({ value: f.room, text: path });
    // The bulk move's target select.
    expect(devices.text).toMatch(new RegExp(`<option value="${f.room}">${path}</option>`));
    const move = options((await admin.get(`/portal/org-units/${f.north}`)).text, 'parent_id');
    const offered = move.map((o) => o.value);
    expect(offered).not.toContain(f.north);
    expect(offered).not.toContain(f.room);
    expect(offered).toContain(f.schools);
    expect(move).toContainEqual({ value: f.south, text: 'Schulen / Grundschule Süd' });
    expect(offered[0]).toBe(''); // the top level first
  });
});

describe("a device's events page", () => {
  /** The times of the events a page lists, in its order. */
  const times = (html: string) =>
    [...html.matchAll(/<tr data-event-type="[^"]+"><td>([^<]+)<\/td>/g)].map((m) => m[1]!);
  const link = (html: string, rel: 'prev' | 'next') => {
    const m = new RegExp(`<a href="([^"]+)" rel="${rel}"`).exec(html);
    return m ? m[1]!.replace(/&amp;/g, '&') : null;
  };

  it('pages through all of them, 50 at a time, newest first, for a viewer too', async () => {
    const f = await fleet();
    // 120 events a minute apart, oldest first: each lists with a time of its own.
    const base = Date.parse('2026-10-01T00:00:00.000Z');
    await ctx.sql`
      insert into device_merkmal_events (device_id, merkmal, type, payload, created_at)
      select ${f.device.id}, 'firefox', 'applied', '{}'::jsonb, ${new Date(base)}::timestamptz + n * interval '1 minute'
      from generate_series(0, 119) n order by n`;
    const minute = (n: number) => `${new Date(base + n * 60_000).toISOString().slice(11, 16)} UTC`;
    const expected = (from: number, to: number) => Array.from({ length: from - to + 1 }, (_, i) => minute(from - i));
    const viewer = await Browser.signedIn(f.viewerKey.key);
    const device = await viewer.get(`/portal/devices/${f.device.id}`);
    expect(device.text).toContain(`href="/portal/devices/${f.device.id}/events"`);

    const first = await viewer.get(`/portal/devices/${f.device.id}/events`);
    expect(first.status).toBe(200);
    expect(times(first.text).map((t) => t.slice(-9))).toEqual(expected(119, 70));
    expect(link(first.text, 'prev')).toBeNull();
    const second = await viewer.get(link(first.text, 'next')!);
    expect(times(second.text).map((t) => t.slice(-9))).toEqual(expected(69, 20));
    const third = await viewer.get(link(second.text, 'next')!);
    expect(times(third.text).map((t) => t.slice(-9))).toEqual(expected(19, 0));
    expect(link(third.text, 'next')).toBeNull();
    // Back from the last page: the 50 just newer.
    const back = await viewer.get(link(third.text, 'prev')!);
    expect(times(back.text).map((t) => t.slice(-9))).toEqual(expected(69, 20));
    expect(back.text).toContain(`href="/portal/devices/${f.device.id}/events"`);
  });

  it("another organization's device is 404; a forged position is refused; a device without events says so", async () => {
    const f = await fleet();
    const other = await fleet();
    const admin = await Browser.signedIn(f.adminKey.key);
    expect((await admin.get(`/portal/devices/${other.device.id}/events`)).status).toBe(404);
    expect((await admin.get('/portal/devices/nope/events')).status).toBe(404);
    for (const bad of ['before=0', 'before=-1', 'before=abc', 'after=1e3', 'before=99999999999999999']) {
      const page = await admin.get(`/portal/devices/${f.device.id}/events?${bad}`);
      expect(page.status, bad).toBe(400);
    }
    const empty = await admin.get(`/portal/devices/${f.device.id}/events`);
    expect(empty.status).toBe(200);
    expect(empty.text).toContain('Noch keine Ereignisse.');
    expect(empty.text).not.toContain('rel="next"');
  });
});

describe('the audit names its targets', () => {
  it('a rollout links to its page; a catalog row names the Merkmal and the state; only what is gone reads "gelöscht"', async () => {
    const f = await fleet();
    const rollout = await ctx.request('POST', `/api/v1/organizations/${f.org.id}/rollouts`, {
      body: { scope: 'org_unit', scope_id: f.north, merkmal: 'libreoffice', action: 'select', rings: [50, 100] },
    });
    expect(rollout.status, JSON.stringify(rollout.body)).toBe(201);
    expect((await ctx.request('POST', `/api/v1/groups/${f.group}/catalog/qgis/select`, { body: {} })).status).toBe(200);
    expect((await ctx.request('POST', `/api/v1/devices/${f.device.id}/catalog/qgis/deselect`)).status).toBe(200);
    expect((await ctx.request('DELETE', `/api/v1/devices/${f.device.id}/catalog/qgis`)).status).toBe(204);
    const gone = await ctx.request('POST', `/api/v1/organizations/${f.org.id}/groups`, { body: { name: 'Weg' } });
    expect((await ctx.request('DELETE', `/api/v1/groups/${gone.body.id}`)).status).toBe(204);
    const build = await ctx.request('POST', `/api/v1/organizations/${f.org.id}/iso-builds`, { body: {} });
    expect(build.status, JSON.stringify(build.body)).toBe(202);

    for (const [lang, words] of [
      ['de', { gone: 'gelöscht', present: 'vorhanden', absent: 'nicht vorhanden', unset: 'Vorgabe entfernt' }],
      ['en', { gone: 'deleted', present: 'present', absent: 'absent', unset: 'override removed' }],
    ] as const) {
      const admin = new PortalClient(ctx.app, '10.54.9.1', lang);
      expect((await admin.signIn(f.adminKey.key)).status).toBe(303);
      const page = await admin.get('/portal/audit');
      expect(page.status).toBe(200);
      const cell = (id: string, action: string) => {
        const row = new RegExp(
          `<code>${action.replace('.', '\\.')}</code>[\\s\\S]*?<span data-target="${id}">([\\s\\S]*?)</td>`,
        ).exec(page.text);
        expect(row, `${action} ${id}`).not.toBeNull();
        return row![1]!;
      };
      const started = cell(rollout.body.id, 'rollout.create');
      expect(started).toContain(`<a href="/portal/rollouts/${rollout.body.id}">libreoffice</a>`);
      expect(started).not.toContain(words.gone);
      expect(cell(f.group, 'catalog.select')).toContain(`Merkmal qgis: ${words.present}`);
      expect(cell(f.device.id, 'catalog.deselect')).toContain(`Merkmal qgis: ${words.absent}`);
      expect(cell(f.device.id, 'catalog.unset')).toContain(`Merkmal qgis: ${words.unset}`);
      expect(cell(f.device.id, 'catalog.unset')).not.toContain(words.gone);
      expect(cell(build.body.id, 'iso_build.create')).toContain('href="/portal/iso-builds"');
      expect(cell(build.body.id, 'iso_build.create')).not.toContain(words.gone);
      expect(cell(gone.body.id, 'group.delete')).toContain(`Weg</span><span class="muted"> (${words.gone})`);
    }
  });
});

describe("the domain's refusals in the page's language", () => {
  it('a webhook URL the policy refuses and a forged cursor read in German and in English', async () => {
    const f = await fleet();
    for (const [lang, url, cursor, english] of [
      [
        'de',
        'nur eine vollständige https-Adresse',
        'Diese Seitenangabe gehört nicht zu dieser Liste',
        'must use https',
      ],
      ['en', 'only a complete https address', 'This page position does not belong to this list', 'must use https'],
    ] as const) {
      const admin = new PortalClient(ctx.app, '10.54.8.1', lang);
      expect((await admin.signIn(f.adminKey.key)).status).toBe(303);
      const form = await admin.get('/portal/webhooks');
      const res = await admin.request('POST', '/portal/webhooks', {
        _csrf: PortalClient.csrf(form.text),
        url: 'http://hooks.example.com/x',
        'event:device.activated': 'on',
      });
      // Refused: the form again (400), with what was entered and why.
      expect(res.status).toBe(400);
      const page = res;
      expect(page.text).toContain('class="flash error"');
      expect(page.text).toContain(url);
      expect(page.text).not.toContain(english);
      const list = await admin.get('/portal/devices?cursor=nope');
      expect(list.status).toBe(400);
      expect(list.text).toContain(cursor);
      expect(list.text).not.toContain('cursor is not valid');
    }
    const [row] = await ctx.sql`select count(*)::int as n from webhooks where organization_id = ${f.org.id}`;
    expect(row!.n).toBe(0);
  });

  it('a refusal by code: deprovisioning an archived device, in German, changing nothing', async () => {
    const f = await fleet();
    expect((await ctx.request('POST', `/api/v1/devices/${f.device.id}/archive`)).status).toBe(200);
    const admin = await Browser.signedIn(f.adminKey.key);
    const page = await admin.get(`/portal/devices/${f.device.id}/confirm/deprovision`);
    const res = await admin.request('POST', `/portal/devices/${f.device.id}/deprovision`, {
      _csrf: PortalClient.csrf(page.text),
    });
    const shown = res.status === 303 ? await admin.get(res.location!) : res;
    expect(shown.text).toContain('Das Gerät ist archiviert und ändert sich nicht mehr.');
    expect(shown.text).not.toContain('is archived');
    const [row] = await ctx.sql`select deprovisioned_at from devices where id = ${f.device.id}`;
    expect(row!.deprovisioned_at).toBeNull();
  });
});
