/**
 * The portal pages an admin reads every day, over HTTP in-process: the device page's
 * hardware table, agent version and events with cause, actor and message.
 */
import { describe, expect, it } from 'vitest';
import { hardwareRows } from '../../api/portal/device_details.tsx';
import { createApiKey } from '../support/access.ts';
import { checkin, enrollAgent, report } from '../support/agent.ts';
import { ADMIN_TOKEN, useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { insertOrgUnit } from '../support/devices.ts';
import { PortalClient } from '../support/portal_client.ts';

const ctx = useTestApp();

async function signedIn(key: string, acceptLanguage?: string) {
  const b = new PortalClient(ctx.app, `10.4.0.${Math.floor(Math.random() * 250) + 1}`, acceptLanguage);
  expect((await b.signIn(key)).status).toBe(303);
  return b;
}

/** The page's text without tags, spaces collapsed. */
const plain = (html: string) =>
  html
    .replace(/<[^>]+>/g, ' ')
    .replace(/&quot;/g, '"')
    .replace(/\s+/g, ' ');

/** The cell of the row with this attribute (tags removed). */
function rowText(html: string, attribute: string): string {
  const m = new RegExp(`<tr ${attribute}[^>]*>([\\s\\S]*?)</tr>`).exec(html);
  expect(m, attribute).not.toBeNull();
  return plain(m![1]!).trim();
}

/** What the device agent sends (fleet_agent_helpers.py `hardware()`). */
const agentHardware = {
  dmi: {
    sys_vendor: 'LENOVO',
    product_name: '20N2S0A400',
    product_version: 'ThinkPad T490',
    product_serial: 'PF1ABCDE',
  },
  cpu: { cores: 8, model: 'Intel(R) Core(TM) i5-8365U CPU @ 1.60GHz' },
  memory_mb: 15_872,
  disks: [
    { name: 'nvme0n1', size_gb: 512, model: 'SAMSUNG MZVLB512' },
    { name: 'sda', size_gb: null },
  ],
  os: 'Debian GNU/Linux 12 (bookworm)',
  kernel: '6.1.0-26-amd64',
  hostname: 'arbeitsplatz-017',
};

describe('the device page', () => {
  it('shows the hardware as a table, the agent version, and events with cause, actor and message', async () => {
    const org = await createOrganization(ctx);
    const unit = await insertOrgUnit(ctx.sql, org.id, 'Physik');
    const agent = await enrollAgent(ctx, { organizationId: org.id, serial: `HW-${crypto.randomUUID().slice(0, 6)}` });
    expect((await checkin(ctx, agent.secret, { hardware: agentHardware, agent_version: '1.4.2' })).status).toBe(200);
    const adminKey = await createApiKey(ctx, org.id, 'admin', { name: 'Frau Admin' });
    // A selection at the org unit by the admin (cause oe, the unit's name), then the agent's failure.
    const move = await ctx.request('PUT', `/api/v1/devices/${agent.device_id}/org-unit`, {
      body: { oe_id: unit },
      token: adminKey.key,
    });
    expect(move.status, JSON.stringify(move.body)).toBe(200);
    const select = await ctx.request('POST', `/api/v1/org-units/${unit}/catalog/qgis/select`, {
      body: {},
      token: adminKey.key,
    });
    expect(select.status, JSON.stringify(select.body)).toBeLessThan(300);
    await report(ctx, agent.secret, [
      {
        merkmal: 'qgis',
        event: 'apply_failed',
        detail: { role: 'qgis', changed: false, message: 'qgis: Paket fehlt' },
      },
    ]);

    const b = await signedIn((await createApiKey(ctx, org.id, 'viewer')).key);
    const page = await b.get(`/portal/devices/${agent.device_id}`);
    expect(page.status).toBe(200);
    const html = page.text;
    expect(rowText(html, 'data-hardware="model"')).toContain('LENOVO 20N2S0A400 ThinkPad T490');
    expect(rowText(html, 'data-hardware="cpu"')).toContain('Intel(R) Core(TM) i5-8365U CPU @ 1.60GHz (8 Kerne)');
    expect(rowText(html, 'data-hardware="memory"')).toContain('15,5 GiB');
    expect(rowText(html, 'data-hardware="disks"')).toContain('nvme0n1 · 512 GB · SAMSUNG MZVLB512');
    expect(rowText(html, 'data-hardware="disks"')).toContain('sda');
    expect(rowText(html, 'data-hardware="os"')).toContain('Debian GNU/Linux 12 (bookworm)');
    expect(rowText(html, 'data-hardware="kernel"')).toContain('6.1.0-26-amd64');
    expect(rowText(html, 'data-hardware="agent_version"')).toContain('1.4.2');
    // The raw JSON is there, behind a disclosure, no longer the main view.
    expect(html).toMatch(/<details><summary>Rohdaten \(JSON\)<\/summary><pre>/);

    const failed = rowText(html, 'data-event-type="apply_failed"');
    expect(failed).toContain('Bericht des Agenten');
    expect(failed).toContain('Agent des Geräts');
    expect(failed).toContain('qgis: Paket fehlt');
    const selected = rowText(html, 'data-event-type="selected"');
    expect(selected).toContain('Vorgabe der Organisationseinheit „Physik“');
    expect(selected).toContain('Frau Admin');
  });

  it('reads hardware of any shape: missing keys are left out, unknown ones listed by name, odd values as JSON', () => {
    expect(hardwareRows(null)).toEqual([]);
    expect(hardwareRows([1, 2])).toEqual([]);
    expect(hardwareRows({})).toEqual([]);
    const rows = hardwareRows({ cpu: 'i7', memory_mb: 'viel', disks: 'eine', gpu: { model: 'X' }, os: 12 });
    const byKey = Object.fromEntries(rows.map((r) => [r.key, r.value]));
    expect(byKey).toEqual({ cpu: 'i7', memory: 'viel', disks: ['eine'], gpu: '{"model":"X"}', os: '12' });
    expect(rows.find((r) => r.key === 'gpu')!.label).toBe('gpu');
  });
});

describe('the webhooks page', () => {
  async function hookWith(organizationId: string, url: string) {
    const res = await ctx.request('POST', `/api/v1/organizations/${organizationId}/webhooks`, {
      body: { url, events: ['device.activated'] },
    });
    expect(res.status).toBe(201);
    return res.body.id as string;
  }

  /** The webhook's section of the page. */
  function section(html: string, id: string): string {
    const start = html.indexOf(`data-webhook="${id}"`);
    expect(start, id).toBeGreaterThan(-1);
    const end = html.indexOf('</section>', start);
    return html.slice(start, end);
  }

  it("names each webhook's status as the API's deliveries say, lists its last deliveries and sends a test event", async () => {
    const org = await createOrganization(ctx);
    const failing = await hookWith(org.id, 'https://hooks.example.com/failing');
    const fine = await hookWith(org.id, 'https://hooks.example.com/fine');
    const disabled = await hookWith(org.id, 'https://hooks.example.com/disabled');
    // Three deliveries of the failing one, each tried and failed (as the API lists them).
    for (let i = 0; i < 3; i++)
      expect((await ctx.request('POST', `/api/v1/webhooks/${failing}/test`)).status).toBe(202);
    await ctx.sql`update webhook_deliveries set attempts = 3, last_status_code = 500,
      last_error = 'HTTP 500: Interner Fehler beim Empfänger' where webhook_id = ${failing}`;
    expect((await ctx.request('POST', `/api/v1/webhooks/${fine}/test`)).status).toBe(202);
    await ctx.sql`update webhook_deliveries set status = 'delivered', attempts = 1, last_status_code = 204,
      delivered_at = now(), next_attempt_at = null where webhook_id = ${fine}`;
    await ctx.sql`update webhooks set disabled_at = now() where id = ${disabled}`;
    const api = await ctx.request('GET', `/api/v1/webhooks/${failing}/deliveries`);
    expect(api.body.items.map((d: { status: string; attempts: number }) => [d.status, d.attempts])).toEqual([
      ['pending', 3],
      ['pending', 3],
      ['pending', 3],
    ]);

    const admin = await signedIn((await createApiKey(ctx, org.id, 'admin')).key);
    const page = await admin.get('/portal/webhooks');
    expect(page.status).toBe(200);
    const bad = section(page.text, failing);
    expect(plain(bad)).toContain('Zustellung schlägt fehl: 3 Versuche, wird wiederholt');
    expect(bad).toContain('data-status="failing"');
    expect(bad.match(/data-delivery=/g)).toHaveLength(3);
    expect(plain(bad)).toContain('HTTP 500: Interner Fehler beim Empfänger');
    expect(plain(section(page.text, fine))).toMatch(/aktiv, zuletzt zugestellt \d\d\.\d\d\.\d{4}/);
    const off = section(page.text, disabled);
    expect(plain(off)).toContain('deaktiviert seit');
    expect(off).not.toContain('/test"');
    expect(plain(off)).toContain('Noch keine Zustellung.');

    // The test button: one more delivery, webhook.test, for that webhook alone.
    const res = await admin.request('POST', `/portal/webhooks/${fine}/test`, { _csrf: PortalClient.csrf(page.text) });
    expect(res.status).toBe(303);
    const after = await admin.get('/portal/webhooks');
    expect(plain(after.text)).toContain('Test-Ereignis eingereiht');
    const newest = section(after.text, fine);
    expect(newest.match(/data-delivery=/g)).toHaveLength(2);
    expect(newest).toMatch(/data-status="pending"[\s\S]*webhook\.test/);
    expect(section(after.text, failing).match(/data-delivery=/g)).toHaveLength(3);

    // A disabled webhook's test, forged: refused with the reason, nothing queued.
    const refused = await admin.request('POST', `/portal/webhooks/${disabled}/test`, {
      _csrf: PortalClient.csrf(after.text),
    });
    expect(refused.status).toBe(303);
    expect(plain((await admin.get('/portal/webhooks')).text)).toContain('deaktiviert und sendet nichts mehr');
    expect(await ctx.sql`select 1 from webhook_deliveries where webhook_id = ${disabled}`).toHaveLength(0);
  });

  /** A test delivery of the webhook, through the API; its id. */
  async function deliveryOf(webhookId: string): Promise<string> {
    const res = await ctx.request('POST', `/api/v1/webhooks/${webhookId}/test`);
    expect(res.status).toBe(202);
    return res.body.id as string;
  }

  it("each delivery links to its attempts: time, HTTP status or error, duration; another organization's ids are not found", async () => {
    const org = await createOrganization(ctx);
    const hook = await hookWith(org.id, 'https://hooks.example.com/tries');
    const tried = await deliveryOf(hook);
    const waiting = await deliveryOf(hook);
    await ctx.sql`insert into webhook_delivery_attempts (delivery_id, attempt, started_at, duration_ms, status_code, error)
      values (${tried}, 1, '2026-11-26T09:05:00Z', 120, 500, 'answered 500: Interner Fehler beim Empfänger'),
             (${tried}, 2, '2026-11-26T09:06:00Z', 3005, null, 'connect ECONNREFUSED'),
             (${tried}, 3, '2026-11-26T09:08:00Z', 42, 410, null)`;
    await ctx.sql`update webhook_deliveries set status = 'failed', attempts = 3, last_status_code = 410,
      next_attempt_at = null where id = ${tried}`;
    const api = await ctx.request('GET', `/api/v1/webhooks/${hook}/deliveries/${tried}/attempts`);
    expect(api.body.items.map((a: { attempt: number }) => a.attempt)).toEqual([1, 2, 3]);

    const admin = await signedIn((await createApiKey(ctx, org.id, 'admin')).key);
    const list = (await admin.get('/portal/webhooks')).text;
    const link = `/portal/webhooks/${hook}/deliveries/${tried}`;
    expect(rowText(list, `data-delivery="${tried}"`)).toContain('Versuche ansehen');
    expect(list).toContain(`href="${link}"`);

    const page = await admin.get(link);
    expect(page.status).toBe(200);
    expect(plain(page.text)).toContain('Zustellung webhook.test');
    expect(plain(page.text)).toContain('https://hooks.example.com/tries');
    expect(plain(page.text)).toContain('fehlgeschlagen');
    expect(plain(page.text)).toContain('Versuche (erster zuerst)');
    expect(rowText(page.text, 'data-attempt="1"')).toBe(
      '1 26.11.2026, 09:05 UTC HTTP 500 : answered 500: Interner Fehler beim Empfänger 120 ms',
    );
    expect(rowText(page.text, 'data-attempt="2"')).toBe('2 26.11.2026, 09:06 UTC connect ECONNREFUSED 3.005 ms');
    expect(rowText(page.text, 'data-attempt="3"')).toBe('3 26.11.2026, 09:08 UTC HTTP 410 42 ms');
    expect(page.text).toContain('href="/portal/webhooks"');
    // A delivery not yet tried says so, with its next attempt.
    const none = await admin.get(`/portal/webhooks/${hook}/deliveries/${waiting}`);
    expect(none.status).toBe(200);
    expect(plain(none.text)).toContain('Noch kein Versuch');
    expect(plain(none.text)).toContain('Nächster Versuch');
    expect(none.text).not.toContain('data-attempt=');

    // In English: the same rows, the language's numbers and times.
    const english = await signedIn((await createApiKey(ctx, org.id, 'admin')).key, 'en');
    const en = await english.get(link);
    expect(en.status).toBe(200);
    expect(en.text).toContain('<html lang="en">');
    expect(plain(en.text)).toContain('Delivery webhook.test');
    expect(plain(en.text)).toContain('Attempts (oldest first)');
    expect(plain(en.text)).toContain('HTTP status or error');
    expect(rowText(en.text, 'data-attempt="2"')).toBe('2 26 Nov 2026, 09:06 UTC connect ECONNREFUSED 3,005 ms');
    expect(plain((await english.get('/portal/webhooks')).text)).toContain('View attempts');
    expect(plain((await english.get(`/portal/webhooks/${hook}/deliveries/${waiting}`)).text)).toContain(
      'No attempt yet',
    );

    // Another organization's webhook and delivery: not found, whichever of the two ids is foreign.
    const other = await createOrganization(ctx);
    const theirs = await hookWith(other.id, 'https://hooks.example.com/theirs');
    const theirDelivery = await deliveryOf(theirs);
    for (const path of [
      `/portal/webhooks/${theirs}/deliveries/${theirDelivery}`,
      `/portal/webhooks/${hook}/deliveries/${theirDelivery}`,
      `/portal/webhooks/${theirs}/deliveries/${tried}`,
      `/portal/webhooks/${hook}/deliveries/${crypto.randomUUID()}`,
      `/portal/webhooks/${hook}/deliveries/not-an-id`,
    ]) {
      const res = await admin.get(path);
      expect(res.status, path).toBe(404);
      expect(res.text).not.toContain('theirs');
    }
    // A delivery of another webhook of the same organization is not this webhook's.
    const second = await hookWith(org.id, 'https://hooks.example.com/second');
    expect((await admin.get(`/portal/webhooks/${second}/deliveries/${tried}`)).status).toBe(404);

    // A viewer reads no webhooks: neither the list nor a delivery's attempts.
    const viewer = await signedIn((await createApiKey(ctx, org.id, 'viewer')).key);
    expect((await viewer.get('/portal/webhooks')).status).toBe(403);
    const refused = await viewer.get(link);
    expect(refused.status).toBe(403);
    expect(refused.text).not.toContain('ECONNREFUSED');
  });

  it("counts attempts in the singular and plural, shows the backlog, and keeps a refused form's URL and events", async () => {
    const org = await createOrganization(ctx);
    const once = await hookWith(org.id, 'https://hooks.example.com/once');
    const backlog = await hookWith(org.id, 'https://hooks.example.com/backlog');
    expect((await ctx.request('POST', `/api/v1/webhooks/${once}/test`)).status).toBe(202);
    await ctx.sql`update webhook_deliveries set attempts = 1, last_error = 'connect ECONNREFUSED' where webhook_id = ${once}`;
    for (let i = 0; i < 4; i++)
      expect((await ctx.request('POST', `/api/v1/webhooks/${backlog}/test`)).status).toBe(202);
    // One delivered, one given up: neither is pending; two wait, attempted twice.
    await ctx.sql`update webhook_deliveries set attempts = 2, last_error = 'answered 503' where webhook_id = ${backlog}`;
    const [first, second] = await ctx.sql<{ id: string }[]>`
      select id from webhook_deliveries where webhook_id = ${backlog} order by seq limit 2`;
    await ctx.sql`update webhook_deliveries set status = 'delivered', delivered_at = now(), next_attempt_at = null
      where id = ${first!.id}`;
    await ctx.sql`update webhook_deliveries set status = 'failed', next_attempt_at = null where id = ${second!.id}`;
    const listed = await ctx.request('GET', `/api/v1/organizations/${org.id}/webhooks`);
    expect(
      Object.fromEntries(
        listed.body.items.map((w: { id: string; pending_deliveries: number }) => [w.id, w.pending_deliveries]),
      ),
    ).toEqual({ [once]: 1, [backlog]: 2 });

    const german = await signedIn((await createApiKey(ctx, org.id, 'admin')).key);
    const page = await german.get('/portal/webhooks');
    expect(plain(section(page.text, once))).toContain('Zustellung schlägt fehl: 1 Versuch, wird wiederholt');
    expect(plain(section(page.text, backlog))).toContain('Zustellung schlägt fehl: 2 Versuche, wird wiederholt');
    expect(section(page.text, once)).toContain('data-field="pending-deliveries" data-value="1"');
    expect(section(page.text, backlog)).toContain('data-field="pending-deliveries" data-value="2"');
    expect(plain(section(page.text, backlog))).toContain(
      'Ausstehende Zustellungen (weder zugestellt noch aufgegeben): 2',
    );
    const english = await signedIn((await createApiKey(ctx, org.id, 'admin')).key, 'en');
    const en = await english.get('/portal/webhooks');
    expect(plain(section(en.text, once))).toContain('delivery failing: 1 attempt, being retried');
    expect(plain(section(en.text, backlog))).toContain('delivery failing: 2 attempts, being retried');
    expect(plain(section(en.text, backlog))).toContain('Pending deliveries (neither delivered nor given up): 2');

    // A URL the policy refuses: the page again with the reason, the URL and the ticked events kept; nothing made.
    const refused = await german.request('POST', '/portal/webhooks', {
      _csrf: PortalClient.csrf(page.text),
      url: 'http://hooks.example.com/plain',
      'event:device.archived': 'on',
      'event:rollout.paused': 'on',
    });
    expect(refused.status).toBe(400);
    expect(refused.text).toContain('class="flash error"');
    expect(refused.text).toMatch(
      /<input id="url" name="url" type="url" required="" maxlength="2048" value="http:\/\/hooks\.example\.com\/plain"/,
    );
    const ticked = [...refused.text.matchAll(/name="event:([a-z_.]+)" value="on" checked=""/g)].map((m) => m[1]);
    expect(ticked).toEqual(['device.archived', 'rollout.paused']);
    // No event ticked: refused as well, the URL kept.
    const none = await german.request('POST', '/portal/webhooks', {
      _csrf: PortalClient.csrf(page.text),
      url: 'https://hooks.example.com/none',
    });
    expect(none.status).toBe(400);
    expect(none.text).toContain('value="https://hooks.example.com/none"');
    expect(none.text).not.toContain('checked=""');
    expect(await ctx.sql`select 1 from webhooks where organization_id = ${org.id}`).toHaveLength(2);
  });

  it('creates, tests and deletes in English; the German pages keep their words', async () => {
    const org = await createOrganization(ctx);
    const english = await signedIn((await createApiKey(ctx, org.id, 'admin')).key, 'en');
    let page = await english.get('/portal/webhooks');
    expect(page.status).toBe(200);
    for (const words of ['New webhook', 'Create webhook', 'No webhooks yet: create the first one above.'])
      expect(plain(page.text)).toContain(words);
    const created = await english.request('POST', '/portal/webhooks', {
      _csrf: PortalClient.csrf(page.text),
      url: 'https://hooks.example.com/en',
      'event:device.activated': 'on',
    });
    expect(created.status).toBe(201);
    expect(plain(created.text)).toContain(
      'The webhook for https://hooks.example.com/en was created. Copy the signing secret now: it is shown this one time only . Every delivery carries the header Fleet-Signature , an HMAC-SHA256 with this secret.',
    );
    expect(created.text).toContain('<strong>it is shown this one time only</strong>. Every delivery');
    const [hook] = await ctx.sql<{ id: string }[]>`select id from webhooks where organization_id = ${org.id}`;
    page = await english.get('/portal/webhooks');
    expect(plain(page.text)).toContain('active, no deliveries yet');
    expect(plain(page.text)).toContain('Last deliveries (at most 5, newest first)');
    await english.request('POST', `/portal/webhooks/${hook!.id}/test`, { _csrf: PortalClient.csrf(page.text) });
    page = await english.get('/portal/webhooks');
    expect(plain(page.text)).toContain('Test event queued');
    expect(plain(page.text)).toContain('active, delivery waiting');
    expect(rowText(page.text, 'data-delivery=')).toContain('waiting');
    const confirm = await english.get(`/portal/webhooks/${hook!.id}/delete`);
    expect(plain(confirm.text)).toContain(
      'Delete the webhook for https://hooks.example.com/en with its deliveries? Nothing more will be sent to it.',
    );
    await english.request('POST', `/portal/webhooks/${hook!.id}/delete`, { _csrf: PortalClient.csrf(confirm.text) });
    expect(plain((await english.get('/portal/webhooks')).text)).toContain('Webhook deleted.');

    // German, unchanged: the created page's words and markup.
    const german = await signedIn((await createApiKey(ctx, org.id, 'admin')).key);
    const form = await german.get('/portal/webhooks');
    const de = await german.request('POST', '/portal/webhooks', {
      _csrf: PortalClient.csrf(form.text),
      url: 'https://hooks.example.com/de',
      'event:device.activated': 'on',
    });
    expect(de.status).toBe(201);
    expect(de.text).toContain(
      '<p>Der Webhook für <code>https://hooks.example.com/de</code> wurde angelegt. Kopieren Sie das Signatur-Geheimnis jetzt: <strong>es wird nur dieses eine Mal angezeigt</strong>. Jede Zustellung trägt den Header <code>Fleet-Signature</code>, ein HMAC-SHA256 mit diesem Geheimnis.</p>',
    );
    expect(plain((await german.get('/portal/webhooks')).text)).toContain('aktiv, noch keine Zustellung');
  });
});

describe('the audit page', () => {
  /** The seqs of the page's rows, in the order shown. */
  const seqs = (html: string) => [...html.matchAll(/<tr data-seq="(\d+)"/g)].map((m) => Number(m[1]));
  const href = (html: string, label: string) => {
    const m = new RegExp(`<a href="([^"]+)">${label}</a>`).exec(html);
    return m ? m[1]!.replace(/&amp;/g, '&') : null;
  };

  it('pages forward and back through every row exactly once, and filters by action and by target', async () => {
    const org = await createOrganization(ctx);
    const unit = await insertOrgUnit(ctx.sql, org.id, 'Chemie');
    const other = await insertOrgUnit(ctx.sql, org.id, 'Biologie');
    const actor = { type: 'api_key', api_key_id: crypto.randomUUID(), name: 'Skript' };
    // 130 rows: every third about the unit "Chemie", the rest about "Biologie".
    for (let i = 0; i < 130; i++) {
      await ctx.sql`insert into audit_events (organization_id, actor, action, target_type, target_id, request_id)
        values (${org.id}, ${ctx.sql.json(actor)}, ${i % 3 === 0 ? 'org_unit.update' : 'org_unit.create'}, 'org_unit',
                ${i % 3 === 0 ? unit : other}, ${`r${i}`})`;
    }
    const admin = await signedIn((await createApiKey(ctx, org.id, 'admin')).key);
    const all = (await ctx.sql`select seq from audit_events where organization_id = ${org.id} order by seq desc`).map(
      (r) => Number(r.seq),
    );
    expect(all).toHaveLength(132); // and the organization's and the admin key's creation

    const visit = async (path: string) => {
      const page = await admin.get(path);
      expect(page.status, path).toBe(200);
      return page.text;
    };
    // Forward: the newest first, each row once, no previous link on the first page.
    let html = await visit('/portal/audit');
    expect(href(html, '← Neuere')).toBeNull();
    const forward: number[][] = [seqs(html)];
    for (let next = href(html, 'Ältere →'); next !== null; next = href(html, 'Ältere →')) {
      html = await visit(next);
      forward.push(seqs(html));
    }
    expect(forward.flat()).toEqual(all);
    expect(forward.map((p) => p.length)).toEqual([50, 50, 32]);
    // Back from the last page: the same pages in reverse, up to the first.
    const back: number[][] = [seqs(html)];
    for (let previous = href(html, '← Neuere'); previous !== null; previous = href(html, '← Neuere')) {
      html = await visit(previous);
      back.push(seqs(html));
    }
    expect(back.reverse()).toEqual(forward);
    expect(href(await visit(`/portal/audit?before=${forward[0]!.at(-1)}`), '« Neueste')).toBe('/portal/audit');

    // Targets by name, each with a link to its page and one to its own rows.
    expect(html).toContain(`<a href="/portal/org-units/${unit}">Chemie</a>`);
    expect(html).toContain(`<a href="/portal/org-units/${other}">Biologie</a>`);
    expect(plain(html)).not.toContain(unit.slice(0, 8) + ' ');

    // By action, then by target: only those rows, and the paging keeps the filter.
    const rowsOf = async (where: 'update' | 'other') =>
      (
        await ctx.sql`select seq from audit_events where organization_id = ${org.id}
          and ${where === 'update' ? ctx.sql`action = 'org_unit.update'` : ctx.sql`target_id = ${other}`}
          order by seq desc`
      ).map((r) => Number(r.seq));
    html = await visit('/portal/audit?action=org_unit.update');
    expect(seqs(html)).toEqual(await rowsOf('update'));
    expect(seqs(html)).toHaveLength(44);
    html = await visit(`/portal/audit?target=${other}`);
    expect(seqs(html)).toEqual((await rowsOf('other')).slice(0, 50));
    expect(plain(html)).toContain('Nur Einträge zu Biologie.');
    expect(href(html, 'Ältere →')).toMatch(new RegExp(`^/portal/audit\\?target=${other}&before=\\d+$`));
    // An unknown action is no filter; a malformed target says so and filters nothing.
    expect(seqs(await visit('/portal/audit?action=nope')).length).toBe(50);
    expect(plain(await visit('/portal/audit?target=xyz'))).toContain('keine gültige ID');
  });

  it('a deleted target goes by the name its event recorded; a viewer is offered no audit page and gets 403', async () => {
    const org = await createOrganization(ctx);
    const adminKey = await createApiKey(ctx, org.id, 'admin', { name: 'Admin' });
    const created = await ctx.request('POST', `/api/v1/organizations/${org.id}/groups`, {
      body: { name: 'Weg-Gruppe' },
      token: adminKey.key,
    });
    expect(created.status).toBe(201);
    expect((await ctx.request('DELETE', `/api/v1/groups/${created.body.id}`, { token: adminKey.key })).status).toBe(
      204,
    );
    const admin = await signedIn(adminKey.key);
    const html = (await admin.get('/portal/audit')).text;
    const cell = plain(/data-field="target">([\s\S]*?)<\/td>/.exec(html)![1]!);
    expect(cell).toContain('Gruppe Weg-Gruppe (gelöscht)');
    const viewer = await signedIn((await createApiKey(ctx, org.id, 'viewer')).key);
    const overview = await viewer.get('/portal/devices');
    expect(overview.text).not.toContain('href="/portal/audit"');
    expect((await viewer.get('/portal/audit')).status).toBe(403);
  });

  it("filters by the target's kind, with the action and target filters and across pages; a viewer is refused", async () => {
    const org = await createOrganization(ctx);
    const unit = await insertOrgUnit(ctx.sql, org.id, 'Chemie');
    const group = await ctx.request('POST', `/api/v1/organizations/${org.id}/groups`, { body: { name: 'Labor' } });
    expect(group.status).toBe(201);
    const actor = { type: 'api_key', api_key_id: crypto.randomUUID(), name: 'Skript' };
    // 120 rows: alternately about the unit and about the group.
    for (let i = 0; i < 120; i++) {
      const [type, id] = i % 2 === 0 ? ['org_unit', unit] : ['group', group.body.id as string];
      await ctx.sql`insert into audit_events (organization_id, actor, action, target_type, target_id, request_id)
        values (${org.id}, ${ctx.sql.json(actor)}, ${i % 4 < 2 ? `${type}.update` : `${type}.create`}, ${type},
                ${id}, ${`r${i}`})`;
    }
    const admin = await signedIn((await createApiKey(ctx, org.id, 'admin')).key);
    const seqsOf = async (where: ReturnType<typeof ctx.sql>) =>
      (
        await ctx.sql`select seq from audit_events where organization_id = ${org.id} and ${where} order by seq desc`
      ).map((r) => Number(r.seq));
    /** Forward from a page through every older one: the seqs of each page and the links followed. */
    const walk = async (start: string) => {
      const pages: number[][] = [];
      const links: string[] = [start];
      let html = (await admin.get(start)).text;
      pages.push(seqs(html));
      for (let next = href(html, 'Ältere →'); next !== null; next = href(html, 'Ältere →')) {
        links.push(next);
        html = (await admin.get(next)).text;
        pages.push(seqs(html));
      }
      return { pages, links, html };
    };

    // The select offers every kind, by its name, the chosen one selected.
    let html = (await admin.get('/portal/audit?target_type=group')).text;
    expect(html).toContain('<label for="target_type">Art des Ziels</label>');
    expect(html).toMatch(/<option value="group" selected="">Gruppe<\/option>/);
    expect(html).toContain('<option value="org_unit">Organisationseinheit</option>');
    expect(html).toContain('<option value="api_key">API-Schlüssel</option>');

    // By kind: only those rows, every one once across the pages, the links keeping the filter.
    let walked = await walk('/portal/audit?target_type=group');
    expect(walked.pages.flat()).toEqual(await seqsOf(ctx.sql`target_type = 'group'`));
    expect(walked.pages.map((p) => p.length)).toEqual([50, 11]); // and the group's creation through the API
    expect(walked.links.slice(1).every((l) => /^\/portal\/audit\?target_type=group&before=\d+$/.test(l))).toBe(true);
    expect(href(walked.html, '← Neuere')).toMatch(/^\/portal\/audit\?target_type=group&after=\d+$/);
    // With the action: both hold.
    walked = await walk('/portal/audit?action=org_unit.update&target_type=org_unit');
    expect(walked.pages.flat()).toEqual(await seqsOf(ctx.sql`action = 'org_unit.update'`));
    expect(walked.pages.flat()).toHaveLength(30);
    expect(seqs((await admin.get('/portal/audit?action=org_unit.update&target_type=group')).text)).toEqual([]);
    // With the target: both hold; the "only this target" links keep the kind.
    html = (await admin.get(`/portal/audit?target_type=org_unit&target=${unit}`)).text;
    expect(seqs(html)).toEqual((await seqsOf(ctx.sql`target_id = ${unit}`)).slice(0, 50));
    expect(plain(html)).toContain('Nur Einträge zu Chemie.');
    expect(seqs((await admin.get(`/portal/audit?target_type=group&target=${unit}`)).text)).toEqual([]);
    html = (await admin.get('/portal/audit?target_type=group')).text;
    expect(html.replace(/&amp;/g, '&')).toContain(`/portal/audit?target_type=group&target=${group.body.id}`);
    // An unknown kind is no filter.
    expect(seqs((await admin.get('/portal/audit?target_type=nope')).text)).toHaveLength(50);

    // In English: the same rows, the kinds and the paging in English.
    const english = await signedIn((await createApiKey(ctx, org.id, 'admin')).key, 'en');
    const en = (await english.get('/portal/audit?target_type=group')).text;
    expect(seqs(en)).toEqual(seqs(html));
    for (const words of ['Audit log', 'Target type', 'Clear filters', 'Older →', 'this target only'])
      expect(plain(en)).toContain(words);
    expect(en).toMatch(/<option value="group" selected="">Group<\/option>/);
    expect(en).toContain('<option value="org_unit">Org unit</option>');
    expect(rowText(en, 'data-seq=')).toContain('Group Labor');
    expect(en).toContain('aria-label="Pages"');
    const enNone = (await english.get('/portal/audit?target_type=webhook')).text;
    expect(plain(enNone)).toContain('No entries for this selection.');
    expect(plain((await english.get('/portal/audit?target=xyz')).text)).toContain('not a valid ID');

    // A viewer reads no audit log, filtered or not.
    const viewer = await signedIn((await createApiKey(ctx, org.id, 'viewer')).key);
    expect((await viewer.get('/portal/audit?target_type=group')).status).toBe(403);
  });
});

describe('the header', () => {
  it('names the open organization, and the operator switches to another from it', async () => {
    const first = await createOrganization(ctx);
    const second = await createOrganization(ctx);
    const [a, b] = await ctx.sql<{ name: string }[]>`
      select name from organizations where id in (${first.id}, ${second.id}) order by id = ${first.id} desc`;
    const operator = new PortalClient(ctx.app, '10.4.1.1');
    expect((await operator.signIn(ADMIN_TOKEN)).location).toBe('/portal/organization');
    const choose = async (id: string) => {
      const page = await operator.get('/portal/organization');
      return operator.request('POST', '/portal/organization', {
        _csrf: PortalClient.csrf(page.text),
        organization_id: id,
      });
    };
    expect((await choose(first.id)).location).toBe('/portal/devices');
    let page = await operator.get('/portal/devices');
    expect(plain(page.text)).toContain(`Betreiber · Organisation: ${a!.name}`);
    expect(page.text).toContain('<a href="/portal/organization">Organisation wechseln</a>');
    // The choice lists every organization, the open one selected.
    const list = (await operator.get('/portal/organization')).text;
    expect(list).toContain(`<option value="${first.id}" selected="">`);
    expect(list).toContain(`<option value="${second.id}">`);
    await choose(second.id);
    page = await operator.get('/portal/devices');
    expect(plain(page.text)).toContain(`Organisation: ${b!.name}`);

    // An organization key's session names its organization too, and offers no switch.
    const admin = await signedIn((await createApiKey(ctx, first.id, 'admin', { name: 'Kim' })).key);
    const own = (await admin.get('/portal/devices')).text;
    expect(plain(own)).toContain(`Kim (Admin) · Organisation: ${a!.name}`);
    expect(own).not.toContain('Organisation wechseln');
  });
});

describe('what a viewer is offered', () => {
  it('every link a viewer can reach from the overview opens (none answers 403); the pages it may not read are refused', async () => {
    const org = await createOrganization(ctx);
    const unit = await insertOrgUnit(ctx.sql, org.id, 'Mathematik');
    const agent = await enrollAgent(ctx, { organizationId: org.id, serial: `VW-${crypto.randomUUID().slice(0, 6)}` });
    await checkin(ctx, agent.secret, { hardware: agentHardware, agent_version: '1.0' });
    await report(ctx, agent.secret, [{ merkmal: 'firefox', event: 'applied' }]);
    const group = await ctx.request('POST', `/api/v1/organizations/${org.id}/groups`, { body: { name: 'Lehrkräfte' } });
    await ctx.request('PUT', `/api/v1/groups/${group.body.id}/devices/${agent.device_id}`);
    await ctx.request('PUT', `/api/v1/devices/${agent.device_id}/org-unit`, { body: { oe_id: unit } });
    await ctx.request('POST', `/api/v1/organizations/${org.id}/iso-builds`, { body: {} });
    await ctx.request('POST', `/api/v1/organizations/${org.id}/webhooks`, {
      body: { url: 'https://hooks.example.com/v', events: ['device.activated'] },
    });
    const viewer = await signedIn((await createApiKey(ctx, org.id, 'viewer')).key);

    const seen = new Map<string, number>();
    const queue = ['/portal'];
    while (queue.length > 0 && seen.size < 80) {
      const path = queue.shift()!;
      if (seen.has(path)) continue;
      const page = await viewer.get(path);
      seen.set(path, page.status);
      for (const m of page.text.matchAll(/href="(\/portal[^"#]*)"/g)) {
        const link = m[1]!.replace(/&amp;/g, '&');
        if (link === '/portal/style.css' || link.startsWith('/portal/language/') || seen.has(link)) continue;
        // Every page once, and the paged lists' cursors only once each.
        if (
          /[?&](cursor|before|after)=/.test(link) &&
          [...seen.keys()].some((s) => s.split('?')[0] === link.split('?')[0] && /[?&](cursor|before|after)=/.test(s))
        )
          continue;
        queue.push(link);
      }
    }
    const refused = [...seen].filter(([, status]) => status !== 200);
    expect(refused).toEqual([]);
    // The org unit's and the group's pages are read as the API lets a viewer read their catalogs.
    for (const path of [
      '/portal',
      '/portal/devices',
      `/portal/devices/${agent.device_id}`,
      '/portal/iso-builds',
      `/portal/groups/${group.body.id}`,
      `/portal/org-units/${unit}`,
    ]) {
      expect(seen.get(path), path).toBe(200);
    }
    for (const path of ['/portal/audit', '/portal/webhooks', '/portal/api-keys', '/portal/enrollment-sessions']) {
      expect(seen.has(path), `${path} is offered to a viewer`).toBe(false);
      expect((await viewer.get(path)).status, path).toBe(403);
    }
  });
});

describe('the ISO builds page', () => {
  it('shows source, size, SHA-256 and expiry, and marks a development image before its download', async () => {
    const org = await createOrganization(ctx);
    const [template] = await ctx.sql<
      { id: string; name: string }[]
    >`select id, name from templates order by name limit 1`;
    const session = await ctx.request('POST', `/api/v1/organizations/${org.id}/enrollment-sessions`, {
      body: { template_id: template!.id, max_devices: 5, expires_at: '2099-01-01T00:00:00Z' },
    });
    expect(session.status, JSON.stringify(session.body)).toBe(201);
    const sessionId = session.body.id as string;
    const sha = 'ab'.repeat(32);
    const [dev] = await ctx.sql<{ id: string }[]>`
      insert into iso_builds (organization_id, status, progress, started_at, finished_at, expires_at, size_bytes,
                              sha256, file_name, template_id, enrollment_session_id, development_base)
      values (${org.id}, 'completed', 100, now(), now(), now() + interval '7 days', 681574400, ${sha}, 'x.iso',
              ${template!.id}, ${sessionId}, true)
      returning id`;
    const [real] = await ctx.sql<{ id: string }[]>`
      insert into iso_builds (organization_id, status, template_id) values (${org.id}, 'running', null) returning id`;

    const admin = await signedIn((await createApiKey(ctx, org.id, 'admin')).key);
    const html = (await admin.get('/portal/iso-builds')).text;
    const row = new RegExp(`<tr data-build="${dev!.id}"[^>]*>([\\s\\S]*?)</tr>`).exec(html)![0];
    expect(row).toContain('data-development-base="true"');
    expect(plain(row)).toContain(`Enrollment-Session ${sessionId.slice(0, 8)}… (Template ${template!.name})`);
    expect(row).not.toContain(sessionId);
    expect(plain(row)).toContain('681,6 MB');
    expect(row).toContain(sha);
    expect(plain(row)).toMatch(/\d\d\.\d\d\.\d{4}, \d\d:\d\d UTC/);
    // The mark stands before the link, and the link says what it downloads.
    const download = /data-field="download">([\s\S]*?)<\/td>/.exec(row)![1]!;
    expect(download.indexOf('NICHT bootfähig')).toBeGreaterThan(-1);
    expect(download.indexOf('NICHT bootfähig')).toBeLessThan(download.indexOf('href='));
    expect(plain(download)).toContain('Test-ISO herunterladen (bootet nicht)');
    const running = new RegExp(`<tr data-build="${real!.id}"[^>]*>([\\s\\S]*?)</tr>`).exec(html)![0];
    expect(plain(running)).toContain('Aktivierungscode der Organisation (Standard-Template)');
    expect(running).not.toContain('bootfähig');
    const api = await ctx.request('GET', `/api/v1/iso-builds/${dev!.id}`);
    expect(api.body.development_base).toBe(true);

    // A viewer sees the same row without the session's id and without a download.
    const viewer = await signedIn((await createApiKey(ctx, org.id, 'viewer')).key);
    const seen = (await viewer.get('/portal/iso-builds')).text;
    expect(seen).not.toContain(sessionId.slice(0, 8));
    expect(seen).not.toContain('/download');
    expect(plain(seen)).toContain('NICHT bootfähig');

    // In English: the same row in English words and numbers, the mark still before the link.
    const english = await signedIn((await createApiKey(ctx, org.id, 'admin')).key, 'en');
    const page = (await english.get('/portal/iso-builds')).text;
    expect(page).toContain('<html lang="en">');
    for (const words of ['ISO builds', 'Build a new ISO', 'Wi-Fi (optional)', 'Network name (SSID)', 'Build ISO'])
      expect(plain(page)).toContain(words);
    expect(plain(page)).toContain(`Template ${template!.name} (the organization’s activation code)`);
    expect(plain(page)).toMatch(new RegExp(`Enrollment session ${sessionId.slice(0, 8)} \\(${template!.name}, 0/5\\)`));
    expect(plain(page)).toContain('This page refreshes every 2 seconds until all builds are done.');
    const enRow = new RegExp(`<tr data-build="${dev!.id}"[^>]*>([\\s\\S]*?)</tr>`).exec(page)![0];
    expect(plain(enRow)).toContain(`Enrollment session ${sessionId.slice(0, 8)}… (Template ${template!.name})`);
    expect(plain(enRow)).toContain('681.6 MB');
    expect(plain(enRow)).toContain('100% 100%');
    expect(plain(enRow)).toContain('done');
    expect(plain(enRow)).toMatch(/\d\d? [A-Z][a-z]{2} \d{4}, \d\d:\d\d UTC/);
    const enDownload = /data-field="download">([\s\S]*?)<\/td>/.exec(enRow)![1]!;
    expect(enDownload.indexOf('NOT bootable')).toBeGreaterThan(-1);
    expect(enDownload.indexOf('NOT bootable')).toBeLessThan(enDownload.indexOf('href='));
    expect(plain(enDownload)).toContain('Download test ISO (does not boot)');
    const enRunning = new RegExp(`<tr data-build="${real!.id}"[^>]*>([\\s\\S]*?)</tr>`).exec(page)![0];
    expect(plain(enRunning)).toContain('The organization’s activation code (Default template)');
    expect(plain(enRunning)).toContain('running');
    // The German row is as before, down to the size's decimal comma.
    expect(row).toContain('aria-label="Fortschritt 100 %"');
    expect(plain(row)).toContain('100 % 100 % fertig 681,6 MB');
    expect(enRow).toContain('aria-label="Progress 100%"');
    expect(plain(html)).toContain('Diese Seite aktualisiert sich alle 2 Sekunden, bis alle Builds fertig sind.');
    expect(plain(running)).toContain('läuft');
    const englishViewer = await signedIn((await createApiKey(ctx, org.id, 'viewer')).key, 'en');
    const viewed = plain((await englishViewer.get('/portal/iso-builds')).text);
    expect(viewed).toContain('admins only');
    expect(viewed).not.toContain('Build a new ISO');
  });

  it('starts a build from the form in English, with the flash in English; an empty list says so in either language', async () => {
    const org = await createOrganization(ctx);
    const [template] = await ctx.sql<{ id: string }[]>`select id from templates order by name limit 1`;
    const english = await signedIn((await createApiKey(ctx, org.id, 'admin')).key, 'en');
    const empty = await english.get('/portal/iso-builds');
    expect(plain(empty.text)).toContain('No ISO builds yet: build the first installer ISO above.');
    const started = await english.request('POST', '/portal/iso-builds', {
      _csrf: PortalClient.csrf(empty.text),
      source: `template:${template!.id}`,
    });
    expect(started.status).toBe(303);
    const after = plain((await english.get('/portal/iso-builds')).text);
    expect(after).toContain('ISO build started.');
    expect(after).toMatch(/0% 0%|waiting/);

    const germanViewer = await signedIn((await createApiKey(ctx, (await createOrganization(ctx)).id, 'viewer')).key);
    expect(plain((await germanViewer.get('/portal/iso-builds')).text)).toContain('Noch keine ISO-Builds.');
    const german = await signedIn((await createApiKey(ctx, org.id, 'admin')).key);
    const form = await german.get('/portal/iso-builds');
    await german.request('POST', '/portal/iso-builds', {
      _csrf: PortalClient.csrf(form.text),
      source: `template:${template!.id}`,
    });
    expect(plain((await german.get('/portal/iso-builds')).text)).toContain('ISO-Build gestartet.');
  });
});
