/**
 * The portal's staged rollouts over HTTP in-process: an org unit's and a group's catalog,
 * each change confirmed with the number of devices it changes and made all at once or in
 * rings; the rollouts' list (newest first, by status, paged) and a rollout's page (scope by
 * name, status in words, a bar per opened ring); pause, resume and abort after a
 * confirmation; 409 `rollout_in_progress` as a message with the way to the rollout. A
 * viewer sees no control and a forged form is 403; without the CSRF token 403; another
 * organization's ids 404; nothing changed by any refusal.
 */
import { describe, expect, it } from 'vitest';
import { createApiKey } from '../support/access.ts';
import { useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { insertDevice, insertOrgUnit, TEMPLATE_IDS } from '../support/devices.ts';
import { PortalClient } from '../support/portal_client.ts';

const ctx = useTestApp();

/** A browser-like client: keeps cookies, sends forms with the CSRF token of a page, does not follow redirects. */
class Browser extends PortalClient {
  constructor() {
    super(ctx.app, `10.42.0.${Math.floor(Math.random() * 250) + 1}`);
  }

  async post(path: string, form: Record<string, string> = {}) {
    return this.request('POST', path, { _csrf: Browser.csrf((await this.get('/portal/rollouts')).text), ...form });
  }

  static async signedIn(key: string) {
    const b = new Browser();
    expect((await b.signIn(key)).status).toBe(303);
    return b;
  }
}

/** An organization with an org unit of three devices (one of them in a group), an admin and a viewer signed in. */
async function fleet() {
  const org = await createOrganization(ctx);
  const unit = await insertOrgUnit(ctx.sql, org.id, 'Bürgerbüro');
  const devices = [];
  for (let i = 0; i < 3; i++) {
    devices.push(
      await insertDevice(ctx.sql, {
        organizationId: org.id,
        oeId: unit,
        serial: `RO-${i}-${crypto.randomUUID().slice(0, 6)}`,
        templateId: TEMPLATE_IDS.debianStandard,
      }),
    );
  }
  const [group] = await ctx.sql<{ id: string }[]>`
    insert into groups (organization_id, name) values (${org.id}, 'Labor') returning id`;
  await ctx.sql`insert into group_members (organization_id, group_id, device_id)
    values (${org.id}, ${group!.id}, ${devices[0]!.id})`;
  const adminKey = await createApiKey(ctx, org.id, 'admin', { name: 'Frau Admin' });
  const viewerKey = await createApiKey(ctx, org.id, 'viewer', { name: 'Herr Leser' });
  return {
    org,
    unit,
    group: group!.id,
    devices,
    adminKey,
    admin: await Browser.signedIn(adminKey.key),
    viewer: await Browser.signedIn(viewerKey.key),
  };
}
type Fleet = Awaited<ReturnType<typeof fleet>>;

/** The "in rings" form as the confirmation page offers it, with these fields changed. */
function inRings(f: Fleet, more: Record<string, string> = {}) {
  return {
    scope: 'org_unit',
    scope_id: f.unit,
    merkmal: 'qgis',
    action: 'select',
    rings: '50, 100',
    max_failure_ratio: '0.1',
    min_reported_ratio: '0.9',
    soak_seconds: '0',
    from: `/portal/org-units/${f.unit}/catalog/qgis/select`,
    ...more,
  };
}

/** Creates a rollout through the form; its id. */
async function createInRings(f: Fleet, more: Record<string, string> = {}): Promise<string> {
  const res = await f.admin.post('/portal/rollouts', inRings(f, more));
  expect(res.status, res.text).toBe(303);
  const id = /^\/portal\/rollouts\/([0-9a-f-]{36})$/.exec(res.location ?? '')?.[1];
  expect(id, res.location ?? '').toBeDefined();
  return id!;
}

/** Everything of the organization a write of these pages could touch, to compare before and after. */
async function snapshot(organizationId: string) {
  const [row] = await ctx.sql`
    select
      (select json_agg(r order by r.id) from (select id, status, paused_reason, current_ring from rollouts
         where organization_id = ${organizationId}) r) as rollouts,
      (select count(*)::int from rollout_devices rd join rollouts r on r.id = rd.rollout_id
         where r.organization_id = ${organizationId} and rd.applied) as applied,
      (select count(*)::int from org_unit_merkmale o join org_units u on u.id = o.org_unit_id
         where u.organization_id = ${organizationId}) as unit_overrides,
      (select count(*)::int from group_merkmale o join groups g on g.id = o.group_id
         where g.organization_id = ${organizationId}) as group_overrides,
      (select count(*)::int from device_merkmal_events e join devices d on d.id = e.device_id
         where d.organization_id = ${organizationId}) as events,
      (select count(*)::int from audit_events where organization_id = ${organizationId}) as audits`;
  return row!;
}

async function lastAudit(organizationId: string) {
  const [row] = await ctx.sql`select action, actor, target_type, target_id from audit_events
    where organization_id = ${organizationId} order by seq desc limit 1`;
  return row!;
}

describe("an org unit's and a group's catalog", () => {
  it('lists each catalog Merkmal with its override there and a change that leads to its confirmation', async () => {
    const f = await fleet();
    await ctx.sql`insert into org_unit_merkmale (org_unit_id, merkmal, state) values (${f.unit}, 'firefox', 'absent')`;
    const unit = await f.admin.get(`/portal/org-units/${f.unit}`);
    expect(unit.status).toBe(200);
    expect(unit.text).toContain('Auftragskatalog');
    expect(unit.text).toMatch(/<tr data-merkmal="firefox">[\s\S]*?data-field="override">nicht vorhanden</);
    expect(unit.text).toContain(
      `<form class="inline" method="get" action="/portal/org-units/${f.unit}/catalog/qgis/select"`,
    );
    const group = await f.admin.get(`/portal/groups/${f.group}`);
    expect(group.status).toBe(200);
    expect(group.text).toContain(`action="/portal/groups/${f.group}/catalog/qgis/deselect"`);
    expect(group.text).toContain('aria-label="QGIS an der Gruppe Labor: zurücksetzen"');
  });

  it("the device page's change at its org unit leads to the same confirmation, not to a change", async () => {
    const f = await fleet();
    const page = await f.admin.get(`/portal/devices/${f.devices[0]!.id}`);
    expect(page.text).toContain(
      `<form class="inline" method="get" action="/portal/org-units/${f.unit}/catalog/qgis/select"`,
    );
    expect(page.text).not.toContain(`method="post" action="/portal/org-units/${f.unit}/catalog/qgis/select"`);
  });

  it('the confirmation says how many devices change and offers all at once or in rings (the defaults filled in); it changes nothing', async () => {
    const f = await fleet();
    const before = await snapshot(f.org.id);
    const page = await f.admin.get(
      `/portal/org-units/${f.unit}/catalog/qgis/select?back=/portal/devices/${f.devices[0]!.id}`,
    );
    expect(page.status).toBe(200);
    expect(page.text).toContain('data-count="3"');
    expect(page.text).toContain('ändert den Zustand von 3 Geräten');
    expect(page.text).toContain(`<form method="post" action="/portal/org-units/${f.unit}/catalog/qgis/select">`);
    expect(page.text).toContain(`name="back" value="/portal/devices/${f.devices[0]!.id}"`);
    expect(page.text).toContain('<form method="post" action="/portal/rollouts"');
    expect(page.text).toContain('name="rings" value="10, 50, 100"');
    expect(page.text).toMatch(/name="max_failure_ratio"[^>]*value="0.1"/);
    expect(page.text).toMatch(/name="min_reported_ratio"[^>]*value="0.9"/);
    expect(page.text).toMatch(/name="soak_seconds"[^>]*value="3600"/);
    // A group's: its one member; a change that alters nothing says so.
    const group = await f.admin.get(`/portal/groups/${f.group}/catalog/qgis/select`);
    expect(group.text).toContain('ändert den Zustand von 1 Gerät.');
    const none = await f.admin.get(`/portal/groups/${f.group}/catalog/qgis/deselect`);
    expect(none.text).toContain('data-count="0"');
    // A Merkmal that does not exist or is not in the catalog: the reason, no form.
    for (const merkmal of ['gibt-es-nicht', 'basis']) {
      const refused = await f.admin.get(`/portal/org-units/${f.unit}/catalog/${merkmal}/select`);
      expect(refused.status, merkmal).toBe(422);
      expect(refused.text).not.toContain('method="post" action="/portal/rollouts"');
    }
    expect(await snapshot(f.org.id)).toEqual(before);
  });

  it('all at once: the selection the API makes, audited with the key, back to the page it started on', async () => {
    const f = await fleet();
    const back = `/portal/devices/${f.devices[0]!.id}`;
    const res = await f.admin.post(`/portal/org-units/${f.unit}/catalog/qgis/select`, { back });
    expect(res.status).toBe(303);
    expect(res.location).toBe(back);
    expect((await f.admin.get(back)).text).toContain('qgis: auswählen gespeichert.');
    expect(
      await ctx.sql`select state from org_unit_merkmale where org_unit_id = ${f.unit} and merkmal = 'qgis'`,
    ).toEqual([{ state: 'present' }]);
    expect(await lastAudit(f.org.id)).toMatchObject({
      action: 'catalog.select',
      target_id: f.unit,
      actor: { type: 'api_key', name: 'Frau Admin' },
    });
    const group = await f.admin.post(`/portal/groups/${f.group}/catalog/qgis/deselect`, {
      back: `/portal/groups/${f.group}`,
    });
    expect(group.location).toBe(`/portal/groups/${f.group}`);
    expect(await ctx.sql`select state from group_merkmale where group_id = ${f.group}`).toEqual([{ state: 'absent' }]);
  });
});

describe('in rings', () => {
  it("creates the rollout with the form's rings and limits, audited with the key; its page shows ring 1 open", async () => {
    const f = await fleet();
    const id = await createInRings(f);
    const [rollout] = await ctx.sql`select scope, scope_id, merkmal, action, rings, max_failure_ratio,
      min_reported_ratio, soak_seconds, status, created_by from rollouts where id = ${id}`;
    expect(rollout).toMatchObject({
      scope: 'org_unit',
      scope_id: f.unit,
      merkmal: 'qgis',
      action: 'select',
      rings: [50, 100],
      max_failure_ratio: 0.1,
      min_reported_ratio: 0.9,
      soak_seconds: 0,
      status: 'running',
      created_by: { type: 'api_key', name: 'Frau Admin' },
    });
    expect(await lastAudit(f.org.id)).toMatchObject({ action: 'rollout.create', actor: { type: 'api_key' } });
    const page = await f.admin.get(`/portal/rollouts/${id}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('Rollout gestartet');
    expect(page.text).toContain(`<a href="/portal/org-units/${f.unit}">Organisationseinheit „Bürgerbüro“</a>`);
    expect(page.text).toContain('data-status="running"');
    expect(page.text).toMatch(/<tr data-ring="0" data-opened="true">[\s\S]*?<svg class="bar"/);
    expect(page.text).toMatch(/<tr data-ring="1" data-opened="false">[\s\S]*?noch nicht geöffnet/);
    // The figures refresh by the portal's own script, and without it by the link.
    expect(page.text).toContain('<script src="/portal/rollouts.js" defer=""></script>');
    expect(page.text).toContain('data-refresh="3"');
    expect(page.text).toContain(`<a href="/portal/rollouts/${id}">Aktualisieren</a>`);
    expect(page.text).toContain(`href="/portal/rollouts/${id}/confirm/pause"`);
    expect(page.text).toContain(`href="/portal/rollouts/${id}/confirm/abort"`);
    expect(page.text).not.toContain(`/confirm/resume"`);
  });

  it("a group's change in rings: the rollout of its members, its page naming the group", async () => {
    const f = await fleet();
    const confirm = await f.admin.get(`/portal/groups/${f.group}/catalog/firefox/deselect`);
    expect(confirm.text).toContain(`name="scope_id" value="${f.group}"`);
    const id = await createInRings(f, {
      scope: 'group',
      scope_id: f.group,
      merkmal: 'firefox',
      action: 'deselect',
      from: `/portal/groups/${f.group}/catalog/firefox/deselect`,
    });
    // The rollout takes the devices the confirmation counted.
    const counted = Number(/data-count="(\d+)"/.exec(confirm.text)?.[1]);
    expect(await ctx.sql`select device_id from rollout_devices where rollout_id = ${id}`).toHaveLength(counted);
    const page = await f.admin.get(`/portal/rollouts/${id}`);
    expect(page.text).toContain(`<a href="/portal/groups/${f.group}">Gruppe „Labor“</a>`);
    expect(page.text).toContain('firefox abwählen');
  });

  it('a form the schema refuses goes back to the confirmation with the reason; nothing created', async () => {
    const f = await fleet();
    const before = await snapshot(f.org.id);
    for (const more of [{ rings: '50, 20' }, { max_failure_ratio: 'viel' }, { soak_seconds: '-1' }] as Record<
      string,
      string
    >[]) {
      const res = await f.admin.post('/portal/rollouts', inRings(f, more));
      expect(res.status, JSON.stringify(more)).toBe(303);
      expect(res.location).toBe(`/portal/org-units/${f.unit}/catalog/qgis/select`);
      expect((await f.admin.get(res.location!)).text).toContain('class="flash error"');
    }
    expect(await snapshot(f.org.id)).toEqual(before);
  });

  it('409 rollout_in_progress, for a second rollout and for a change all at once, is a message with the way to the rollout', async () => {
    const f = await fleet();
    const id = await createInRings(f);
    const before = await snapshot(f.org.id);
    for (const res of [
      await f.admin.post('/portal/rollouts', inRings(f, { action: 'deselect' })),
      await f.admin.post(`/portal/org-units/${f.unit}/catalog/qgis/unset`, { back: `/portal/org-units/${f.unit}` }),
    ]) {
      expect(res.status).toBe(409);
      expect(res.text).toContain('Hier läuft schon ein Rollout');
      expect(res.text).toContain(`<a href="/portal/rollouts/${id}">Zum laufenden Rollout</a>`);
    }
    expect(await snapshot(f.org.id)).toEqual(before);
    // The unit's page and the confirmation show the rollout instead of the change.
    const unit = await f.admin.get(`/portal/org-units/${f.unit}`);
    expect(unit.text).toContain(`<a href="/portal/rollouts/${id}" data-rollout="${id}">`);
    expect(unit.text).not.toContain(`/portal/org-units/${f.unit}/catalog/qgis/select"`);
    const confirm = await f.admin.get(`/portal/org-units/${f.unit}/catalog/qgis/deselect`);
    expect(confirm.text).toContain(`<a href="/portal/rollouts/${id}">Zum laufenden Rollout</a>`);
    expect(confirm.text).not.toContain('method="post" action="/portal/rollouts"');
  });
});

describe('pause, resume, abort', () => {
  it('each after its confirmation page, audited, the status in words; a rollout that ended refuses with a message', async () => {
    const f = await fleet();
    const id = await createInRings(f);
    const confirm = await f.admin.get(`/portal/rollouts/${id}/confirm/pause`);
    expect(confirm.status).toBe(200);
    expect(confirm.text).toContain(`<form method="post" action="/portal/rollouts/${id}/pause">`);
    // Opening the confirmation changed nothing.
    expect((await ctx.sql`select status from rollouts where id = ${id}`)[0]).toEqual({ status: 'running' });

    let res = await f.admin.post(`/portal/rollouts/${id}/pause`);
    expect(res.status).toBe(303);
    let page = await f.admin.get(res.location!);
    expect(page.text).toContain('Rollout angehalten.');
    expect(page.text).toContain('angehalten (von Hand angehalten)');
    expect(page.text).toContain(`href="/portal/rollouts/${id}/confirm/resume"`);
    expect(await lastAudit(f.org.id)).toMatchObject({ action: 'rollout.pause', target_id: id });

    res = await f.admin.post(`/portal/rollouts/${id}/resume`);
    page = await f.admin.get(res.location!);
    expect(page.text).toContain('Rollout fortgesetzt.');
    expect(page.text).toContain('data-status="running"');

    res = await f.admin.post(`/portal/rollouts/${id}/abort`);
    page = await f.admin.get(res.location!);
    expect(page.text).toContain('Rollout abgebrochen');
    expect(page.text).toContain('data-status="aborted"');
    expect(page.text).not.toContain('/confirm/');
    // An ended rollout's page does not refresh.
    expect(page.text).not.toContain('rollouts.js');
    expect(await lastAudit(f.org.id)).toMatchObject({ action: 'rollout.abort', target_id: id });

    const before = await snapshot(f.org.id);
    res = await f.admin.post(`/portal/rollouts/${id}/resume`);
    expect(res.status).toBe(303);
    expect((await f.admin.get(res.location!)).text).toContain('Das geht in diesem Zustand des Rollouts nicht');
    expect(await snapshot(f.org.id)).toEqual(before);
  });

  it('an automatic pause shows its reason in words', async () => {
    const f = await fleet();
    const id = await createInRings(f);
    await ctx.sql`update rollouts set status = 'paused', paused_reason = 'failure_ratio' where id = ${id}`;
    const page = await f.admin.get(`/portal/rollouts/${id}`);
    expect(page.text).toContain('data-reason="failure_ratio"');
    expect(page.text).toContain('automatisch angehalten: in Ring 1 sind');
    expect(page.text).toContain('mehr als die erlaubten 10 %');
  });
});

describe('the list and the overview', () => {
  it('newest first, filtered by status, paged; the overview and the navigation lead to it', async () => {
    const f = await fleet();
    const running = await createInRings(f);
    // 26 ended rollouts, older than the running one: a page of 25 and a second page.
    await ctx.sql`
      insert into rollouts (organization_id, scope, scope_id, merkmal, action, rings, max_failure_ratio,
                            min_reported_ratio, soak_seconds, status, created_by, created_at, completed_at)
      select ${f.org.id}, 'org_unit', ${f.unit}, 'firefox', 'select', '{100}', 0.1, 0.9, 0, 'completed',
             '{"type":"system"}', now() - make_interval(mins => i), now() - make_interval(mins => i)
      from generate_series(1, 26) i`;
    const all = await f.admin.get('/portal/rollouts');
    expect(all.status).toBe(200);
    const rows = [...all.text.matchAll(/<tr data-rollout="([^"]+)"/g)].map((m) => m[1]);
    expect(rows).toHaveLength(25);
    expect(rows[0]).toBe(running);
    const next = /<a href="(\/portal\/rollouts\?cursor=[^"]+)">Nächste Seite/.exec(all.text)?.[1];
    expect(next).toBeDefined();
    const second = await f.admin.get(next!.replaceAll('&amp;', '&'));
    expect([...second.text.matchAll(/<tr data-rollout="/g)]).toHaveLength(2);
    expect(second.text).toContain('Erste Seite');

    const onlyRunning = await f.admin.get('/portal/rollouts?status=running');
    expect([...onlyRunning.text.matchAll(/<tr data-rollout="([^"]+)"/g)].map((m) => m[1])).toEqual([running]);
    expect((await f.admin.get('/portal/rollouts?status=paused')).text).toContain('Keine Rollouts mit diesem Status.');

    const overview = await f.viewer.get('/portal');
    expect(overview.text).toContain('Laufende Rollouts');
    expect(overview.text).toContain(`<tr data-rollout="${running}">`);
    expect(overview.text).toContain('<a href="/portal/rollouts">Rollouts</a>');
  });
});

describe('refusals', () => {
  it('a viewer reads the rollouts without any control; its forged forms are 403 and change nothing', async () => {
    const f = await fleet();
    const id = await createInRings(f);
    const page = await f.viewer.get(`/portal/rollouts/${id}`);
    expect(page.status).toBe(200);
    expect(page.text).not.toContain('/confirm/');
    // The scope is linked to its devices (its page is an admin's).
    expect(page.text).toContain(`<a href="/portal/devices?oe_id=${f.unit}">Organisationseinheit „Bürgerbüro“</a>`);
    expect((await f.viewer.get('/portal/rollouts')).status).toBe(200);
    for (const path of [
      `/portal/rollouts/${id}/confirm/abort`,
      `/portal/org-units/${f.unit}/catalog/qgis/select`,
      `/portal/groups/${f.group}/catalog/qgis/select`,
    ]) {
      expect((await f.viewer.get(path)).status, path).toBe(403);
    }
    const before = await snapshot(f.org.id);
    for (const [path, form] of [
      ['/portal/rollouts', inRings(f, { merkmal: 'firefox' })],
      [`/portal/rollouts/${id}/pause`, {}],
      [`/portal/rollouts/${id}/abort`, {}],
      [`/portal/org-units/${f.unit}/catalog/firefox/select`, {}],
      [`/portal/groups/${f.group}/catalog/firefox/select`, {}],
    ] as const) {
      expect((await f.viewer.post(path, form)).status, path).toBe(403);
    }
    expect(await snapshot(f.org.id)).toEqual(before);
  });

  it('without or with a wrong CSRF token: 403 and nothing changed', async () => {
    const f = await fleet();
    const id = await createInRings(f);
    const before = await snapshot(f.org.id);
    for (const csrf of [{}, { _csrf: 'falsch' }] as Record<string, string>[]) {
      for (const [path, form] of [
        ['/portal/rollouts', inRings(f, { merkmal: 'firefox' })],
        [`/portal/rollouts/${id}/abort`, {}],
        [`/portal/org-units/${f.unit}/catalog/firefox/select`, {}],
      ] as const) {
        expect((await f.admin.request('POST', path, { ...form, ...csrf })).status, path).toBe(403);
      }
    }
    expect(await snapshot(f.org.id)).toEqual(before);
  });

  it("another organization's rollout, org unit and group are 404, and a rollout at its org unit is refused; nothing changed", async () => {
    const f = await fleet();
    const other = await fleet();
    const id = await createInRings(other);
    const before = await snapshot(other.org.id);
    for (const path of [
      `/portal/rollouts/${id}`,
      `/portal/rollouts/${id}/confirm/pause`,
      `/portal/org-units/${other.unit}/catalog/qgis/deselect`,
      `/portal/groups/${other.group}/catalog/qgis/select`,
    ]) {
      expect((await f.admin.get(path)).status, path).toBe(404);
    }
    for (const path of [
      `/portal/rollouts/${id}/pause`,
      `/portal/rollouts/${id}/abort`,
      `/portal/org-units/${other.unit}/catalog/firefox/select`,
      `/portal/groups/${other.group}/catalog/firefox/select`,
    ]) {
      expect((await f.admin.post(path)).status, path).toBe(404);
    }
    // Its own session names its own organization; the other's unit as the scope is not found there.
    const res = await f.admin.post('/portal/rollouts', { ...inRings(other, { merkmal: 'firefox' }) });
    expect([303, 404]).toContain(res.status);
    expect(await snapshot(other.org.id)).toEqual(before);
    expect(await ctx.sql`select 1 from rollouts where organization_id = ${f.org.id}`).toHaveLength(0);
  });

  it('the script is served from the portal, as a script, cached like the style sheet', async () => {
    const res = await ctx.app.request('/portal/rollouts.js');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/text\/javascript/);
    expect(res.headers.get('cache-control')).toMatch(/^public/);
    expect(await res.text()).toContain('data-refresh');
  });
});

/** The page's text without tags and entities, spaces collapsed. */
const plain = (html: string) =>
  html
    .replace(/<(script|style)[\s\S]*?<\/\1>/g, ' ')
    .replace(/<[^>]+>/g, ' ')
    .replace(/&[a-z#0-9]+;/g, ' ')
    .replace(/\s+/g, ' ');

/** German words these pages used to show (the fixture's names are taken out first). */
const GERMAN =
  /\b(und|oder|nicht|kein\w*|Gerät\w*|wurde|Sie|Ring\w*e|von|mit|bei|der|dem|des|ist|sind|noch|alle|Alle|Zurück|Abbrechen|Ändern|vorhanden|ausstehend|umgesetzt|angehalten|geöffnet|auswählen|abwählen|zurücksetzen|läuft)\b|[äöüÄÖÜß„]/;

/** The German words left in a page's English text, or null; without the fixture's and the catalog's names. */
async function germanIn(html: string): Promise<string | null> {
  const names = (await ctx.sql<{ name: string }[]>`select name from merkmale union select key from merkmale`)
    .map((r) => r.name)
    .concat(['Bürgerbüro', 'Labor', 'Frau Admin', 'Deutsch'])
    .sort((a, b) => b.length - a.length);
  let text = plain(html);
  for (const name of names) text = text.split(name).join(' ');
  const found = GERMAN.exec(text);
  return found ? `"${found[0]}" in …${text.slice(Math.max(0, found.index - 60), found.index + 60)}…` : null;
}

describe('in English', () => {
  /** The fleet's admin in a browser asking for English. */
  async function english(f: Fleet) {
    const client = new PortalClient(ctx.app, `10.43.0.${Math.floor(Math.random() * 250) + 1}`, 'en-GB,en;q=0.9');
    expect((await client.signIn(f.adminKey.key)).status).toBe(303);
    return client;
  }

  it("the rollouts' list, a rollout's page and the overview's running rollouts", async () => {
    const f = await fleet();
    const id = await createInRings(f);
    const en = await english(f);

    const list = await en.get('/portal/rollouts');
    expect(list.status).toBe(200);
    expect(list.text).toContain('<html lang="en">');
    expect(list.text).toContain('A rollout changes a catalog item at an org unit or group in rings');
    expect(list.text).toContain('<th scope="col">Catalog item</th>');
    expect(list.text).toContain('<option value="running">running</option>');
    expect(list.text).toContain('aria-label="Filter rollouts"');
    expect(list.text).toContain('aria-label="Details: select qgis"');
    expect(list.text).toMatch(/Ring 1 of 2: 0 of \d+ devices? converged/);
    expect(await germanIn(list.text)).toBeNull();
    expect((await en.get('/portal/rollouts?status=paused')).text).toContain('No rollouts with this status.');

    const page = await en.get(`/portal/rollouts/${id}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('<title>Rollout: select qgis');
    expect(page.text).toContain(`<a href="/portal/org-units/${f.unit}">Org unit “Bürgerbüro”</a>`);
    expect(page.text).toContain('<td>50% → 100%</td>');
    expect(page.text).toContain(
      '<td>at most 10% failures per ring; next ring once at least 90% have reported (no soak time)</td>',
    );
    expect(page.text).toContain('Created by</th><td>Frau Admin, ');
    expect(page.text).toMatch(/<tr data-ring="1" data-opened="false">[\s\S]*?not opened yet/);
    expect(page.text).toMatch(/Ring 1 <span class="muted">\(up to 50%\)<\/span>/);
    expect(page.text).toContain('The figures refresh every 3 seconds while the rollout is under way.');
    expect(page.text).toContain(`<a href="/portal/rollouts/${id}/confirm/pause" data-action="pause">Pause …</a>`);
    expect(await germanIn(page.text)).toBeNull();
    // The German page as it was.
    const german = await f.admin.get(`/portal/rollouts/${id}`);
    expect(german.text).toContain('<td>50 % → 100 %</td>');
    expect(german.text).toContain(
      '<td>höchstens 10 % Fehler je Ring; nächster Ring, wenn mindestens 90 % berichtet haben (ohne Wartezeit)</td>',
    );
    expect(german.text).toContain('Ring 1 <span class="muted">(bis 50 %)</span>');

    // A soak time and an automatic pause in words.
    await ctx.sql`update rollouts set status = 'paused', paused_reason = 'failure_ratio', soak_seconds = 5400
      where id = ${id}`;
    const paused = await en.get(`/portal/rollouts/${id}`);
    expect(paused.text).toContain('and 90 minutes have passed');
    expect(paused.text).toMatch(/paused automatically: in ring 1, 0 of 0 reporting devices failed, more than the 10%/);
    expect(await germanIn(paused.text)).toBeNull();
    expect((await f.admin.get(`/portal/rollouts/${id}`)).text).toContain('und 90 Minuten vergangen sind');

    const overview = await en.get('/portal');
    expect(overview.text).toContain('<h2>Running rollouts</h2>');
    expect(overview.text).toContain(`<tr data-rollout="${id}">`);
  });

  it('pause after its confirmation: the confirmation, the message and the status in English; German unchanged', async () => {
    const f = await fleet();
    const id = await createInRings(f);
    const en = await english(f);
    const confirm = await en.get(`/portal/rollouts/${id}/confirm/pause`);
    expect(confirm.status).toBe(200);
    expect(confirm.text).toContain('<title>Pause rollout');
    expect(confirm.text).toContain('<strong>Rollout: select qgis</strong> (running)');
    expect(confirm.text).toContain('No further ring opens until you resume the rollout.');
    expect(confirm.text).toContain('<button type="submit" class="">Pause</button>');
    expect(confirm.text).toContain(`<a href="/portal/rollouts/${id}">Back</a>`);
    expect(await germanIn(confirm.text)).toBeNull();
    const german = await f.admin.get(`/portal/rollouts/${id}/confirm/pause`);
    expect(german.text).toContain('<title>Rollout anhalten');
    expect(german.text).toContain('<strong>Rollout: qgis auswählen</strong> (läuft)');

    const res = await en.request('POST', `/portal/rollouts/${id}/pause`, { _csrf: PortalClient.csrf(confirm.text) });
    expect(res.status).toBe(303);
    const page = await en.get(res.location!);
    expect(page.text).toContain('Rollout paused.');
    expect(page.text).toContain('paused (by hand)');
    expect(page.text).toContain('>Resume …</a>');
    expect(await germanIn(page.text)).toBeNull();
    // Resuming an aborted rollout: the refusal in English.
    const csrf = { _csrf: PortalClient.csrf(page.text) };
    const aborted = await en.request('POST', `/portal/rollouts/${id}/abort`, csrf);
    expect((await en.get(aborted.location!)).text).toContain(
      'Rollout aborted: the devices get their previous state back.',
    );
    const refused = await en.request('POST', `/portal/rollouts/${id}/resume`, csrf);
    expect((await en.get(refused.location!)).text).toContain('That is not possible in the rollout&#39;s current state');
  });

  it("a scope's catalog and a change's confirmation: the count, all at once or in rings, and what follows", async () => {
    const f = await fleet();
    const en = await english(f);
    const unit = await en.get(`/portal/org-units/${f.unit}`);
    expect(unit.text).toContain('<h2>Catalog</h2>');
    expect(unit.text).toContain('aria-label="QGIS at org unit Bürgerbüro: select"');
    expect(unit.text).toMatch(/<tr data-merkmal="qgis">[\s\S]*?data-field="override">none</);
    const group = await en.get(`/portal/groups/${f.group}`);
    expect(group.text).toContain('aria-label="QGIS at group Labor: unset"');

    const confirm = await en.get(`/portal/org-units/${f.unit}/catalog/qgis/select`);
    expect(confirm.status).toBe(200);
    expect(confirm.text).toContain('<title>Select qgis');
    expect(confirm.text).toContain('“qgis” is selected at the org unit “Bürgerbüro” (it should be present).');
    expect(confirm.text).toContain('This change alters the state of 3 devices.');
    expect(confirm.text).toContain('<h2>All at once</h2>');
    expect(confirm.text).toContain('<button type="submit">Change all at once</button>');
    expect(confirm.text).toContain('<label for="rings">Rings (cumulative percent, ascending, the last 100)</label>');
    expect(confirm.text).toContain('<button type="submit">Roll out in rings</button>');
    expect(await germanIn(confirm.text)).toBeNull();
    const one = await en.get(`/portal/groups/${f.group}/catalog/qgis/unset`);
    expect(one.text).toContain('The setting for “qgis” at the group “Labor” is removed');
    expect((await en.get(`/portal/groups/${f.group}/catalog/qgis/deselect`)).text).toContain(
      'This change alters no device (the setting is saved all the same).',
    );
    // The German confirmation as it was.
    const german = await f.admin.get(`/portal/org-units/${f.unit}/catalog/qgis/select`);
    expect(german.text).toContain(
      '„qgis“ wird an der Organisationseinheit „Bürgerbüro“ ausgewählt (soll vorhanden sein).',
    );
    expect(german.text).toContain('Diese Änderung ändert den Zustand von 3 Geräten.');

    // All at once: the message on the page it started on.
    const csrf = PortalClient.csrf(confirm.text);
    const saved = await en.request('POST', `/portal/org-units/${f.unit}/catalog/qgis/select`, {
      _csrf: csrf,
      back: `/portal/org-units/${f.unit}`,
    });
    expect(saved.status).toBe(303);
    expect((await en.get(saved.location!)).text).toContain('Saved: select qgis.');

    // In rings: the rollout's page with its start, and a held change's refusal in English.
    const started = await en.request('POST', '/portal/rollouts', {
      _csrf: csrf,
      ...inRings(f, { merkmal: 'firefox' }),
    });
    expect(started.status).toBe(303);
    expect((await en.get(started.location!)).text).toMatch(/Rollout started: ring 1 with \d+ devices? is open\./);
    const held = await en.get(`/portal/org-units/${f.unit}/catalog/firefox/deselect`);
    expect(held.text).toContain('A rollout is changing this catalog item here right now');
    expect((await en.get(`/portal/org-units/${f.unit}`)).text).toContain('>Rollout under way …</a>');
    const refused = await en.request('POST', '/portal/rollouts', {
      _csrf: csrf,
      ...inRings(f, { merkmal: 'firefox', action: 'unset' }),
    });
    expect(refused.status).toBe(409);
    expect(refused.text).toContain('<title>A rollout is already under way here');
    expect(refused.text).toContain('>To the running rollout</a>');
  });
});
