/**
 * The device pages in English (the crawl of languages.test.ts reaches the list and a device's
 * page; this also walks a filter, the select at the device and a lifecycle confirmation,
 * POST → 303 → GET), and the same pages in German unchanged.
 */
import { describe, expect, it } from 'vitest';
import { createApiKey } from '../support/access.ts';
import { checkin, enrollAgent, report } from '../support/agent.ts';
import { useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { insertOrgUnit } from '../support/devices.ts';
import { PortalClient } from '../support/portal_client.ts';

const ctx = useTestApp();

/** A device in the unit "Physics" with hardware, a failed report of firefox, and an admin's key. */
async function fleet() {
  const org = await createOrganization(ctx);
  const unit = await insertOrgUnit(ctx.sql, org.id, 'Physics');
  const serial = `EN-${crypto.randomUUID().slice(0, 6)}`;
  const agent = await enrollAgent(ctx, { organizationId: org.id, serial });
  await checkin(ctx, agent.secret, {
    hardware: { cpu: { cores: 4, model: 'Xeon' }, memory_mb: 8000, disks: [{ name: 'sda', size_gb: 512.25 }] },
    agent_version: '1.0',
  });
  await report(ctx, agent.secret, [{ merkmal: 'firefox', event: 'apply_failed', detail: { message: 'apt failed' } }]);
  await ctx.request('PUT', `/api/v1/devices/${agent.device_id}/org-unit`, { body: { oe_id: unit } });
  const admin = await createApiKey(ctx, org.id, 'admin', { name: 'Alex' });
  return { org, serial, device: agent.device_id, admin };
}

async function signedIn(key: string, language?: string) {
  const client = new PortalClient(ctx.app, `10.43.9.${Math.floor(Math.random() * 250) + 1}`, language);
  expect((await client.signIn(key)).status).toBe(303);
  return client;
}

/** The page's text without tags, its apostrophes and quotes unescaped, spaces collapsed. */
const plain = (html: string) =>
  html
    .replace(/<(script|style)[\s\S]*?<\/\1>/g, ' ')
    .replace(/<[^>]+>/g, ' ')
    .replace(/&#39;/g, "'")
    .replace(/&quot;/g, '"')
    .replace(/&amp;/g, '&')
    .replace(/\s+/g, ' ');

describe('the device pages in English', () => {
  it('the list with a filter, its empty state, and a catalog item filter', async () => {
    const f = await fleet();
    const en = await signedIn(f.admin.key, 'en');
    const list = await en.get(`/portal/devices?q=${f.serial}&sort=serial`);
    expect(list.status).toBe(200);
    const text = plain(list.text);
    expect(text).toContain('Search (serial number or hostname)');
    expect(text).toContain('1 device matches the filters');
    expect(text).toContain('Stale: no check-in for three poll intervals');
    expect(list.text).toContain('<option value="serial" selected="">serial number</option>');
    expect(list.text).toContain(`aria-label="Select ${f.serial}"`);
    expect(text).toMatch(/Serial number ▲/);
    // This page's own text (the bulk controls are device_bulk's; "Neue Geräte" is the protected unit's name, data).
    const own = plain(list.text.split('<fieldset class="bulk">')[0]!).replaceAll('Neue Geräte', '');
    expect(own).not.toMatch(/Gerät|Seriennummer|Umsetzung|alle\b|Filtern|veraltet/);

    const empty = plain((await en.get('/portal/devices?q=zzz')).text);
    expect(empty).toContain('0 devices match the filters');
    expect(empty).toContain('No devices match these filters. Reset filters');

    const byItem = await en.get('/portal/devices?convergence=failed&merkmal=firefox');
    expect(plain(byItem.text)).toContain(
      "Devices whose catalog item firefox is failed. Filter by the device's convergence only",
    );
    expect(byItem.text).toContain('<label for="convergence">Convergence of firefox</label>');
  });

  it("a device's page: details, catalog with its explanation, hardware and events; the select at the device with its flash", async () => {
    const f = await fleet();
    const en = await signedIn(f.admin.key, 'en');
    let page = await en.get(`/portal/devices/${f.device}`);
    expect(page.status).toBe(200);
    let text = plain(page.text);
    expect(text).toContain(`Device ${f.serial}`);
    expect(text).toContain('← All devices');
    for (const label of ['Serial number', 'Org unit', 'Last check-in', 'Catalog', 'Why?', 'Hardware', 'Events'])
      expect(text).toContain(label);
    expect(text).toContain('Workspace default:');
    expect(text).toContain('Device: no override of its own');
    expect(text).toContain('Xeon (4 cores)');
    expect(text).toContain('7.8 GiB');
    expect(text).toContain('sda · 512.3 GB');
    expect(text).toContain("apply failed Agent's report Device's agent apt failed");
    expect(text).toContain('Deprovision …');
    expect(page.text).toContain('aria-label="Firefox at the device: select"');
    expect(text).not.toMatch(/Gerät|Seriennummer|Ereignis|Herkunft|Warum|Vorgabe|Bericht|Prozessor|Kerne/);

    const done = await en.request('POST', `/portal/devices/${f.device}/catalog/firefox/deselect`, {
      _csrf: PortalClient.csrf(page.text),
      back: `/portal/devices/${f.device}`,
    });
    expect(done.status).toBe(303);
    page = await en.get(done.location!);
    text = plain(page.text);
    expect(text).toContain('firefox: deselected.');
    expect(text).toContain('deselected Override at the device Alex');
  });

  it('a lifecycle confirmation, its flash, and the way back', async () => {
    const f = await fleet();
    const en = await signedIn(f.admin.key, 'en');
    const confirm = await en.get(`/portal/devices/${f.device}/confirm/deprovision`);
    expect(confirm.status).toBe(200);
    expect(plain(confirm.text)).toContain(
      `Device ${f.serial} (no hostname): The device's agent is refused from then on (check-in and reports). Deprovision device Cancel`,
    );
    const done = await en.request('POST', `/portal/devices/${f.device}/deprovision`, {
      _csrf: PortalClient.csrf(confirm.text),
    });
    expect(done.status).toBe(303);
    const page = plain((await en.get(done.location!)).text);
    expect(page).toContain('Device deprovisioned.');
    expect(page).toContain('Reprovision … · Archive …');
    expect(plain((await en.get(`/portal/devices/${f.device}/confirm/archive`)).text)).toContain(
      'Archiving is final: the device disappears from the list and its agent is refused.',
    );
  });

  it('the same pages in German, as they were', async () => {
    const f = await fleet();
    const de = await signedIn(f.admin.key);
    const list = plain((await de.get(`/portal/devices?q=${f.serial}`)).text);
    expect(list).toContain('Suche (Seriennummer oder Hostname)');
    expect(list).toContain('1 Gerät passen zu den Filtern');
    expect(plain((await de.get('/portal/devices?convergence=failed&merkmal=firefox')).text)).toContain(
      'Geräte, deren Merkmal firefox fehlgeschlagen ist. Nur nach Umsetzung des Geräts filtern',
    );
    const page = await de.get(`/portal/devices/${f.device}`);
    const text = plain(page.text);
    expect(text).toContain(`Gerät ${f.serial}`);
    expect(text).toContain('Xeon (4 Kerne)');
    expect(text).toContain('7,8 GiB');
    expect(text).toContain('sda · 512,3 GB');
    expect(text).toContain('Anwenden fehlgeschlagen Bericht des Agenten Agent des Geräts apt failed');
    expect(text).toContain('Gerät: keine eigene Vorgabe');
    const confirm = await de.get(`/portal/devices/${f.device}/confirm/deprovision`);
    expect(plain(confirm.text)).toContain(
      `Gerät ${f.serial} (ohne Hostname): Der Agent des Geräts wird danach abgewiesen (Check-in und Berichte).`,
    );
    const done = await de.request('POST', `/portal/devices/${f.device}/deprovision`, {
      _csrf: PortalClient.csrf(confirm.text),
    });
    expect(plain((await de.get(done.location!)).text)).toContain('Gerät deprovisioniert.');
  });
});
