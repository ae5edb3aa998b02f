/**
 * The portal over HTTP in-process (CONTRACT §21): sign-in, wrong key, the session cookie's
 * flags, a revoked key ending the session, CSRF, a viewer's write, another organization's
 * device, audit rows with the session's key as actor, the failed-sign-in limit.
 */
import { Buffer } from 'node:buffer';
import { describe, expect, it } from 'vitest';
import { hashSecret } from '../../api/http/crypto.ts';
import { createApiKey } from '../support/access.ts';
import { ADMIN_TOKEN, useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { countRows } from '../support/db.ts';
import { insertDevice, insertOrgUnit, TEMPLATE_IDS } from '../support/devices.ts';
import { PortalClient } from '../support/portal_client.ts';
import { portalRoutes } from '../../api/portal/routes.tsx';

const ctx = useTestApp({ activation: { maxFailures: 5, windowSeconds: 600, trustProxy: true } });

/** A browser-like client: keeps cookies, sends forms, does not follow redirects. */
class Browser extends PortalClient {
  constructor(address = `10.0.0.${Math.floor(Math.random() * 250) + 1}`) {
    super(ctx.app, address);
  }

  post = (path: string, form: Record<string, string> = {}) => this.request('POST', path, form);
}

async function fleet() {
  const org = await createOrganization(ctx);
  const unit = await insertOrgUnit(ctx.sql, org.id, 'Schule');
  const device = await insertDevice(ctx.sql, {
    organizationId: org.id,
    oeId: unit,
    serial: `PF-${crypto.randomUUID().slice(0, 6)}`,
    hostname: 'arbeitsplatz-017',
    templateId: TEMPLATE_IDS.debianStandard,
  });
  const admin = await createApiKey(ctx, org.id, 'admin', { name: 'Portal-Admin' });
  const viewer = await createApiKey(ctx, org.id, 'viewer', { name: 'Portal-Leser' });
  return { org, unit, device, admin, viewer };
}

describe('sign-in', () => {
  it('an admin key opens a session: cookie HttpOnly, SameSite=Strict, Path=/portal, 8 hours, stored only hashed', async () => {
    const f = await fleet();
    const b = new Browser();
    const res = await b.signIn(f.admin.key);
    expect(res.status).toBe(303);
    expect(res.location).toBe('/portal/devices');
    const cookie = b.lastSetCookies.find((c) => c.startsWith('fleet_session='))!;
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Strict/);
    expect(cookie).toMatch(/Path=\/portal/);
    expect(cookie).toMatch(/Max-Age=28800/);
    expect(cookie).not.toMatch(/Secure/); // PUBLIC_BASE_URL is http in the tests
    const token = b.cookies.get('fleet_session')!;
    // The session's row is found by the token's SHA-256 alone, and holds the token in no
    // encoding: not as text, not as the hex or base64 of its bytes or of its decoded bytes.
    const [stored] = await ctx.sql`
      select row_to_json(s)::text as row from portal_sessions s where token_hash = ${hashSecret(token)}`;
    expect(stored).toBeDefined();
    const decoded = Buffer.from(token, 'base64url');
    const encodings = [
      token,
      Buffer.from(token).toString('hex'),
      Buffer.from(token).toString('base64'),
      decoded.toString('hex'),
      decoded.toString('base64'),
    ];
    for (const encoded of encodings) expect(stored!.row.toLowerCase()).not.toContain(encoded.toLowerCase());
    const page = await b.get('/portal/devices');
    expect(page.status).toBe(200);
    expect(page.text).toContain('arbeitsplatz-017');
    expect(page.text).toContain('Portal-Admin');
  });

  it('a wrong key shows the form again with an error and opens no session', async () => {
    const b = new Browser();
    const before = await countRows(ctx.sql, 'portal_sessions');
    for (const key of ['fpk_wrong', ADMIN_TOKEN.slice(1), '']) {
      const res = await b.signIn(key);
      expect(res.status).toBe(401);
      expect(res.text).toContain('Der Schlüssel ist falsch');
      expect(res.text).toContain('name="key"');
    }
    expect(await countRows(ctx.sql, 'portal_sessions')).toBe(before);
    expect((await b.get('/portal/devices')).location).toBe('/portal/login');
  });

  it('a login form without its CSRF cookie is refused', async () => {
    const f = await fleet();
    const b = new Browser();
    const res = await b.post('/portal/login', { _csrf: 'x'.repeat(43), key: f.admin.key });
    expect(res.status).toBe(403);
    expect(b.cookies.has('fleet_session')).toBe(false);
  });

  it('counts failed sign-ins per address by the activation limit: past it a wrong key is 429', async () => {
    const b = new Browser('192.0.2.77');
    for (let i = 0; i < 5; i++) expect((await b.signIn('fpk_nope')).status).toBe(401);
    const res = await b.signIn('fpk_nope');
    expect(res.status).toBe(429);
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(res.text).toContain('Zu viele fehlgeschlagene Anmeldungen');
    expect(b.cookies.has('fleet_session')).toBe(false);
    // Another address is not affected.
    expect((await new Browser('192.0.2.78').signIn('fpk_nope')).status).toBe(401);
  });

  it('a right key or the operator token signs in at the limit; wrong and revoked keys get 429', async () => {
    const f = await fleet();
    const revoked = await createApiKey(ctx, f.org.id, 'admin', { name: 'Alt-Admin' });
    expect((await ctx.request('POST', `/api/v1/api-keys/${revoked.id}/revoke`)).status).toBe(200);
    const address = '192.0.2.99';
    const guesser = new Browser(address);
    const statuses = [];
    for (let i = 0; i < 25; i++) statuses.push((await guesser.signIn(`fpk_guess${i}`)).status);
    expect(statuses).toEqual([...Array(5).fill(401), ...Array(20).fill(429)]);

    const admin = new Browser(address);
    const res = await admin.signIn(f.admin.key);
    expect(res.status).toBe(303);
    expect(res.location).toBe('/portal/devices');
    expect(admin.cookies.has('fleet_session')).toBe(true);
    expect((await admin.get('/portal/devices')).status).toBe(200);

    const operator = new Browser(address);
    expect((await operator.signIn(ADMIN_TOKEN)).location).toBe('/portal/organization');
    expect(operator.cookies.has('fleet_session')).toBe(true);

    // A revoked key is a wrong key now, so the limit refuses it as any other.
    for (const key of ['fpk_wrong', ADMIN_TOKEN.slice(1), revoked.key, '']) {
      const b = new Browser(address);
      const wrong = await b.signIn(key);
      expect(wrong.status, key).toBe(429);
      expect(Number(wrong.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(b.cookies.has('fleet_session')).toBe(false);
    }
    // The right sign-ins at the limit counted nothing: the address's count stays at the limit.
    const [row] = await ctx.sql<{ n: number }[]>`
      select cardinality(failures)::int as n from activation_failure_counts where client_key = ${`portal:${address}`}`;
    expect(row?.n).toBe(5);
  });

  it('the operator token signs in and then chooses an organization', async () => {
    const f = await fleet();
    const b = new Browser();
    const res = await b.signIn(ADMIN_TOKEN);
    expect(res.location).toBe('/portal/organization');
    expect((await b.get('/portal/devices')).location).toBe('/portal/organization');
    const choose = await b.get('/portal/organization');
    const chosen = await b.post('/portal/organization', {
      _csrf: Browser.csrf(choose.text),
      organization_id: f.org.id,
    });
    expect(chosen.location).toBe('/portal/devices');
    expect((await b.get(`/portal/devices/${f.device.id}`)).status).toBe(200);
    const other = await fleet();
    expect((await b.get(`/portal/devices/${other.device.id}`)).status).toBe(404);
  });

  it('sign-out ends the session server-side', async () => {
    const f = await fleet();
    const b = new Browser();
    await b.signIn(f.admin.key);
    const token = b.cookies.get('fleet_session')!;
    const page = await b.get('/portal/devices');
    expect((await b.post('/portal/logout', { _csrf: Browser.csrf(page.text) })).location).toBe('/portal/login');
    b.cookies.set('fleet_session', token); // a stolen copy of the cookie is worthless now
    expect((await b.get('/portal/devices')).location).toBe('/portal/login');
  });

  it('signs out a session that writes without pause at once: no write that starts after the answer makes a group', async () => {
    const f = await fleet();
    const b = new Browser();
    await b.signIn(f.admin.key);
    const token = b.cookies.get('fleet_session')!;
    const csrf = Browser.csrf((await b.get('/portal/groups')).text);
    // Eight tabs write with the session back to back, so some write is under way at almost
    // every instant; the sign-out waits for none of them.
    let signedOut = false;
    let signedOutAt = Number.POSITIVE_INFINITY;
    const startedAt = new Map<string, number>();
    let started!: () => void;
    const writing = new Promise<void>((resolve) => (started = resolve));
    const tab = async (t: number) => {
      const client = new Browser(b.address);
      client.cookies.set('fleet_session', token);
      for (let i = 0; i < 400; i++) {
        const name = `Tab ${t}.${i}`;
        startedAt.set(name, performance.now());
        const res = await client.post('/portal/groups', { _csrf: csrf, name });
        // 401: a write that started after the sign-out, or found the session ended inside its transaction.
        expect([303, 401]).toContain(res.status);
        if (res.location === '/portal/groups') started();
        if (signedOut) break;
      }
    };
    // How long it takes under load: test/access/revoke_at_once.test.ts.
    const signOut = async () => {
      await writing;
      const res = await b.post('/portal/logout', { _csrf: csrf });
      signedOutAt = performance.now();
      signedOut = true;
      expect(res.location).toBe('/portal/login');
    };
    await Promise.all([...Array.from({ length: 8 }, (_, t) => tab(t)), signOut()]);
    // Every group made began before the sign-out answered.
    const made = await ctx.sql<{ name: string }[]>`select name from groups where organization_id = ${f.org.id}`;
    expect(made.length).toBeGreaterThan(0);
    expect(made.filter((g) => startedAt.get(g.name)! > signedOutAt)).toEqual([]);
  });
});

describe('the session ends at once with its key', () => {
  it('revoking the key ends the session on the next request', async () => {
    const f = await fleet();
    const b = new Browser();
    await b.signIn(f.viewer.key);
    expect((await b.get('/portal/devices')).status).toBe(200);
    const res = await ctx.request('POST', `/api/v1/api-keys/${f.viewer.id}/revoke`);
    expect(res.status).toBe(200);
    expect((await b.get('/portal/devices')).location).toBe('/portal/login');
  });

  it('an expired key ends the session too', async () => {
    const f = await fleet();
    const b = new Browser();
    await b.signIn(f.admin.key);
    await ctx.sql`update api_keys set expires_at = now() - interval '1 second' where id = ${f.admin.id}`;
    expect((await b.get('/portal/devices')).location).toBe('/portal/login');
  });
});

describe('writes', () => {
  it('select on the device: 303 with a flash, the state changes, audited with the key as actor', async () => {
    const f = await fleet();
    const b = new Browser();
    await b.signIn(f.admin.key);
    const page = await b.get(`/portal/devices/${f.device.id}`);
    expect(page.text).toContain('data-merkmal="qgis"');
    const res = await b.post(`/portal/org-units/${f.unit}/catalog/qgis/select`, { _csrf: Browser.csrf(page.text) });
    expect(res.status).toBe(303);
    const catalog = await ctx.request('GET', `/api/v1/devices/${f.device.id}/catalog`);
    expect(catalog.body.items.find((i: { merkmal: string }) => i.merkmal === 'qgis')).toMatchObject({
      state: 'present',
      origin: 'oe',
    });
    const [audit] = await ctx.sql`select actor, action, target_id from audit_events
      where organization_id = ${f.org.id} and action = 'catalog.select'`;
    expect(audit).toMatchObject({
      action: 'catalog.select',
      target_id: f.unit,
      actor: { type: 'api_key', api_key_id: f.admin.id, name: 'Portal-Admin' },
    });
    const after = await b.get(res.location!);
    expect(after.text).toContain('qgis: auswählen gespeichert.');
  });

  it("an archived device's page offers no selection at the device, and a crafted one is refused with nothing written", async () => {
    const f = await fleet();
    await ctx.sql`update devices set archived_at = now() where id = ${f.device.id}`;
    const b = new Browser();
    await b.signIn(f.admin.key);
    const page = await b.get(`/portal/devices/${f.device.id}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('data-merkmal="qgis"');
    expect(page.text).not.toContain(`action="/portal/devices/${f.device.id}/catalog/`);
    expect(page.text).toContain(`action="/portal/org-units/${f.unit}/catalog/qgis/select"`);
    const before = await countRows(ctx.sql, 'audit_events');
    const res = await b.post(`/portal/devices/${f.device.id}/catalog/qgis/select`, { _csrf: Browser.csrf(page.text) });
    expect(res.status).toBe(303);
    expect((await b.get(res.location!)).text).toContain('Das Gerät ist archiviert und ändert sich nicht mehr.');
    expect(await ctx.sql`select 1 from device_merkmale where device_id = ${f.device.id}`).toHaveLength(0);
    expect(await countRows(ctx.sql, 'audit_events')).toBe(before);
  });

  it('a POST without or with a wrong CSRF token is 403 and changes nothing', async () => {
    const f = await fleet();
    const b = new Browser();
    await b.signIn(f.admin.key);
    const tables = ['org_unit_merkmale', 'device_merkmale', 'audit_events', 'enrollment_sessions', 'devices'];
    const before = await Promise.all(tables.map((t) => countRows(ctx.sql, t)));
    for (const form of [{}, { _csrf: 'falsch' }] as Record<string, string>[]) {
      expect((await b.post(`/portal/org-units/${f.unit}/catalog/qgis/select`, form)).status).toBe(403);
      expect((await b.post(`/portal/devices/${f.device.id}/archive`, form)).status).toBe(403);
      expect(
        (
          await b.post('/portal/enrollment-sessions', {
            ...form,
            template_id: TEMPLATE_IDS.debianStandard,
            max_devices: '5',
            days: '3',
          })
        ).status,
      ).toBe(403);
    }
    expect(await Promise.all(tables.map((t) => countRows(ctx.sql, t)))).toEqual(before);
    const [device] = await ctx.sql`select archived_at from devices where id = ${f.device.id}`;
    expect(device!.archived_at).toBeNull();
  });

  it('a viewer sees no write control, and every write it tries is 403 with nothing changed', async () => {
    const f = await fleet();
    const b = new Browser();
    await b.signIn(f.viewer.key);
    const page = await b.get(`/portal/devices/${f.device.id}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('Warum?');
    const forms = [...page.text.matchAll(/<form[^>]*action="([^"]+)"/g)].map((m) => m[1]);
    expect(forms).toEqual(['/portal/logout']);
    const csrf = Browser.csrf(page.text);
    const before = await countRows(ctx.sql, 'audit_events');
    for (const path of [
      `/portal/devices/${f.device.id}/catalog/qgis/select`,
      `/portal/org-units/${f.unit}/catalog/qgis/deselect`,
      `/portal/devices/${f.device.id}/deprovision`,
      '/portal/enrollment-sessions',
      '/portal/iso-builds',
    ]) {
      const res = await b.post(path, {
        _csrf: csrf,
        template_id: TEMPLATE_IDS.debianStandard,
        max_devices: '5',
        days: '3',
        source: `template:${TEMPLATE_IDS.debianStandard}`,
      });
      expect(res.status, path).toBe(403);
    }
    expect((await b.get(`/portal/devices/${f.device.id}/confirm/archive`)).status).toBe(403);
    expect((await b.get('/portal/enrollment-sessions')).status).toBe(403);
    expect(await countRows(ctx.sql, 'audit_events')).toBe(before);
    const iso = await b.get('/portal/iso-builds');
    expect(iso.status).toBe(200);
    expect(iso.text).not.toContain('ISO erzeugen');
  });

  it("another organization's device, unit or session is 404, as an unknown one", async () => {
    const f = await fleet();
    const other = await fleet();
    const b = new Browser();
    await b.signIn(f.admin.key);
    const csrf = Browser.csrf((await b.get('/portal/devices')).text);
    expect((await b.get(`/portal/devices/${other.device.id}`)).status).toBe(404);
    expect((await b.get(`/portal/devices/${crypto.randomUUID()}`)).status).toBe(404);
    expect((await b.get('/portal/devices/nope')).status).toBe(404);
    expect((await b.post(`/portal/devices/${other.device.id}/archive`, { _csrf: csrf })).status).toBe(404);
    expect((await b.post(`/portal/org-units/${other.unit}/catalog/qgis/select`, { _csrf: csrf })).status).toBe(404);
    const [d] = await ctx.sql`select archived_at from devices where id = ${other.device.id}`;
    expect(d!.archived_at).toBeNull();
  });

  it('deprovision after the confirmation page; an enrollment session is created and revoked; all audited', async () => {
    const f = await fleet();
    const b = new Browser();
    await b.signIn(f.admin.key);
    const confirm = await b.get(`/portal/devices/${f.device.id}/confirm/deprovision`);
    expect(confirm.status).toBe(200);
    const done = await b.post(`/portal/devices/${f.device.id}/deprovision`, { _csrf: Browser.csrf(confirm.text) });
    expect(done.location).toBe(`/portal/devices/${f.device.id}`);
    const sessions = await b.get('/portal/enrollment-sessions');
    expect(sessions.text).toContain('Noch keine Enrollment-Sessions');
    const csrf = Browser.csrf(sessions.text);
    const bad = await b.post('/portal/enrollment-sessions', {
      _csrf: csrf,
      template_id: TEMPLATE_IDS.debianStandard,
      max_devices: '0',
      days: '3',
    });
    expect(bad.status).toBe(303);
    expect((await b.get('/portal/enrollment-sessions')).text).toContain('Ungültige Eingabe');
    await b.post('/portal/enrollment-sessions', {
      _csrf: csrf,
      template_id: TEMPLATE_IDS.debianStandard,
      max_devices: '5',
      days: '3',
    });
    const [s] = await ctx.sql`select id, max_devices from enrollment_sessions where organization_id = ${f.org.id}`;
    expect(s!.max_devices).toBe(5);
    expect((await b.get('/portal/enrollment-sessions')).text).toContain('0 von 5');
    await b.post(`/portal/enrollment-sessions/${s!.id}/revoke`, { _csrf: csrf });
    const actions = await ctx.sql`select action, actor->>'api_key_id' as key from audit_events
      where organization_id = ${f.org.id} and actor->>'type' = 'api_key' order by seq`;
    expect(actions.map((a) => [a.action, a.key])).toEqual([
      ['device.deprovision', f.admin.id],
      ['enrollment_session.create', f.admin.id],
      ['enrollment_session.revoke', f.admin.id],
    ]);
  });
});

describe('pages', () => {
  it('the device list filters, searches and marks stale devices; the empty state says what to do', async () => {
    const f = await fleet();
    const b = new Browser();
    await b.signIn(f.admin.key);
    await ctx.sql`update devices set agent_secret_hash = sha256('x'::bytea || id::text::bytea),
      agent_secret_issued_at = now() - interval '1 day' where id = ${f.device.id}`;
    const list = await b.get('/portal/devices?stale=true&q=ARBEITS');
    expect(list.text).toContain('(veraltet)');
    expect(list.text).toContain('arbeitsplatz-017');
    expect((await b.get('/portal/devices?q=zzz')).text).toContain('Keine Geräte passen');
    const empty = await createOrganization(ctx);
    const key = await createApiKey(ctx, empty.id, 'admin');
    const e = new Browser();
    await e.signIn(key.key);
    expect((await e.get('/portal/devices')).text).toContain(
      'Noch keine Geräte: erstellen Sie eine Enrollment-Session und ein ISO.',
    );
  });

  it('serves its style sheet; unknown portal pages are 404 pages', async () => {
    const css = await ctx.app.request('/portal/style.css');
    expect(css.status).toBe(200);
    expect(css.headers.get('content-type')).toMatch(/text\/css/);
    const f = await fleet();
    const b = new Browser();
    await b.signIn(f.admin.key);
    expect((await b.get('/portal/nichts')).status).toBe(404);
  });

  it('org units, groups, API keys, audit log and webhooks: admins read all, viewers what §12 lets them', async () => {
    const f = await fleet();
    const admin = new Browser();
    await admin.signIn(f.admin.key);
    const units = await admin.get('/portal/org-units');
    expect(units.status).toBe(200);
    expect(units.text).toContain('Schule');
    expect(units.text).toContain('Neue Geräte');
    for (const path of ['/portal/groups', '/portal/api-keys', '/portal/audit', '/portal/webhooks']) {
      expect((await admin.get(path)).status, path).toBe(200);
    }
    expect((await admin.get('/portal/api-keys')).text).toContain('Portal-Leser');
    const viewer = new Browser();
    await viewer.signIn(f.viewer.key);
    for (const path of ['/portal/org-units', '/portal/groups', '/portal/iso-builds']) {
      expect((await viewer.get(path)).status, path).toBe(200);
    }
    for (const path of ['/portal/api-keys', '/portal/audit', '/portal/webhooks', '/portal/enrollment-sessions']) {
      expect((await viewer.get(path)).status, path).toBe(403);
    }
  });
});

describe('security headers', () => {
  /** Every route the portal app declares, its parameters filled (unknown ids: the 404 page). */
  function everyRoute(): Array<{ method: string; path: string }> {
    const routes = portalRoutes()
      .routes.filter((r) => r.method !== 'ALL')
      .map((r) => ({
        method: r.method,
        path: `/portal${r.path === '/' ? '' : r.path}`
          .replace(':merkmal', 'qgis')
          .replace(':transition', 'deprovision')
          .replace(/:[a-z]+/g, () => crypto.randomUUID()),
      }));
    // The catch-all 404 page, and sign-out last: it ends the session.
    routes.push({ method: 'GET', path: '/portal/nichts' }, { method: 'POST', path: '/portal/nichts' });
    return routes.sort((a, b) => Number(a.path === '/portal/logout') - Number(b.path === '/portal/logout'));
  }

  function expectSecurityHeaders(res: { headers: Headers }, what: string) {
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp, what).toContain("frame-ancestors 'none'");
    expect(csp, what).toContain("default-src 'none'");
    // Scripts only from the portal itself (its rollout page's refresh), none inline.
    expect(csp, what).toContain("script-src 'self';");
    expect(csp, what).not.toMatch(/unsafe-inline|unsafe-eval|https?:/);
    expect(res.headers.get('x-frame-options'), what).toBe('DENY');
    expect(res.headers.get('x-content-type-options'), what).toBe('nosniff');
    expect(res.headers.get('referrer-policy'), what).toBe('same-origin');
  }

  it('every portal route answers with them, signed in or not; all but the style sheet and the script are no-store', async () => {
    const f = await fleet();
    const admin = new Browser();
    expect((await admin.signIn(f.admin.key)).status).toBe(303);
    const csrf = PortalClient.csrf((await admin.get('/portal/devices')).text);
    const routes = everyRoute();
    expect(routes.length).toBeGreaterThan(40);
    const statuses = new Set<number>();
    for (const { method, path } of routes) {
      for (const [who, b] of [
        ['anonymous', new Browser()],
        ['admin', admin],
      ] as const) {
        const res = await b.request(method, path, method === 'POST' ? { _csrf: csrf } : undefined);
        const what = `${who} ${method} ${path} → ${res.status}`;
        statuses.add(res.status);
        expectSecurityHeaders(res, what);
        if (path === '/portal/style.css' || path === '/portal/rollouts.js')
          expect(res.headers.get('cache-control'), what).toMatch(/^public/);
        else expect(res.headers.get('cache-control'), what).toMatch(/no-store/);
      }
    }
    // Pages, redirects, refusals and error pages were all among them.
    for (const status of [200, 303, 401, 404]) expect(statuses, String(status)).toContain(status);
    // Real pages of real objects too.
    const again = new Browser();
    await again.signIn(f.admin.key);
    for (const path of [`/portal/devices/${f.device.id}`, `/portal/org-units/${f.unit}`, '/portal/organization']) {
      const res = await again.get(path);
      expectSecurityHeaders(res, path);
      expect(res.headers.get('cache-control'), path).toBe('no-store');
    }
  });
});
