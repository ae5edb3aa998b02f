/**
 * Bulk actions of the portal's device list, over HTTP in-process: a confirmation names
 * how many devices change; a bulk move and a bulk selection over a filter change exactly
 * the devices the filter matches, with one audit event each and nothing else changed; a
 * device archived meanwhile is reported and the others go on; a viewer sees no bulk
 * control and a forged post is 403; a post without its CSRF token or naming another
 * organization's device changes nothing.
 */
import { describe, expect, it } from 'vitest';
import { createApiKey, databaseFingerprint } from '../support/access.ts';
import { useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { insertOrgUnit } from '../support/devices.ts';
import { PortalClient } from '../support/portal_client.ts';

const ctx = useTestApp();

async function signedIn(key: string) {
  const b = new PortalClient(ctx.app, `10.43.1.${Math.floor(Math.random() * 250) + 1}`);
  expect((await b.signIn(key)).status).toBe(303);
  return b;
}

/** 30 bootstrapped devices in unit A (serials BK-A-…), 10 in unit B, a group; admin and viewer sessions. */
async function fleet() {
  const org = await createOrganization(ctx);
  const a = await insertOrgUnit(ctx.sql, org.id, 'Grundschule');
  const b = await insertOrgUnit(ctx.sql, org.id, 'Gymnasium');
  const [group] = await ctx.sql<{ id: string }[]>`
    insert into groups (organization_id, name) values (${org.id}, 'Laptopwagen') returning id`;
  await ctx.sql`
    insert into devices (organization_id, serial, oe_id, agent_secret_hash, agent_secret_issued_at)
    select ${org.id}, format('BK-%s-%s', case when n <= 30 then 'A' else 'B' end, lpad(n::text, 3, '0')),
           case when n <= 30 then ${a}::uuid else ${b}::uuid end,
           sha256(convert_to(${org.id}::text || n::text, 'UTF8')), now() - interval '1 hour'
    from generate_series(1, 40) n`;
  const ids = async (prefix: string) =>
    (
      await ctx.sql<{ id: string }[]>`
        select id from devices where organization_id = ${org.id} and serial like ${`${prefix}%`} order by serial`
    ).map((r) => r.id);
  const admin = await signedIn((await createApiKey(ctx, org.id, 'admin')).key);
  const viewer = await signedIn((await createApiKey(ctx, org.id, 'viewer')).key);
  const csrf = async (client: PortalClient) => PortalClient.csrf((await client.get('/portal/devices')).text);
  return { org, a, b, group: group!.id, ids, admin, viewer, csrf };
}

function countOf(html: string): number {
  const m = /data-field="count">([\d.]+) Geräte?</.exec(html);
  expect(m, html.slice(0, 3000)).not.toBeNull();
  return Number(m![1]!.replaceAll('.', ''));
}

/** The form's action and hidden fields of the confirmation page. */
function confirmForm(html: string): { action: string; fields: Record<string, string> } {
  const form = /<form method="post" action="([^"]+)">([\s\S]*?)<\/form>/.exec(html.slice(html.indexOf('<main>')));
  expect(form, 'the confirmation form').not.toBeNull();
  const fields: Record<string, string> = {};
  for (const m of form![2]!.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"/g)) {
    fields[m[1]!] = m[2]!.replaceAll('&amp;', '&');
  }
  return { action: form![1]!.replaceAll('&amp;', '&'), fields };
}

async function auditRows(orgId: string, action: string) {
  return ctx.sql<{ target_type: string; target_id: string; details: Record<string, unknown> }[]>`
    select target_type, target_id, details from audit_events
    where organization_id = ${orgId} and action = ${action} order by target_id`;
}

describe('bulk actions on the device list', () => {
  it('moves every device of a filter: the count confirmed, each moved and audited once, nothing else changed', async () => {
    const f = await fleet();
    const list = await f.admin.get(`/portal/devices?oe_id=${f.a}`);
    expect(list.text).toContain('Auf alle 30 Geräte anwenden, die zu den Filtern passen');
    const confirm = await f.admin.get(`/portal/devices/bulk?oe_id=${f.a}&action=move&target_oe=${f.b}&scope=filter`);
    expect(confirm.status).toBe(200);
    expect(countOf(confirm.text)).toBe(30);
    expect(confirm.text).toContain('In die Organisationseinheit „Gymnasium“ verschieben');
    const { action, fields } = confirmForm(confirm.text);
    expect(action).toBe('/portal/devices/bulk/move');
    const moved = await f.ids('BK-A-');
    const others = await ctx.sql`select * from devices where id <> all(${moved}::uuid[]) order by id`;
    const movedBefore = await ctx.sql`select * from devices where id = any(${moved}::uuid[]) order by id`;
    const before = await databaseFingerprint(ctx.sql, { tables: ['devices', 'device_fleet', 'audit_events'] });
    const auditBefore = await ctx.sql`select count(*)::int as n from audit_events`;

    const result = await f.admin.request('POST', action, fields);
    expect(result.status).toBe(200);
    expect(result.text).toContain('<strong data-field="changed">30 Geräte</strong> geändert.');
    expect(result.text).not.toContain('data-field="failed"');

    const after = await ctx.sql`select * from devices where id = any(${moved}::uuid[]) order by id`;
    expect(after.map((d) => d.oe_id)).toEqual(moved.map(() => f.b));
    expect(after.map((d) => ({ ...d, oe_id: null }))).toEqual(movedBefore.map((d) => ({ ...d, oe_id: null })));
    expect(await ctx.sql`select * from devices where id <> all(${moved}::uuid[]) order by id`).toEqual(others);
    const audit = await auditRows(f.org.id, 'device.move');
    expect(audit.map((r) => r.target_id)).toEqual([...moved].sort());
    expect(audit.every((r) => r.target_type === 'device' && r.details.oe_id === f.b)).toBe(true);
    expect(await ctx.sql`select count(*)::int as n from audit_events`).toEqual([{ n: auditBefore[0]!.n + 30 }]);
    expect(await databaseFingerprint(ctx.sql, { tables: ['devices', 'device_fleet', 'audit_events'] })).toBe(before);
    // The fleet rows (kept by triggers for the fleet reads) follow the move.
    const fleetRows = await ctx.sql`select oe_id from device_fleet where device_id = any(${moved}::uuid[])`;
    expect(fleetRows.map((r) => r.oe_id)).toEqual(moved.map(() => f.b));
  });

  it('selects a Merkmal on every device of a filter: each device overridden and audited once, no other device', async () => {
    const f = await fleet();
    const chosen = (await f.ids('BK-A-0')).slice(0, 9); // BK-A-001 … BK-A-009
    const confirm = await f.admin.get('/portal/devices/bulk?q=BK-A-00&action=select&target_merkmal=qgis&scope=filter');
    expect(countOf(confirm.text)).toBe(9);
    const { action, fields } = confirmForm(confirm.text);
    expect(action).toBe('/portal/devices/bulk/catalog/qgis/select');
    // What a selection writes for its devices: the override, its version, event and outcome, the device's row.
    const ignoring = {
      tables: [
        'devices',
        'device_merkmale',
        'override_versions',
        'device_merkmal_events',
        'device_merkmal_outcomes',
        'device_fleet',
        'audit_events',
      ],
    };
    const before = await databaseFingerprint(ctx.sql, ignoring);
    const others = await ctx.sql`select * from devices where id <> all(${chosen}::uuid[]) order by id`;
    const outcomesBefore = await ctx.sql`select count(*)::int as n from device_merkmal_outcomes`;
    const result = await f.admin.request('POST', action, fields);
    expect(result.text).toContain('<strong data-field="changed">9 Geräte</strong> geändert.');
    const overrides = await ctx.sql<{ device_id: string; merkmal: string; state: string }[]>`
      select m.device_id, m.merkmal, m.state from device_merkmale m join devices d on d.id = m.device_id
      where d.organization_id = ${f.org.id} order by m.device_id`;
    expect(overrides).toEqual([...chosen].sort().map((id) => ({ device_id: id, merkmal: 'qgis', state: 'present' })));
    const audit = await auditRows(f.org.id, 'catalog.select');
    expect(audit.map((r) => r.target_id)).toEqual([...chosen].sort());
    expect(audit.every((r) => r.target_type === 'device' && r.details.merkmal === 'qgis')).toBe(true);
    // The catalog's events name the same devices, one each.
    const events = await ctx.sql<{ device_id: string }[]>`
      select e.device_id from device_merkmal_events e join devices d on d.id = e.device_id
      where d.organization_id = ${f.org.id} order by e.device_id`;
    expect(events.map((e) => e.device_id)).toEqual([...chosen].sort());
    expect(await databaseFingerprint(ctx.sql, ignoring)).toBe(before);
    expect(await ctx.sql`select * from devices where id <> all(${chosen}::uuid[]) order by id`).toEqual(others);
    const outcomes = await ctx.sql<{ device_id: string }[]>`
      select device_id from device_merkmal_outcomes where device_id <> all(${chosen}::uuid[])`;
    expect(outcomes.length).toBe(outcomesBefore[0]!.n);
    // Each device's catalog says so, from the device itself.
    const catalog = await ctx.request('GET', `/api/v1/devices/${chosen[0]}/catalog`);
    const qgis = (catalog.body.items as { merkmal: string; state: string; origin: string }[]).find(
      (i) => i.merkmal === 'qgis',
    );
    expect(qgis).toMatchObject({ state: 'present', origin: 'geraet' });
  });

  it('adds the ticked devices to a group; one archived meanwhile is reported and the others go on', async () => {
    const f = await fleet();
    const [one, two, three] = await f.ids('BK-B-');
    const confirm = await f.admin.get(
      `/portal/devices/bulk?action=group-add&target_group=${f.group}&scope=selected&device=${one}&device=${two}&device=${three}`,
    );
    expect(countOf(confirm.text)).toBe(3);
    expect(confirm.text).toContain('Zur Gruppe „Laptopwagen“ hinzufügen');
    const { action, fields } = confirmForm(confirm.text);
    expect(action).toBe('/portal/devices/bulk/group-add');
    expect((await ctx.request('POST', `/api/v1/devices/${three}/archive`)).status).toBe(200);
    const result = await f.admin.request('POST', action, fields);
    expect(result.status).toBe(200);
    expect(result.text).toContain('<strong data-field="changed">2 Geräte</strong> geändert.');
    expect(result.text).toContain('<strong data-field="failed">1 Gerät</strong> nicht geändert:');
    expect(result.text).toMatch(new RegExp(`data-failed="${three}">[\\s\\S]*?data-code="device_archived"`));
    const members = await ctx.sql<{ device_id: string }[]>`
      select device_id from group_members where group_id = ${f.group} order by device_id`;
    expect(members.map((m) => m.device_id)).toEqual([one, two].sort());
    const audit = await auditRows(f.org.id, 'group.add_device');
    expect(audit.map((r) => r.details.device_id).sort()).toEqual([one, two].sort());
  });

  it('in English: the controls, the confirmation naming the count, the result with the refused device, the flash', async () => {
    const f = await fleet();
    const english = new PortalClient(ctx.app, '10.43.2.1', 'en');
    expect((await english.signIn((await createApiKey(ctx, f.org.id, 'admin')).key)).status).toBe(303);
    const list = await english.get('/portal/devices');
    expect(list.text).toContain('<legend>Bulk action</legend>');
    expect(list.text).toContain('<option value="group-add">Add to group</option>');
    expect(list.text).toContain('Apply to the ticked devices …');

    const [one, two, three] = await f.ids('BK-B-');
    const path = `/portal/devices/bulk?action=group-add&target_group=${f.group}&scope=selected&device=${one}&device=${two}&device=${three}`;
    const confirm = await english.get(path);
    expect(confirm.status).toBe(200);
    expect(confirm.text).toContain('<title>Confirm bulk action');
    expect(confirm.text).toContain('Add to the group “Laptopwagen”');
    expect(confirm.text).toContain(
      'This action changes <strong data-field="count">3 devices</strong>: the ticked devices.',
    );
    expect(confirm.text).toContain('Each device is changed and logged on its own (one audit log entry per device).');
    expect(confirm.text).toMatch(/<button type="submit" class="danger">\s*Change 3 devices\s*<\/button>/);
    expect(confirm.text).toContain('>Cancel</a>');
    // The German page is as it was.
    const german = await f.admin.get(path);
    expect(german.text).toContain('<title>Sammelaktion bestätigen');
    expect(german.text).toContain(
      'Diese Aktion ändert <strong data-field="count">3 Geräte</strong>: die ausgewählten Geräte.',
    );
    expect(german.text).toMatch(/<button type="submit" class="danger">\s*3 Geräte ändern\s*<\/button>/);

    const { action, fields } = confirmForm(confirm.text);
    expect((await ctx.request('POST', `/api/v1/devices/${three}/archive`)).status).toBe(200);
    const result = await english.request('POST', action, fields);
    expect(result.status).toBe(200);
    expect(result.text).toContain('<title>Bulk action done');
    expect(result.text).toContain('<strong data-field="changed">2 devices</strong> changed.');
    expect(result.text).toContain('<strong data-field="failed">1 device</strong> not changed:');
    expect(result.text).toContain('<th scope="col">Serial number</th>');
    expect(result.text).toMatch(
      new RegExp(`data-failed="${three}">[\\s\\S]*?data-code="device_archived">The device is archived.</td>`),
    );
    expect(result.text).toContain('← Back to the device list');

    // Over a filter: the Merkmal's action by its key, the count of the devices the filter matches.
    const filtered = await english.get(
      `/portal/devices/bulk?oe_id=${f.a}&action=select&target_merkmal=qgis&scope=filter`,
    );
    expect(filtered.text).toContain('Select the catalog item “qgis” on the device');
    expect(filtered.text).toContain('<strong data-field="count">30 devices</strong>: every device matching');
    const none = await english.get(
      `/portal/devices/bulk?oe_id=${f.a}&status=deprovisioned&action=unset&target_merkmal=qgis&scope=filter`,
    );
    expect(none.text).toContain('<strong data-field="count">0 devices</strong>');
    expect(none.text).toContain('No device matches: there is nothing to change.');
    expect(none.text).not.toContain('class="danger"');

    for (const [query, message] of [
      ['scope=selected', 'Please choose an action.'],
      ['action=move&scope=selected', 'Please choose an org unit.'],
      [`action=group-add&target_group=${f.group}&scope=selected`, 'No devices ticked.'],
    ] as const) {
      const res = await english.get(`/portal/devices/bulk?${query}`);
      expect(res.status, query).toBe(303);
      expect(decodeURIComponent(english.lastSetCookies.join(';')), query).toContain(message);
    }
  });

  it('offers a viewer no bulk control; a forged post is 403, and nothing changes', async () => {
    const f = await fleet();
    const list = await f.viewer.get('/portal/devices');
    expect(list.status).toBe(200);
    expect(list.text).not.toContain('type="checkbox" name="device"');
    expect(list.text).not.toContain('Sammelaktion</legend>');
    const [device] = await f.ids('BK-A-');
    expect(
      (await f.viewer.get(`/portal/devices/bulk?action=move&target_oe=${f.b}&scope=selected&device=${device}`)).status,
    ).toBe(403);
    const csrf = await f.csrf(f.viewer);
    const before = await databaseFingerprint(ctx.sql);
    for (const [path, target] of [
      ['/portal/devices/bulk/move', { target_oe: f.b }],
      ['/portal/devices/bulk/group-add', { target_group: f.group }],
      ['/portal/devices/bulk/group-remove', { target_group: f.group }],
      ['/portal/devices/bulk/catalog/qgis/select', {}],
      ['/portal/devices/bulk/catalog/qgis/deselect', {}],
      ['/portal/devices/bulk/catalog/qgis/unset', {}],
    ] as const) {
      for (const scope of [{ scope: 'selected', device: device! }, { scope: 'filter' }, {}] as Record<
        string,
        string
      >[]) {
        const res = await f.viewer.request('POST', path, { _csrf: csrf, ...scope, ...target });
        expect(res.status, `${path} ${JSON.stringify(scope)}`).toBe(403);
      }
    }
    expect(await databaseFingerprint(ctx.sql)).toBe(before);
  });

  it("refuses a post without its CSRF token or naming another organization's device, changing nothing", async () => {
    const f = await fleet();
    const theirs = await fleet();
    const [mine] = await f.ids('BK-A-');
    const [foreign] = await theirs.ids('BK-A-');
    const csrf = await f.csrf(f.admin);
    const before = await databaseFingerprint(ctx.sql);
    const move = (fields: Record<string, string>) => f.admin.request('POST', '/portal/devices/bulk/move', fields);
    expect((await move({ scope: 'selected', device: mine!, target_oe: f.b })).status).toBe(403);
    expect((await move({ _csrf: 'falsch', scope: 'filter', target_oe: f.b })).status).toBe(403);
    // Another organization's device, alone or beside mine: 404 as an unknown one, before any change.
    for (const device of [foreign!, `${mine} ${foreign}`, crypto.randomUUID(), `${mine} nicht-eine-id`]) {
      const res = await move({ _csrf: csrf, scope: 'selected', device, target_oe: f.b });
      expect(res.status, device).toBe(404);
    }
    // Another organization's unit as the target, or as the filter: 404.
    expect((await move({ _csrf: csrf, scope: 'selected', device: mine!, target_oe: theirs.b })).status).toBe(404);
    expect((await move({ _csrf: csrf, scope: 'filter', oe_id: theirs.a, target_oe: f.b })).status).toBe(404);
    const group = (device: string) =>
      f.admin.request('POST', '/portal/devices/bulk/group-add', {
        _csrf: csrf,
        scope: 'selected',
        device,
        target_group: theirs.group,
      });
    expect((await group(mine!)).status).toBe(404);
    expect(
      (await f.admin.get(`/portal/devices/bulk?action=move&target_oe=${f.b}&scope=selected&device=${foreign}`)).status,
    ).toBe(404);
    expect(await databaseFingerprint(ctx.sql)).toBe(before);
  });

  it('sends back to the list a form without an action, a target or a ticked device', async () => {
    const f = await fleet();
    const [device] = await f.ids('BK-A-');
    for (const [path, message] of [
      [`/portal/devices/bulk?oe_id=${f.a}&scope=selected&device=${device}`, 'Bitte eine Aktion wählen.'],
      [
        `/portal/devices/bulk?oe_id=${f.a}&action=move&scope=selected&device=${device}`,
        'Bitte eine Organisationseinheit wählen.',
      ],
      [
        `/portal/devices/bulk?oe_id=${f.a}&action=group-add&target_group=${f.group}&scope=selected`,
        'Keine Geräte ausgewählt.',
      ],
    ] as const) {
      const res = await f.admin.get(path);
      expect(res.status, path).toBe(303);
      expect(res.location).toBe(`/portal/devices?oe_id=${f.a}`);
      expect(decodeURIComponent(f.admin.lastSetCookies.join(';')), path).toContain(message);
    }
  });
});
