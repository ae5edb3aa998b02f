/**
 * An org unit means its subtree in the portal too (CONTRACT §26): the org units page shows
 * each unit's devices directly and with the units below, in German and English.
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

describe('the org units page', () => {
  it('shows the devices directly in each unit and with the units below, in German and English', async () => {
    const f = await fleet();
    const row = (html: string, name: string) => {
      const m = new RegExp(`${name}</td>\\s*<td>(\\d+)</td>\\s*<td>\\s*<a href="([^"]+)">(\\d+)</a>`).exec(html);
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
