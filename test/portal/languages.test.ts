/**
 * German and English: the catalogs hold the same keys, `Accept-Language` and the header's
 * switch pick the language, dates and numbers follow it, and every page an admin reaches
 * renders in both without a missing key and, in English, without German left in the page
 * code.
 */
import { describe, expect, it } from 'vitest';
import { catalogs } from '../../api/portal/i18n/catalog.ts';
import { formatBytes, formatNumber, formatTime } from '../../api/portal/i18n/index.ts';
import { type Language, pickLanguage, withLanguage } from '../../api/portal/i18n/language.ts';
import { relativeTime } from '../../api/portal/relative_time.tsx';
import { refreshFeed } from '../../api/vulnerabilities/feeds.ts';
import { matchOutdated } from '../../api/vulnerabilities/matching.ts';
import { createApiKey } from '../support/access.ts';
import { checkin, enrollAgent, report } from '../support/agent.ts';
import { useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { insertOrgUnit } from '../support/devices.ts';
import { PortalClient } from '../support/portal_client.ts';
import { BOOKWORM, DEBIAN_SAMPLE, insertInventory, insertPackageSet } from '../support/vulnerabilities.ts';

const ctx = useTestApp();

/** Every path to a leaf of a catalog, with the leaf's kind (`string`, `function/arity`). */
function leaves(value: unknown, path = ''): Map<string, string> {
  const found = new Map<string, string>();
  if (typeof value === 'function') found.set(path, `function/${value.length}`);
  else if (typeof value === 'string') found.set(path, 'string');
  else if (value !== null && typeof value === 'object') {
    for (const [key, inner] of Object.entries(value))
      for (const [p, k] of leaves(inner, `${path}.${key}`)) found.set(p, k);
  } else found.set(path, typeof value);
  return found;
}

/** Sample arguments for a catalog function: numbers for n-like names, text otherwise. */
function sample(fn: (...args: unknown[]) => unknown): unknown {
  const args = Array.from({ length: fn.length }, (_, i) => (i % 2 === 0 ? 2 : 'x'));
  try {
    return fn(...args);
  } catch {
    return fn(...Array.from({ length: fn.length }, () => 2));
  }
}

describe('the catalogs', () => {
  it('hold the same keys with the same kinds in German and English, none empty', () => {
    const de = leaves(catalogs.de);
    const en = leaves(catalogs.en);
    const missingInEnglish = [...de.keys()].filter((k) => !en.has(k));
    const missingInGerman = [...en.keys()].filter((k) => !de.has(k));
    expect(missingInEnglish, 'keys missing in en').toEqual([]);
    expect(missingInGerman, 'keys missing in de').toEqual([]);
    const differing = [...de].filter(([k, kind]) => en.get(k) !== kind).map(([k]) => k);
    expect(differing, 'keys of another kind').toEqual([]);
    for (const language of ['de', 'en'] as const) {
      for (const path of leaves(catalogs[language]).keys()) {
        const value = path
          .split('.')
          .slice(1)
          .reduce<unknown>((v, key) => (v as Record<string, unknown>)[key], catalogs[language]);
        const text = typeof value === 'function' ? sample(value as (...args: unknown[]) => unknown) : value;
        if (typeof text === 'string') expect(text.trim(), `${language}${path}`).not.toBe('');
      }
    }
  });

  it('a key missing in one language is found by the walk', () => {
    const broken = structuredClone({ a: { b: 'x', c: 'y' } });
    delete (broken.a as Partial<typeof broken.a>).c;
    expect([...leaves({ a: { b: 'x', c: 'y' } }).keys()].filter((k) => !leaves(broken).has(k))).toEqual(['.a.c']);
  });
});

describe('choosing the language', () => {
  it('the cookie first, then Accept-Language by q-value, else German', () => {
    expect(pickLanguage(undefined, undefined)).toBe('de');
    expect(pickLanguage(undefined, 'en-US,en;q=0.9')).toBe('en');
    expect(pickLanguage(undefined, 'fr-FR, en;q=0.5, de;q=0.8')).toBe('de');
    expect(pickLanguage(undefined, 'fr, en;q=0.2')).toBe('en');
    expect(pickLanguage(undefined, 'fr, it')).toBe('de');
    expect(pickLanguage(undefined, 'en;q=0, de;q=0.1')).toBe('de');
    expect(pickLanguage(undefined, '*')).toBe('de');
    expect(pickLanguage('en', 'de')).toBe('en');
    expect(pickLanguage('xx', 'en')).toBe('en');
  });

  it('dates, numbers and relative times per language', () => {
    const at = new Date('2026-11-26T09:05:07Z');
    const in_ = <T>(language: Language, run: () => T) => withLanguage({ language, path: '/portal' }, run);
    expect(in_('de', () => formatTime(at))).toBe('26.11.2026, 09:05 UTC');
    expect(in_('en', () => formatTime(at))).toBe('26 Nov 2026, 09:05 UTC');
    expect(in_('de', () => formatNumber(12345.6))).toBe('12.345,6');
    expect(in_('en', () => formatNumber(12345.6))).toBe('12,345.6');
    expect(in_('de', () => formatBytes(1_536_000_000))).toBe('1,5 GB');
    expect(in_('en', () => formatBytes(1_536_000_000))).toBe('1.5 GB');
    const now = new Date(at.getTime() + 3 * 60_000);
    expect(in_('de', () => relativeTime(at, now))).toBe('vor 3 Minuten');
    expect(in_('en', () => relativeTime(at, now))).toBe('3 minutes ago');
    expect(in_('en', () => relativeTime(at, new Date(at.getTime() + 3_600_000)))).toBe('1 hour ago');
    // Outside a request: German.
    expect(formatTime(at)).toBe('26.11.2026, 09:05 UTC');
  });

  it('Accept-Language picks the page language; the switch keeps the choice in a cookie and goes back', async () => {
    const english = new PortalClient(ctx.app, '10.7.0.1', 'en-US,en;q=0.9');
    let page = await english.get('/portal/login');
    expect(page.text).toContain('<html lang="en">');
    expect(page.text).toContain('Sign in');
    expect(page.headers.get('content-language')).toBe('en');
    expect(page.headers.get('vary')).toMatch(/Accept-Language/);

    const german = new PortalClient(ctx.app, '10.7.0.2');
    page = await german.get('/portal/login');
    expect(page.text).toContain('<html lang="de">');
    expect(page.text).toContain('Anmelden');
    // The switch links to the other language, coming back to this page.
    expect(page.text).toContain('href="/portal/language/en?back=%2Fportal%2Flogin"');

    const switched = await german.get('/portal/language/en?back=%2Fportal%2Fdevices%3Fstatus%3Dactive');
    expect(switched.status).toBe(303);
    expect(switched.location).toBe('/portal/devices?status=active');
    const cookie = german.lastSetCookies.join('\n');
    expect(cookie).toMatch(/fleet_lang=en/);
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/Path=\/portal/);
    expect(cookie).toMatch(/Max-Age=31536000/);
    page = await german.get('/portal/login');
    expect(page.text).toContain('<html lang="en">');
    // The cookie wins over Accept-Language.
    const both = new PortalClient(ctx.app, '10.7.0.3', 'en');
    await both.get('/portal/language/de');
    expect((await both.get('/portal/login')).text).toContain('<html lang="de">');

    // Only a page of this portal is a way back; an unknown language is not found and sets nothing.
    for (const back of ['https://evil.example/', '//evil.example/portal', '/api/v1/devices', '/portal/../api']) {
      const res = await german.get(`/portal/language/de?back=${encodeURIComponent(back)}`);
      expect(res.location, back).toBe('/portal');
    }
    const unknown = new PortalClient(ctx.app, '10.7.0.4');
    const res = await unknown.get('/portal/language/fr');
    expect(res.status).toBe(404);
    expect(unknown.cookies.has('fleet_lang')).toBe(false);
  });
});

/** The page's text without tags and entities, spaces collapsed. */
const plain = (html: string) =>
  html
    .replace(/<(script|style)[\s\S]*?<\/\1>/g, ' ')
    .replace(/<[^>]+>/g, ' ')
    .replace(/&[a-z#0-9]+;/g, ' ')
    .replace(/\s+/g, ' ');

/** Words of German page text that English never uses (checked after the fixture's own names are removed). */
const GERMAN =
  /\b(und|oder|nicht|kein\w*|Kein\w*|Gerät\w*|wurde\w*|werden|Sie|Ihre?[nrms]?|Seite\w*|zurück|Zurück|für|mit|von|bei|auf|der|dem|des|ist|sind|eine?[nrms]?|noch|alle|Alle|Übersicht|Gruppe\w*|Schlüssel|löschen|Löschen|ändern|Ändern|anlegen|Anlegen|Speichern|speichern|Abbrechen|Bestätigen|vorhanden|ausstehend|umgesetzt|Organisation\w*|Einheit\w*|Anmelden|Abmelden|wählen|Wählen|erstellt|Erstellt|zuletzt|Zuletzt|Ereignis\w*|angehalten|geöffnet)\b|[äöüÄÖÜß]/;

describe('every page in both languages', () => {
  it('an admin reaches every page from the overview in German and English, each without a missing key or German in English', async () => {
    const org = await createOrganization(ctx);
    const unit = await insertOrgUnit(ctx.sql, org.id, 'Physics');
    const agent = await enrollAgent(ctx, { organizationId: org.id, serial: `LG-${crypto.randomUUID().slice(0, 6)}` });
    await checkin(ctx, agent.secret, {
      hardware: { cpu: { cores: 4, model: 'CPU' }, memory_mb: 8000 },
      agent_version: '1.0',
    });
    await report(ctx, agent.secret, [{ merkmal: 'firefox', event: 'apply_failed', detail: { message: 'apt failed' } }]);
    // Security data and an inventory: the Security page's table, the device's vulnerabilities, a CVE's devices.
    expect((await refreshFeed(ctx.sql, 'debian', DEBIAN_SAMPLE)).outcome).toBe('changed');
    const set = await insertPackageSet(ctx.sql, [
      { name: 'curl', version: '7.88.1-10+deb12u3' },
      { name: 'fleet-test-pkg', version: '1.0-1' },
    ]);
    await insertInventory(ctx.sql, { id: agent.device_id, organization_id: org.id }, set, BOOKWORM, {
      security_pending_count: 2,
      reboot_required: true,
    });
    await matchOutdated(ctx.sql);
    const group = await ctx.request('POST', `/api/v1/organizations/${org.id}/groups`, { body: { name: 'Lab' } });
    await ctx.request('POST', `/api/v1/groups/${group.body.id}/members`, { body: { device_id: agent.device_id } });
    await ctx.request('PUT', `/api/v1/devices/${agent.device_id}/org-unit`, { body: { oe_id: unit } });
    await ctx.request('POST', `/api/v1/organizations/${org.id}/iso-builds`, { body: {} });
    await ctx.request('POST', `/api/v1/organizations/${org.id}/webhooks`, {
      body: { url: 'https://hooks.example.com/v', events: ['device.activated'] },
    });
    const rollout = await ctx.request('POST', `/api/v1/organizations/${org.id}/rollouts`, {
      body: { scope: 'org_unit', scope_id: unit, merkmal: 'qgis', action: 'select', rings: [50, 100] },
    });
    expect(rollout.status, JSON.stringify(rollout.body)).toBe(201);
    // Device actions: one finished with its upgrades (its page), one waiting; a rollout of one.
    const updates = await ctx.request('POST', `/api/v1/devices/${agent.device_id}/actions`, {
      body: { type: 'apply_updates' },
    });
    expect(updates.status).toBe(201);
    for (const [call, body] of [
      ['start', undefined],
      [
        'result',
        {
          exit_code: 0,
          output: 'done\n',
          duration_ms: 900,
          details: {
            upgraded: [{ name: 'curl', from: '7.88.1-10+deb12u3', to: '7.88.1-10+deb12u5' }],
            reboot_required: true,
          },
        },
      ],
    ] as const) {
      const res = await ctx.request('POST', `/api/v1/agent/actions/${updates.body.id}/${call}`, {
        token: agent.secret,
        body,
      });
      expect(res.status).toBe(204);
    }
    await ctx.request('POST', `/api/v1/devices/${agent.device_id}/actions`, {
      body: { type: 'script', parameters: { interpreter: 'sh', script: 'true' } },
    });
    const actionRollout = await ctx.request('POST', `/api/v1/organizations/${org.id}/rollouts`, {
      body: { scope: 'org_unit', scope_id: unit, device_action: { type: 'reboot' }, rings: [50, 100] },
    });
    expect(actionRollout.status, JSON.stringify(actionRollout.body)).toBe(201);
    const adminKey = (await createApiKey(ctx, org.id, 'admin', { name: 'Alex' })).key;

    // The fixture's own names (catalog, templates, workspaces, categories, org units: the
    // protected unit every organization has is named "Neue Geräte") are data, not page code.
    const names = (
      await ctx.sql<{ name: string }[]>`
        select name from merkmale union select name from kategorien union select name from templates
        union select name from workspaces union select key from merkmale union select name from org_units`
    )
      .map((r) => r.name)
      .sort((a, b) => b.length - a.length);

    const crawled: Record<Language, Map<string, string>> = { de: new Map(), en: new Map() };
    for (const [language, header] of [
      ['de', undefined],
      ['en', 'en-GB,en;q=0.9'],
    ] as const) {
      const admin = new PortalClient(ctx.app, `10.7.1.${language === 'de' ? 1 : 2}`, header);
      expect((await admin.signIn(adminKey)).status).toBe(303);
      const queue = ['/portal'];
      const seen = crawled[language];
      while (queue.length > 0 && seen.size < 120) {
        const path = queue.shift()!;
        if (seen.has(path)) continue;
        const page = await admin.get(path);
        expect(page.status, `${language} ${path}`).toBe(200);
        seen.set(path, page.text);
        for (const m of page.text.matchAll(/href="(\/portal[^"#]*)"/g)) {
          const link = m[1]!.replace(/&amp;/g, '&');
          if (/^\/portal\/(style\.css|rollouts\.js|language\/)/.test(link) || seen.has(link)) continue;
          if (/\/download$|\.iso$/.test(link)) continue;
          // Every page once, the paged lists' cursors and a list's filters only once each.
          const base = link.split('?')[0];
          if (link.includes('?') && [...seen.keys(), ...queue].some((s) => s.includes('?') && s.split('?')[0] === base))
            continue;
          queue.push(link);
        }
      }
      // The Security page's count leads to a CVE's devices (a list filter the crawl takes once per list).
      const cveDevices = /href="(\/portal\/devices\?cve=CVE-2023-38545)"/.exec(seen.get('/portal/security') ?? '');
      expect(cveDevices, `${language} /portal/security links to the CVE's devices`).not.toBeNull();
      const filtered = await admin.get(cveDevices![1]!);
      expect(filtered.status).toBe(200);
      seen.set(cveDevices![1]!, filtered.text);
    }
    expect(crawled.de.size).toBeGreaterThan(10);
    // The Security page with its table, and a CVE's devices, in both languages.
    for (const language of ['de', 'en'] as const) {
      expect(crawled[language].get('/portal/security'), language).toContain('data-cve="CVE-2023-38545"');
      expect(
        [...crawled[language].keys()].some((p) => p.startsWith('/portal/devices?cve=')),
        language,
      ).toBe(true);
    }
    expect([...crawled.en.keys()].sort()).toEqual([...crawled.de.keys()].sort());
    // A device action's page and a rollout of one, in both languages.
    for (const language of ['de', 'en'] as const) {
      expect(crawled[language].has(`/portal/actions/${updates.body.id}`), language).toBe(true);
      expect(crawled[language].has(`/portal/rollouts/${actionRollout.body.id}`), language).toBe(true);
    }
    // Every page's problems at once, so one run names every page still to mend.
    const problems: string[] = [];
    for (const language of ['de', 'en'] as const) {
      for (const [path, html] of crawled[language]) {
        if (!html.includes(`<html lang="${language}">`)) problems.push(`${language} ${path}: not lang="${language}"`);
        const text = plain(html);
        const broken = /\bundefined\b|\[object |\bNaN\b|\bnull\b/.exec(text);
        if (broken)
          problems.push(
            `${language} ${path}: "${broken[0]}" in …${text.slice(Math.max(0, broken.index - 60), broken.index + 60)}…`,
          );
        if (language === 'en') {
          let stripped = text;
          for (const name of names) stripped = stripped.split(name).join(' ');
          const german = GERMAN.exec(stripped);
          if (german) {
            problems.push(
              `en ${path}: German "${german[0]}" in …${stripped.slice(Math.max(0, german.index - 60), german.index + 60)}…`,
            );
          }
        }
      }
    }
    expect(problems).toEqual([]);
  }, 120_000);
});
