/**
 * An org unit means its subtree in the portal too (CONTRACT §26): the device list filtered
 * by a parent unit shows its child's and grandchild's devices (archived ones not) and says
 * so in its filter's label, in German and English; a bulk action over that filter changes
 * exactly those devices; the org units page shows each unit's devices directly and with
 * the units below.
 */
import { describe, expect, it } from 'vitest';
import { createApiKey } from '../support/access.ts';
import { useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { insertDevice, insertOrgUnit } from '../support/devices.ts';
import { PortalClient } from '../support/portal_client.ts';

const ctx = useTestApp();

async function signedIn(key: string, language?: string) {
  const client = new PortalClient(ctx.app, `10.43.5.${Math.floor(Math.random() * 250) + 1}`, language);
  expect((await client.signIn(key)).status).toBe(303);
  return client;
}

/** A school, its class and the class's course with devices, one archived; a device beside them. */
async function fleet() {
  const org = await createOrganization(ctx);
  const school = await insertOrgUnit(ctx.sql, org.id, 'Schule Süd');
  const klasse = await insertOrgUnit(ctx.sql, org.id, 'Klasse 7b', school);
  const kurs = await insertOrgUnit(ctx.sql, org.id, 'Kurs Physik', klasse);
  const device = (oeId: string, serial: string, archived = false) =>
    insertDevice(ctx.sql, { organizationId: org.id, oeId, serial, archived });
  const inTree = [
    await device(school, 'PS-S1'),
    await device(klasse, 'PS-K1'),
    await device(klasse, 'PS-K2'),
    await device(kurs, 'PS-C1'),
  ];
  await device(kurs, 'PS-C2-ARCHIVED', true);
  const outside = await device(org.default_oe_id, 'PS-N1');
  const [group] = await ctx.sql<{ id: string }[]>`
    insert into groups (organization_id, name) values (${org.id}, 'Physikwagen') returning id`;
  const { key } = await createApiKey(ctx, org.id, 'admin');
  return { org, school, klasse, kurs, inTree, outside, group: group!.id, key };
}

const serialsOf = (html: string) => [...html.matchAll(/>(PS-[A-Z0-9-]+)</g)].map((m) => m[1]!);

describe('the device list filtered by an org unit', () => {
  it('shows the devices of the units below, in German and English, and says so', async () => {
    const f = await fleet();
    const german = await signedIn(f.key);
    const de = await german.get(`/portal/devices?oe_id=${f.school}&sort=serial`);
    expect(de.status).toBe(200);
    expect([...new Set(serialsOf(de.text))]).toEqual(['PS-C1', 'PS-K1', 'PS-K2', 'PS-S1']);
    expect(de.text).toContain('<label for="oe_id">Organisationseinheit (mit den Einheiten darunter)</label>');
    expect(de.text).toMatch(/data-field="total"><strong>4 Geräte<\/strong>/);

    const english = await signedIn(f.key, 'en');
    const en = await english.get(`/portal/devices?oe_id=${f.klasse}&sort=serial`);
    expect(en.status).toBe(200);
    expect([...new Set(serialsOf(en.text))]).toEqual(['PS-C1', 'PS-K1', 'PS-K2']);
    expect(en.text).toContain('<label for="oe_id">Org unit (with the units below it)</label>');
    expect(en.text).toMatch(/data-field="total"><strong>3 devices<\/strong>/);
  });

  it('a bulk action over the filter changes the devices of the whole subtree, no other', async () => {
    const f = await fleet();
    const admin = await signedIn(f.key);
    const confirm = await admin.get(
      `/portal/devices/bulk?oe_id=${f.school}&action=group-add&target_group=${f.group}&scope=filter`,
    );
    expect(confirm.status).toBe(200);
    expect(confirm.text).toContain('<strong data-field="count">4 Geräte</strong>');
    const main = confirm.text.slice(confirm.text.indexOf('<main>'));
    const form = /<form method="post" action="([^"]+)">([\s\S]*?)<\/form>/.exec(main)!;
    const fields: Record<string, string> = {};
    for (const m of form[2]!.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"/g)) {
      fields[m[1]!] = m[2]!.replaceAll('&amp;', '&');
    }
    const result = await admin.request('POST', form[1]!.replaceAll('&amp;', '&'), fields);
    expect(result.status).toBe(200);
    expect(result.text).toContain('<strong data-field="changed">4 Geräte</strong> geändert.');
    const members = await ctx.sql<{ device_id: string }[]>`
      select device_id from group_members where group_id = ${f.group} order by device_id`;
    expect(members.map((m) => m.device_id)).toEqual(f.inTree.map((d) => d.id).sort());
  });
});

describe('the org units page', () => {
  it('shows the devices directly in each unit and with the units below, in German and English', async () => {
    const f = await fleet();
    const row = (html: string, name: string) => {
      const m = new RegExp(`${name}(?:</a>)?</td>\\s*<td>(\\d+)</td>\\s*<td>\\s*<a href="([^"]+)">(\\d+)</a>`).exec(
        html,
      );
      expect(m, html.slice(html.indexOf('<table'), html.indexOf('</table>'))).not.toBeNull();
      return { devices: Number(m![1]), link: m![2]!, total: Number(m![3]) };
    };
    const german = (await (await signedIn(f.key)).get('/portal/org-units')).text;
    expect(german).toContain('<th scope="col">Geräte direkt</th>');
    expect(german).toContain('<th scope="col">Geräte mit Unter-Einheiten</th>');
    expect(row(german, 'Schule Süd')).toEqual({ devices: 1, link: `/portal/devices?oe_id=${f.school}`, total: 4 });
    expect(row(german, 'Klasse 7b')).toEqual({ devices: 2, link: `/portal/devices?oe_id=${f.klasse}`, total: 3 });
    expect(row(german, 'Kurs Physik')).toEqual({ devices: 1, link: `/portal/devices?oe_id=${f.kurs}`, total: 1 });

    const english = (await (await signedIn(f.key, 'en')).get('/portal/org-units')).text;
    expect(english).toContain('<th scope="col">Devices directly in it</th>');
    expect(english).toContain('<th scope="col">Devices with the units below</th>');
    expect(row(english, 'Schule Süd').total).toBe(4);
  });
});
