/**
 * Device actions in bulk from the portal's device list, over HTTP in-process: the page
 * names the count of ticked or filtered devices in its button and queues one action per
 * device through the API's create (one audit event each); a device that cannot take one is
 * reported; a count that changed queues nothing and asks again; bad settings queue
 * nothing; above 50 devices the action goes out as a rollout in rings over the org unit or
 * group the list is filtered by, with the count confirmed as its expected_devices (another
 * count asks again), and a filter that names no unit or group alone is told why; a viewer
 * has no control and its forged posts are 403; a post without its CSRF token or naming
 * another organization's device, unit or group changes nothing.
 */
import { describe, expect, it } from 'vitest';
import { createApiKey, databaseFingerprint } from '../support/access.ts';
import { useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { insertOrgUnit } from '../support/devices.ts';
import { PortalClient } from '../support/portal_client.ts';

const ctx = useTestApp();

async function signedIn(key: string, language?: string) {
  const b = new PortalClient(ctx.app, `10.52.4.${Math.floor(Math.random() * 250) + 1}`, language);
  expect((await b.signIn(key)).status).toBe(303);
  return b;
}

/** `inA` bootstrapped devices in unit A (serials AC-A-…), 5 in unit B; admin and viewer sessions. */
async function fleet(inA = 30, language?: string) {
  const org = await createOrganization(ctx);
  const a = await insertOrgUnit(ctx.sql, org.id, 'Grundschule');
  const b = await insertOrgUnit(ctx.sql, org.id, 'Gymnasium');
  await ctx.sql`
    insert into devices (organization_id, serial, oe_id, agent_secret_hash, agent_secret_issued_at)
    select ${org.id}, format('AC-%s-%s', case when n <= ${inA} then 'A' else 'B' end, lpad(n::text, 3, '0')),
           case when n <= ${inA} then ${a}::uuid else ${b}::uuid end,
           sha256(convert_to(${org.id}::text || n::text, 'UTF8')), now() - interval '1 hour'
    from generate_series(1, ${inA + 5}) n`;
  const ids = async (prefix: string) =>
    (
      await ctx.sql<{ id: string }[]>`
        select id from devices where organization_id = ${org.id} and serial like ${`${prefix}%`} order by serial`
    ).map((r) => r.id);
  const admin = await signedIn((await createApiKey(ctx, org.id, 'admin')).key, language);
  const viewer = await signedIn((await createApiKey(ctx, org.id, 'viewer')).key, language);
  const csrf = async (client: PortalClient) => PortalClient.csrf((await client.get('/portal/devices')).text);
  return { org, a, b, ids, admin, viewer, csrf };
}

/** The page's confirming form: its action and hidden fields. */
function confirmForm(html: string): { action: string; fields: Record<string, string> } {
  const main = html.slice(html.indexOf('<main>'));
  const form = /<form method="post" action="([^"]+)" data-confirm-action="[^"]+">([\s\S]*?)<\/form>/.exec(main);
  expect(form, main.slice(0, 2000)).not.toBeNull();
  const fields: Record<string, string> = {};
  for (const m of form![2]!.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"/g)) {
    fields[m[1]!] = m[2]!.replaceAll('&amp;', '&');
  }
  return { action: form![1]!, fields };
}

const countOf = (html: string) => /data-field="count">([^<]+)</.exec(html)?.[1];

async function actionsOfOrg(orgId: string) {
  return ctx.sql<{ device_id: string; type: string; parameters: Record<string, unknown>; rollout_id: string | null }[]>`
    select device_id, type, parameters, rollout_id from device_actions where organization_id = ${orgId}
    order by device_id`;
}

describe('device actions in bulk from the device list', () => {
  it('the list offers the device actions; ticked devices get one reboot each after the count is confirmed', async () => {
    const f = await fleet();
    const list = await f.admin.get('/portal/devices');
    expect(list.text).toContain('<optgroup label="Geräteaktionen">');
    expect(list.text).toContain('<option value="reboot">Neustart</option>');
    const ticked = (await f.ids('AC-A-')).slice(0, 3);
    const page = await f.admin.get(
      `/portal/devices/bulk?action=reboot&scope=selected&${ticked.map((d) => `device=${d}`).join('&')}`,
    );
    expect(page.status).toBe(200);
    expect(countOf(page.text)).toBe('3 Geräte');
    expect(page.text).toContain('Neustart für 3 Geräte einreihen');
    expect(page.text).toContain('AC-A-001, AC-A-002, AC-A-003');
    expect(await actionsOfOrg(f.org.id)).toEqual([]);

    const { action, fields } = confirmForm(page.text);
    expect(action).toBe('/portal/devices/bulk/actions');
    expect(fields).toMatchObject({ type: 'reboot', scope: 'selected', expected: '3' });
    const before = await ctx.sql`select count(*)::int as n from audit_events where organization_id = ${f.org.id}`;
    const res = await f.admin.request('POST', action, { ...fields, delay_seconds: '0', message: 'Gleich geht es los' });
    expect(res.status).toBe(200);
    expect(res.text).toContain('<strong data-field="queued">3 Geräte</strong> eingereiht');
    const queued = await actionsOfOrg(f.org.id);
    expect(queued.map((q) => q.device_id)).toEqual([...ticked].sort());
    for (const q of queued) {
      expect(q).toMatchObject({ type: 'reboot', parameters: { delay_seconds: 0, message: 'Gleich geht es los' } });
      expect(q.rollout_id).toBeNull();
    }
    const audit = await ctx.sql<{ target_id: string }[]>`
      select a.target_id from audit_events a where a.organization_id = ${f.org.id} and a.action = 'action.create'`;
    expect(audit).toHaveLength(3);
    expect(await ctx.sql`select count(*)::int as n from audit_events where organization_id = ${f.org.id}`).toEqual([
      { n: before[0]!.n + 3 },
    ]);
  });

  it('a script for every device a filter matches; a device that cannot take it is reported, a changed count asks again', async () => {
    const f = await fleet();
    const inA = await f.ids('AC-A-');
    const page = await f.admin.get(`/portal/devices/bulk?action=script&scope=filter&oe_id=${f.a}`);
    expect(countOf(page.text)).toBe('30 Geräte');
    expect(page.text).toContain('Skript für 30 Geräte einreihen');
    const { action, fields } = confirmForm(page.text);
    const form = { ...fields, interpreter: 'sh', script: 'systemctl restart cups\r\n', timeout_seconds: '60' };
    // Meanwhile one device is archived (the list leaves it out) and one deprovisioned (still listed).
    await ctx.sql`update devices set archived_at = now() where id = ${inA[0]!}`;
    await ctx.sql`update devices set deprovisioned_at = now() where id = ${inA[1]!}`;
    const before = await databaseFingerprint(ctx.sql, { tables: ['portal_sessions'] });
    const changed = await f.admin.request('POST', action, form);
    expect(changed.status).toBe(409);
    expect(changed.text).toContain('Die Zahl der Geräte hat sich inzwischen geändert: jetzt 29 Geräte.');
    expect(countOf(changed.text)).toBe('29 Geräte');
    // The page keeps what was typed.
    expect(changed.text).toContain('systemctl restart cups');
    expect(await databaseFingerprint(ctx.sql, { tables: ['portal_sessions'] })).toBe(before);

    const again = confirmForm(changed.text);
    const res = await f.admin.request('POST', again.action, { ...form, ...again.fields });
    expect(res.status).toBe(200);
    expect(res.text).toContain('<strong data-field="queued">28 Geräte</strong> eingereiht');
    expect(res.text).toContain('<strong data-field="failed">1 Gerät</strong> nicht eingereiht:');
    expect(res.text).toContain('Das Gerät ist deprovisioniert.');
    const queued = await actionsOfOrg(f.org.id);
    expect(queued.map((q) => q.device_id)).toEqual(inA.slice(2).sort());
    expect(queued[0]!.parameters).toEqual({
      interpreter: 'sh',
      script: 'systemctl restart cups\n',
      timeout_seconds: 60,
    });
  });

  it('bad settings queue nothing and show the page again with the refusal in words', async () => {
    const f = await fleet();
    const page = await f.admin.get(`/portal/devices/bulk?action=script&scope=filter&oe_id=${f.b}`);
    const { action, fields } = confirmForm(page.text);
    const res = await f.admin.request('POST', action, { ...fields, interpreter: 'sh', script: '' });
    expect(res.status).toBe(400);
    expect(res.text).toContain('Das Skript darf nicht leer sein');
    expect(countOf(res.text)).toBe('5 Geräte');
    expect(await actionsOfOrg(f.org.id)).toEqual([]);
  });

  it('above 50 devices: ticked ones are sent back, a filter naming no single unit or group is told why', async () => {
    const f = await fleet(55);
    const all = await f.ids('AC-');
    const ticked = await f.admin.get(
      `/portal/devices/bulk?action=apply_now&scope=selected&${all
        .slice(0, 51)
        .map((d) => `device=${d}`)
        .join('&')}`,
    );
    expect(ticked.status).toBe(303);
    expect((await f.admin.get(ticked.location!)).text).toContain('Höchstens 50 ausgewählte Geräte');
    const whole = await f.admin.get('/portal/devices/bulk?action=apply_now&scope=filter');
    expect(whole.status).toBe(200);
    expect(countOf(whole.text)).toBe('60 Geräte');
    expect(whole.text).toContain('data-field="needs-scope"');
    expect(whole.text).not.toContain('data-confirm-action');
    // A forged post for them queues nothing.
    const token = await f.csrf(f.admin);
    const res = await f.admin.request('POST', '/portal/devices/bulk/actions', {
      _csrf: token,
      type: 'apply_now',
      scope: 'filter',
      expected: '60',
    });
    expect(res.status).toBe(409);
    expect(await actionsOfOrg(f.org.id)).toEqual([]);
  });

  it('above 50 devices of a unit: a script goes out in rings, the count confirmed as expected_devices, a changed count asks again', async () => {
    const f = await fleet(55);
    const inA = await f.ids('AC-A-');
    const list = `/portal/devices?oe_id=${f.a}`;
    const page = await f.admin.get(`/portal/devices/bulk?action=script&scope=filter&oe_id=${f.a}`);
    expect(page.status).toBe(200);
    expect(countOf(page.text)).toBe('55 Geräte');
    expect(page.text).toContain('data-field="in-rings"');
    expect(page.text).toContain('die verwalteten Geräte der Organisationseinheit „Grundschule“');
    expect(page.text).toContain(`href="${list}"`);
    expect(page.text).toContain('Skript für 55 Geräte einreihen');
    const { action, fields } = confirmForm(page.text);
    expect(action).toBe(`/portal/org-units/${f.a}/actions`);
    expect(fields).toMatchObject({ type: 'script', expected_devices: '55' });
    const form = {
      ...fields,
      interpreter: 'python3',
      script: 'print("RING-SCRIPT")',
      timeout_seconds: '30',
      rings: '10, 100',
      max_failure_ratio: '0,2',
      min_reported_ratio: '0.9',
      soak_seconds: '0',
    };
    // Meanwhile a device of the unit is deprovisioned: the rollout would take 54.
    await ctx.sql`update devices set deprovisioned_at = now() where id = ${inA[0]!}`;
    const before = await databaseFingerprint(ctx.sql, { tables: ['portal_sessions'] });
    const changed = await f.admin.request('POST', action, form);
    expect(changed.status).toBe(409);
    expect(changed.text).toContain('jetzt 54 Geräte');
    expect(countOf(changed.text)).toBe('54 Geräte');
    expect(changed.text).toContain('print(&quot;RING-SCRIPT&quot;)');
    expect(await databaseFingerprint(ctx.sql, { tables: ['portal_sessions'] })).toBe(before);

    const again = confirmForm(changed.text);
    const res = await f.admin.request('POST', again.action, { ...form, ...again.fields });
    expect(res.status).toBe(303);
    const id = /^\/portal\/rollouts\/([0-9a-f-]{36})$/.exec(res.location!)![1]!;
    const [rollout] =
      await ctx.sql`select scope, scope_id, device_action, rings, max_failure_ratio from rollouts where id = ${id}`;
    expect(rollout).toMatchObject({
      scope: 'org_unit',
      scope_id: f.a,
      device_action: {
        type: 'script',
        parameters: { interpreter: 'python3', script: 'print("RING-SCRIPT")', timeout_seconds: 30 },
      },
      rings: [10, 100],
      max_failure_ratio: 0.2,
    });
    // Ring 1 (10 % of 54) got the action, with the rollout's id; the others wait for their ring.
    const queued = await actionsOfOrg(f.org.id);
    expect(queued.length).toBeGreaterThan(0);
    expect(queued.length).toBeLessThan(54);
    expect(queued.every((q) => q.rollout_id === id && q.type === 'script')).toBe(true);
    expect(queued.map((q) => q.device_id)).not.toContain(inA[0]);
    const [audit] = await ctx.sql<{ details: Record<string, unknown> }[]>`
      select details from audit_events where target_id = ${id} and action = 'rollout.create'`;
    expect(JSON.stringify(audit!.details)).not.toContain('RING-SCRIPT');
    // The rollout's page names the action and its settings, never the script.
    const shown = await f.admin.get(res.location!);
    expect(shown.text).toContain('Rollout gestartet');
    expect(shown.text).toContain('<td data-field="merkmal">Skript</td>');
    expect(shown.text).toContain('Interpreter python3, Zeitlimit 30 s');
    expect(shown.text).not.toContain('RING-SCRIPT');
    const viewerPage = await f.viewer.get(res.location!);
    expect(viewerPage.text).not.toContain('RING-SCRIPT');
  });

  it('above 50 devices of a group: in rings over the group; bad settings or rings show the page again and create nothing', async () => {
    const f = await fleet(55);
    const [group] = await ctx.sql<{ id: string }[]>`
      insert into groups (organization_id, name) values (${f.org.id}, 'Laptopwagen') returning id`;
    await ctx.sql`
      insert into group_members (group_id, device_id, organization_id)
      select ${group!.id}, id, organization_id from devices where organization_id = ${f.org.id} and serial like 'AC-A-%'`;
    const page = await f.admin.get(`/portal/devices/bulk?action=reboot&scope=filter&group_id=${group!.id}`);
    expect(countOf(page.text)).toBe('55 Geräte');
    expect(page.text).toContain('die verwalteten Geräte der Gruppe „Laptopwagen“');
    const { action, fields } = confirmForm(page.text);
    expect(action).toBe(`/portal/groups/${group!.id}/actions`);
    const ring = { rings: '10, 50, 100', max_failure_ratio: '0.1', min_reported_ratio: '0.9', soak_seconds: '3600' };
    const before = await databaseFingerprint(ctx.sql, { tables: ['portal_sessions'] });
    const bad = await f.admin.request('POST', action, { ...fields, ...ring, delay_seconds: '9999' });
    expect(bad.status).toBe(400);
    expect(bad.text).toContain('Die Verzögerung muss eine ganze Zahl von 0 bis 3600 Sekunden sein.');
    const badRings = await f.admin.request('POST', action, { ...fields, ...ring, rings: '50, 10' });
    expect(badRings.status).toBe(400);
    expect(countOf(badRings.text)).toBe('55 Geräte');
    expect(await databaseFingerprint(ctx.sql, { tables: ['portal_sessions'] })).toBe(before);
    const res = await f.admin.request('POST', action, { ...fields, ...ring, delay_seconds: '120' });
    expect(res.status).toBe(303);
    const queued = await actionsOfOrg(f.org.id);
    expect(queued.length).toBeGreaterThan(0);
    expect(queued.every((q) => q.type === 'reboot' && q.parameters.delay_seconds === 120)).toBe(true);
  });

  it("a viewer has no bulk control; its page and forged post are 403; no CSRF token or another organization's device changes nothing", async () => {
    const f = await fleet();
    const theirs = await fleet();
    const list = await f.viewer.get('/portal/devices');
    expect(list.text).not.toContain('Geräteaktionen');
    const mine = (await f.ids('AC-A-')).slice(0, 2);
    const foreign = (await theirs.ids('AC-A-'))[0]!;
    const [theirGroup] = await ctx.sql<{ id: string }[]>`
      insert into groups (organization_id, name) values (${theirs.org.id}, 'Fremd') returning id`;
    expect((await f.viewer.get(`/portal/devices/bulk?action=reboot&scope=selected&device=${mine[0]}`)).status).toBe(
      403,
    );
    const before = await databaseFingerprint(ctx.sql, { tables: ['portal_sessions'] });
    const form = { type: 'reboot', scope: 'selected', expected: '2', device: mine.join(' ') };
    expect(
      (await f.viewer.request('POST', '/portal/devices/bulk/actions', { ...form, _csrf: await f.csrf(f.viewer) }))
        .status,
    ).toBe(403);
    expect((await f.admin.request('POST', '/portal/devices/bulk/actions', form)).status).toBe(403);
    expect((await f.admin.request('POST', '/portal/devices/bulk/actions', { ...form, _csrf: 'nope' })).status).toBe(
      403,
    );
    const token = await f.csrf(f.admin);
    expect(
      (await f.admin.get(`/portal/devices/bulk?action=reboot&scope=selected&device=${mine[0]}&device=${foreign}`))
        .status,
    ).toBe(404);
    const stranger = await f.admin.request('POST', '/portal/devices/bulk/actions', {
      ...form,
      device: [...mine, foreign].join(' '),
      expected: '3',
      _csrf: token,
    });
    expect(stranger.status).toBe(404);
    // The rollout forms: a viewer's is 403, another organization's unit or group 404, none without its token.
    const ringForm = {
      type: 'apply_now',
      expected_devices: '30',
      rings: '10, 100',
      max_failure_ratio: '0.1',
      min_reported_ratio: '0.9',
      soak_seconds: '0',
    };
    expect(
      (
        await f.viewer.request('POST', `/portal/org-units/${f.a}/actions`, {
          ...ringForm,
          _csrf: await f.csrf(f.viewer),
        })
      ).status,
    ).toBe(403);
    expect((await f.admin.request('POST', `/portal/org-units/${f.a}/actions`, ringForm)).status).toBe(403);
    expect(
      (await f.admin.request('POST', `/portal/org-units/${theirs.a}/actions`, { ...ringForm, _csrf: token })).status,
    ).toBe(404);
    expect(
      (await f.admin.request('POST', `/portal/groups/${theirGroup!.id}/actions`, { ...ringForm, _csrf: token })).status,
    ).toBe(404);
    expect(await databaseFingerprint(ctx.sql, { tables: ['portal_sessions'] })).toBe(before);
  });

  it('reads in English', async () => {
    const f = await fleet(30, 'en-GB,en;q=0.9');
    const page = await f.admin.get(`/portal/devices/bulk?action=apply_updates&scope=filter&oe_id=${f.a}`);
    expect(countOf(page.text)).toBe('30 devices');
    expect(page.text).toContain('Queue “Apply updates” for 30 devices');
    expect(page.text).toContain('Security updates only');
    const { action, fields } = confirmForm(page.text);
    const res = await f.admin.request('POST', action, { ...fields, security_only: 'true' });
    expect(res.text).toContain('<strong data-field="queued">30 devices</strong> queued');
    expect((await actionsOfOrg(f.org.id)).every((a) => a.parameters.security_only === true)).toBe(true);
  });
});
