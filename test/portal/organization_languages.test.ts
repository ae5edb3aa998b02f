/**
 * The organization pages in English (org units, groups, enrollment sessions, API keys),
 * including what the crawl of languages.test.ts does not reach: the answers to forms (the
 * flash after POST → 303 → GET, the domain's refusals, the page showing a new key once,
 * the revoke confirmation). The same steps in German show the German wording unchanged.
 */
import { describe, expect, it } from 'vitest';
import { catalogs } from '../../api/portal/i18n/catalog.ts';
import { createApiKey } from '../support/access.ts';
import { useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { insertDevice, insertOrgUnit, TEMPLATE_IDS } from '../support/devices.ts';
import { PortalClient } from '../support/portal_client.ts';

const ctx = useTestApp();

class Browser extends PortalClient {
  /** Posts a form with the CSRF token of `page`. */
  async post(path: string, form: Record<string, string> = {}, page = '/portal/devices') {
    return this.request('POST', path, { _csrf: Browser.csrf((await this.get(page)).text), ...form });
  }

  /** Posts a form and opens the page it redirects to (303), with its flash message. */
  async postAndFollow(path: string, form: Record<string, string> = {}) {
    const res = await this.post(path, form);
    expect(res.status, path).toBe(303);
    return this.get(res.location!);
  }
}

/** The page's text without tags, entities decoded, spaces collapsed. */
const plain = (html: string) =>
  html
    .replace(/<(script|style)[\s\S]*?<\/\1>/g, ' ')
    .replace(/<[^>]+>/g, ' ')
    .replace(/&#39;/g, "'")
    .replace(/&quot;/g, '"')
    .replace(/&amp;/g, '&')
    .replace(/&[a-z#0-9]+;/g, ' ')
    .replace(/\s+/g, ' ');

/** Every German text of these pages' sections that English words differently. */
const germanTexts = (() => {
  const found: string[] = [];
  const walk = (de: unknown, en: unknown) => {
    if (typeof de === 'string') {
      if (typeof en === 'string' && de.toLowerCase() !== en.toLowerCase() && de.trim().length > 3)
        found.push(de.trim());
    } else if (de !== null && typeof de === 'object') {
      for (const [key, inner] of Object.entries(de)) walk(inner, (en as Record<string, unknown>)[key]);
    }
  };
  for (const section of ['organization', 'enrollment', 'credentials'] as const)
    walk(catalogs.de[section], catalogs.en[section]);
  return found;
})();

/**
 * An English page (or the part of it these modules render) holds no German of their sections
 * and no umlaut, once the names that are data (templates, org units) are left out.
 */
async function expectEnglish(html: string) {
  const names = await ctx.sql<{ name: string }[]>`select name from templates union select name from org_units`;
  let text = plain(html);
  for (const { name } of names.sort((a, b) => b.name.length - a.name.length)) text = text.split(name).join(' ');
  expect(
    germanTexts.filter((g) => text.includes(g)),
    'German text',
  ).toEqual([]);
  const umlaut = /[äöüÄÖÜß]/.exec(text);
  expect(umlaut ? text.slice(Math.max(0, umlaut.index - 60), umlaut.index + 60) : null, 'umlaut').toBeNull();
}

async function fleet(acceptLanguage?: string) {
  const org = await createOrganization(ctx);
  const unit = await insertOrgUnit(ctx.sql, org.id, 'Physics');
  const device = await insertDevice(ctx.sql, {
    organizationId: org.id,
    oeId: unit,
    serial: `OL-${crypto.randomUUID().slice(0, 6)}`,
    templateId: TEMPLATE_IDS.debianStandard,
  });
  const [neu] = await ctx.sql`select id from org_units where organization_id = ${org.id} and protected`;
  const adminKey = await createApiKey(ctx, org.id, 'admin', { name: 'Alex' });
  const admin = new Browser(ctx.app, `10.8.0.${Math.floor(Math.random() * 250) + 1}`, acceptLanguage);
  expect((await admin.signIn(adminKey.key)).status).toBe(303);
  return { org, unit, device, protectedUnit: neu!.id as string, admin };
}

/** The part of an org unit's or group's page after its catalog (scope_catalog.tsx, converted on its own). */
function afterCatalog(html: string, firstForm: string) {
  const at = html.indexOf(`action="${firstForm}"`);
  expect(at, firstForm).toBeGreaterThan(0);
  return html.slice(at);
}

describe('org units and groups in English', () => {
  it('the tree, an org unit page, each form answer and the refusals of the domain', async () => {
    const f = await fleet('en');
    const list = await f.admin.get('/portal/org-units');
    expect(list.text).toContain('<html lang="en">');
    for (const text of ['New org unit', 'Parent unit', '– top level –', 'Neue Geräte (default)', 'Edit …', 'Overrides'])
      expect(plain(list.text)).toContain(text);
    await expectEnglish(list.text);

    let page = await f.admin.postAndFollow('/portal/org-units', { name: 'Lab 1', parent_id: f.unit });
    expect(plain(page.text)).toContain('Org unit created.');
    await expectEnglish(page.text);

    const base = `/portal/org-units/${f.unit}`;
    page = await f.admin.get(base);
    expect(page.text).toContain('<title>Org unit Physics');
    expect(plain(page.text)).toContain('Back to all org units');
    const own = plain(afterCatalog(page.text, `${base}/rename`));
    for (const text of ['Rename', 'New name', 'Move', 'New parent unit', 'Delete permanently', 'Only a unit without'])
      expect(own).toContain(text);
    await expectEnglish(afterCatalog(page.text, `${base}/rename`));

    page = await f.admin.postAndFollow(`${base}/rename`, { name: 'Physics lab' });
    expect(plain(page.text)).toContain('Org unit renamed.');
    page = await f.admin.postAndFollow(`${base}/move`, { parent_id: '' });
    expect(plain(page.text)).toContain('Org unit moved.');

    // The domain's refusals in the portal's English words.
    page = await f.admin.postAndFollow(`${base}/delete`);
    expect(page.text).toContain('class="flash error"');
    expect(plain(page.text)).toContain('The org unit is not empty: move or delete its child units and devices first.');
    page = await f.admin.postAndFollow(`/portal/org-units/${f.protectedUnit}/rename`, { name: 'Other' });
    expect(plain(page.text)).toContain(
      'The org unit “Neue Geräte” is protected: it cannot be renamed, moved or deleted.',
    );
    page = await f.admin.postAndFollow('/portal/org-units', { name: 'physics LAB', parent_id: '' });
    expect(plain(page.text)).toContain('This name is already taken here');
    const empty = await insertOrgUnit(ctx.sql, f.org.id, 'Empty');
    page = await f.admin.postAndFollow(`/portal/org-units/${empty}/delete`);
    expect(plain(page.text)).toContain('Org unit deleted.');
  });

  it('groups: the empty list, a new group, its members and the answers of its forms', async () => {
    const f = await fleet('en');
    let page = await f.admin.get('/portal/groups');
    expect(plain(page.text)).toContain('No groups yet: create the first one above.');
    await expectEnglish(page.text);

    page = await f.admin.postAndFollow('/portal/groups', { name: 'Lab' });
    expect(plain(page.text)).toContain('Group created.');
    for (const text of ['Group', 'Members', 'Overrides', 'Action', 'Edit …']) expect(plain(page.text)).toContain(text);
    await expectEnglish(page.text);
    const [group] = await ctx.sql`select id from groups where organization_id = ${f.org.id}`;
    const base = `/portal/groups/${group!.id}`;

    page = await f.admin.get(base);
    expect(page.text).toContain('<title>Group Lab');
    const own = plain(afterCatalog(page.text, `${base}/members`));
    for (const text of ['Add a device (serial number or device ID)', 'No members yet: add a device above.', 'Rename'])
      expect(own).toContain(text);
    await expectEnglish(afterCatalog(page.text, `${base}/members`));

    page = await f.admin.postAndFollow(`${base}/members`, { device: 'NO-SUCH-SERIAL' });
    expect(plain(page.text)).toContain('No device “NO-SUCH-SERIAL” in your organization.');
    page = await f.admin.postAndFollow(`${base}/members`, { device: f.device.serial });
    expect(plain(page.text)).toContain('Device added to the group.');
    const members = plain(afterCatalog(page.text, `${base}/members`));
    for (const text of ['Serial number', 'Hostname', 'Remove', f.device.serial]) expect(members).toContain(text);
    await expectEnglish(afterCatalog(page.text, `${base}/members`));
    page = await f.admin.postAndFollow(`${base}/members/${f.device.id}/remove`);
    expect(plain(page.text)).toContain('Device removed from the group.');
    page = await f.admin.postAndFollow(`${base}/rename`, { name: 'Lab 2' });
    expect(plain(page.text)).toContain('Group renamed.');
    page = await f.admin.postAndFollow(`${base}/delete`);
    expect(plain(page.text)).toContain('Group deleted.');
  });

  it('a viewer: the empty group list names who creates groups', async () => {
    const org = await createOrganization(ctx);
    const viewer = new Browser(ctx.app, '10.8.1.1', 'en');
    expect((await viewer.signIn((await createApiKey(ctx, org.id, 'viewer')).key)).status).toBe(303);
    const page = await viewer.get('/portal/groups');
    expect(plain(page.text)).toContain('No groups yet (an admin of the organization creates them).');
    await expectEnglish(page.text);
  });
});

describe('enrollment sessions in English', () => {
  it('the empty list, a refused and a created session, its quota and status, revoked', async () => {
    const f = await fleet('en');
    let page = await f.admin.get('/portal/enrollment-sessions');
    for (const text of ['An enrollment session lets', 'ISO builds', 'Maximum devices', 'Valid for (days)'])
      expect(plain(page.text)).toContain(text);
    expect(plain(page.text)).toContain('No enrollment sessions yet: create the first one above.');
    await expectEnglish(page.text);

    const form = { template_id: TEMPLATE_IDS.debianStandard, days: '3' };
    page = await f.admin.postAndFollow('/portal/enrollment-sessions', { ...form, max_devices: '0' });
    expect(plain(page.text)).toContain('Invalid input');
    page = await f.admin.postAndFollow('/portal/enrollment-sessions', { ...form, max_devices: '1500' });
    expect(plain(page.text)).toContain('Enrollment session created.');
    const table = plain(page.text);
    for (const text of ['Session (activation code)', 'Expires', '0 of 1,500', 'active', 'Revoke']) {
      expect(table).toContain(text);
    }
    await expectEnglish(page.text);

    const [s] = await ctx.sql`select id from enrollment_sessions where organization_id = ${f.org.id}`;
    page = await f.admin.postAndFollow(`/portal/enrollment-sessions/${s!.id}/revoke`);
    expect(plain(page.text)).toContain('Enrollment session revoked.');
    expect(plain(page.text)).toMatch(/ revoked /);
    await expectEnglish(page.text);
  });
});

describe('API keys in English', () => {
  it('the list, a new key shown once (POST answer), the revoke confirmation and its answer', async () => {
    const f = await fleet('en');
    let page = await f.admin.get('/portal/api-keys');
    for (const text of ['New API key', 'Viewer (read only)', 'Admin (everything in this organization)', 'Last used'])
      expect(plain(page.text)).toContain(text);
    await expectEnglish(page.text);

    const created = await f.admin.post('/portal/api-keys', { name: 'CI', role: 'viewer', expires_on: '2099-12-31' });
    expect(created.status).toBe(201);
    expect(created.text).toContain('<title>API key created');
    expect(plain(created.text)).toContain(
      'The key “CI” (viewer) was created. Copy it now: it is shown this one time only and stored only as a hash.',
    );
    expect(plain(created.text)).toContain('Back to the API keys');
    await expectEnglish(created.text);

    const [key] = await ctx.sql`select id, prefix from api_keys where organization_id = ${f.org.id} and name = 'CI'`;
    page = await f.admin.get('/portal/api-keys');
    expect(plain(page.text)).toContain('Revoke …');
    const confirm = await f.admin.get(`/portal/api-keys/${key!.id}/revoke`);
    expect(confirm.status).toBe(200);
    expect(confirm.text).toContain('<title>Revoke API key');
    expect(plain(confirm.text)).toContain(
      `Revoke the key “CI” ( ${key!.prefix} )? It stops working at once, and portal sessions signed in with it end.`,
    );
    expect(plain(confirm.text)).toContain('Cancel');
    await expectEnglish(confirm.text);

    page = await f.admin.postAndFollow(`/portal/api-keys/${key!.id}/revoke`);
    expect(plain(page.text)).toContain('API key revoked.');
    await expectEnglish(page.text);
    const [revoked] = await ctx.sql`select revoked_at from api_keys where id = ${key!.id}`;
    expect(revoked!.revoked_at).not.toBeNull();
  });
});

describe('the same pages in German, unchanged', () => {
  it('org units, groups, enrollment sessions and API keys with their German wording', async () => {
    const f = await fleet();
    let page = await f.admin.postAndFollow('/portal/org-units', { name: 'Labor', parent_id: f.unit });
    expect(page.text).toContain('<html lang="de">');
    for (const text of ['Organisationseinheit angelegt.', 'Neue Organisationseinheit', '– oberste Ebene –'])
      expect(plain(page.text)).toContain(text);
    expect(plain(page.text)).toContain('Neue Geräte (Standard)');
    page = await f.admin.postAndFollow(`/portal/org-units/${f.protectedUnit}/delete`);
    expect(plain(page.text)).toContain(
      'Die Organisationseinheit „Neue Geräte“ ist geschützt: Sie kann nicht umbenannt, verschoben oder gelöscht werden.',
    );

    page = await f.admin.get('/portal/groups');
    expect(plain(page.text)).toContain('Noch keine Gruppen: legen Sie oben die erste an.');
    page = await f.admin.postAndFollow('/portal/groups', { name: 'Labor' });
    expect(plain(page.text)).toContain('Gruppe angelegt.');
    const [group] = await ctx.sql`select id from groups where organization_id = ${f.org.id}`;
    page = await f.admin.postAndFollow(`/portal/groups/${group!.id}/members`, { device: 'GIBT-ES-NICHT' });
    expect(plain(page.text)).toContain('Kein Gerät „GIBT-ES-NICHT“ in Ihrer Organisation.');
    expect(plain(page.text)).toContain('Gerät hinzufügen (Seriennummer oder Geräte-ID)');

    page = await f.admin.postAndFollow('/portal/enrollment-sessions', {
      template_id: TEMPLATE_IDS.debianStandard,
      max_devices: '1500',
      days: '3',
    });
    for (const text of ['Enrollment-Session erstellt.', '0 von 1.500', 'aktiv', 'Session (Aktivierungscode)'])
      expect(plain(page.text)).toContain(text);
    expect(plain(page.text)).toContain(
      'Eine Enrollment-Session erlaubt einer begrenzten Zahl von Geräten bis zu einem Ablaufdatum die Aktivierung mit einem Template. Erzeugen Sie danach unter ISO-Builds ein Installations-ISO für die Session.',
    );

    const created = await f.admin.post('/portal/api-keys', { name: 'CI', role: 'admin' });
    expect(created.status).toBe(201);
    expect(plain(created.text)).toContain(
      'Der Schlüssel „CI“ (Admin) wurde erstellt. Kopieren Sie ihn jetzt: er wird nur dieses eine Mal angezeigt und ist nur als Hash gespeichert.',
    );
    const [key] = await ctx.sql`select id, prefix from api_keys where organization_id = ${f.org.id} and name = 'CI'`;
    const confirm = await f.admin.get(`/portal/api-keys/${key!.id}/revoke`);
    expect(plain(confirm.text)).toContain(
      `Den Schlüssel „CI“ ( ${key!.prefix} ) widerrufen? Er funktioniert danach sofort nicht mehr, und Portal-Sitzungen mit ihm enden.`,
    );
    page = await f.admin.postAndFollow(`/portal/api-keys/${key!.id}/revoke`);
    expect(plain(page.text)).toContain('API-Schlüssel widerrufen.');
    expect(plain(page.text)).toContain('Leser (nur lesen)');
    // The English check finds the German wording (it is not vacuous).
    await expect(expectEnglish(page.text)).rejects.toThrow(/German text/);
  });
});
