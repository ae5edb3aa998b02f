/**
 * A device's actions in the portal, over HTTP in-process: each form (reboot, apply now,
 * apply updates, script) is confirmed with "1 Gerät" before anything is queued, then
 * queued through the API's service with its audit event; the queue and the history (paged)
 * with their results; cancel; a viewer reads type, status and times but never a script or
 * an output and gets no form; a post without the CSRF token, a viewer's forged post and
 * another organization's device or action change nothing; bad input reads in the page's
 * language and queues nothing.
 */
import { describe, expect, it } from 'vitest';
import { createApiKey, databaseFingerprint } from '../support/access.ts';
import { enrollAgent, type EnrolledAgent } from '../support/agent.ts';
import { useTestApp } from '../support/app.ts';
import { PortalClient } from '../support/portal_client.ts';

const ctx = useTestApp();

async function signedIn(key: string, language?: string) {
  const client = new PortalClient(ctx.app, `10.52.3.${Math.floor(Math.random() * 250) + 1}`, language);
  expect((await client.signIn(key)).status).toBe(303);
  return client;
}

/** A bootstrapped device with admin and viewer sessions of its organization. */
async function fleet(language?: string) {
  const agent = await enrollAgent(ctx);
  const admin = await signedIn((await createApiKey(ctx, agent.organization_id, 'admin')).key, language);
  const viewer = await signedIn((await createApiKey(ctx, agent.organization_id, 'viewer')).key, language);
  const page = (client: PortalClient, path = `/portal/devices/${agent.device_id}`) => client.get(path);
  const csrf = async (client: PortalClient) => PortalClient.csrf((await page(client)).text);
  return { agent, admin, viewer, page, csrf };
}

/** The confirmation form's action and its hidden fields (the CSRF token among them). */
function confirmForm(html: string): { action: string; fields: Record<string, string> } {
  const main = html.slice(html.indexOf('<main>'));
  const form = /<form method="post" action="([^"]+)" data-confirm-action="[^"]+">([\s\S]*?)<\/form>/.exec(main);
  expect(form, main.slice(0, 2000)).not.toBeNull();
  const fields: Record<string, string> = {};
  for (const m of form![2]!.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"/g)) {
    fields[m[1]!] = m[2]!
      .replaceAll('&quot;', '"')
      .replaceAll('&#39;', "'")
      .replaceAll('&lt;', '<')
      .replaceAll('&gt;', '>')
      .replaceAll('&amp;', '&');
  }
  return { action: form![1]!, fields };
}

async function actionsOf(deviceId: string) {
  return ctx.sql<{ id: string; type: string; status: string; parameters: Record<string, unknown> }[]>`
    select id, type, status, parameters from device_actions where device_id = ${deviceId} order by created_at, id`;
}

/** Confirms and queues an action from the device page's form, as a browser would; the queued row. */
async function queue(client: PortalClient, deviceId: string, csrf: string, form: Record<string, string>) {
  const confirmation = await client.request('POST', `/portal/devices/${deviceId}/actions/confirm`, {
    _csrf: csrf,
    ...form,
  });
  expect(confirmation.status, confirmation.text.slice(0, 500)).toBe(200);
  const { action, fields } = confirmForm(confirmation.text);
  const res = await client.request('POST', action, fields);
  expect(res.status).toBe(303);
  expect(res.location).toBe(`/portal/devices/${deviceId}#actions`);
  return { confirmation, res };
}

/** The agent starts the action and reports its result, as the device's agent does. */
async function finish(agent: EnrolledAgent, id: string, result: Record<string, unknown>) {
  const started = await ctx.request('POST', `/api/v1/agent/actions/${id}/start`, { token: agent.secret });
  expect(started.status).toBe(204);
  const done = await ctx.request('POST', `/api/v1/agent/actions/${id}/result`, { token: agent.secret, body: result });
  expect(done.status, JSON.stringify(done.body)).toBe(204);
}

describe("a device's actions in the portal", () => {
  it('an admin confirms a reboot for "1 Gerät", then it is queued with its audit event and listed with a cancel button', async () => {
    const { agent, admin, page } = await fleet();
    const device = await page(admin);
    for (const button of ['Neustart …', 'Jetzt anwenden …', 'Updates installieren …', 'Skript ausführen …']) {
      expect(device.text).toContain(button);
    }
    expect(device.text).toContain('Keine offenen Aktionen.');
    const token = PortalClient.csrf(device.text);
    const confirmation = await admin.request('POST', `/portal/devices/${agent.device_id}/actions/confirm`, {
      _csrf: token,
      type: 'reboot',
      delay_seconds: '30',
      message: 'Neustart für Updates',
    });
    expect(confirmation.status).toBe(200);
    expect(confirmation.text).toContain('Aktion bestätigen');
    expect(confirmation.text).toContain('<strong data-field="count">1 Gerät</strong>');
    expect(confirmation.text).toContain('Neustart für 1 Gerät einreihen');
    expect(confirmation.text).toContain('in 30 s, Nachricht: „Neustart für Updates“');
    // The confirmation itself queues nothing.
    expect(await actionsOf(agent.device_id)).toEqual([]);

    const { action, fields } = confirmForm(confirmation.text);
    expect(action).toBe(`/portal/devices/${agent.device_id}/actions`);
    const res = await admin.request('POST', action, fields);
    expect(res.status).toBe(303);
    const [queued] = await actionsOf(agent.device_id);
    expect(queued).toMatchObject({
      type: 'reboot',
      status: 'pending',
      parameters: { delay_seconds: 30, message: 'Neustart für Updates' },
    });
    const [audit] = await ctx.sql`select action, details, actor from audit_events where target_id = ${queued!.id}`;
    expect(audit).toMatchObject({ action: 'action.create', details: { type: 'reboot' }, actor: { type: 'api_key' } });

    const after = await page(admin);
    expect(after.text).toContain('Neustart eingereiht');
    const row = new RegExp(`<tr data-action="${queued!.id}"[\\s\\S]*?</tr>`).exec(after.text)![0];
    expect(row).toContain('data-status="pending"');
    expect(row).toContain('wartet auf das Gerät');
    expect(row).toContain(`action="/portal/actions/${queued!.id}/cancel"`);
    expect(row).toContain(`href="/portal/actions/${queued!.id}"`);
    expect(token).toBe(PortalClient.csrf(after.text));
  });

  it('apply now, apply updates (security only unless unticked) and a script (its lines as LF, audited by its hash) are queued as confirmed', async () => {
    const { agent, admin, csrf } = await fleet();
    const token = await csrf(admin);
    await queue(admin, agent.device_id, token, { type: 'apply_now' });
    await queue(admin, agent.device_id, token, { type: 'apply_updates', security_only: 'true' });
    // An unticked checkbox sends nothing: every pending update.
    const all = await queue(admin, agent.device_id, token, { type: 'apply_updates' });
    expect(all.confirmation.text).toContain('alle ausstehenden Updates');
    const script = await queue(admin, agent.device_id, token, {
      type: 'script',
      interpreter: 'bash',
      script: 'echo "a <b> & c"\r\nexit 0\r\n',
      timeout_seconds: '120',
    });
    expect(script.confirmation.text).toContain('Interpreter bash, Zeitlimit 120 s');
    expect(script.confirmation.text).toContain('echo &quot;a &lt;b&gt; &amp; c&quot;');
    const rows = await actionsOf(agent.device_id);
    expect(rows.map((r) => [r.type, r.parameters])).toEqual([
      ['apply_now', {}],
      ['apply_updates', { security_only: true }],
      ['apply_updates', { security_only: false }],
      ['script', { interpreter: 'bash', script: 'echo "a <b> & c"\nexit 0\n', timeout_seconds: 120 }],
    ]);
    const [audit] = await ctx.sql<{ details: Record<string, unknown> }[]>`
      select details from audit_events where target_id = ${rows[3]!.id}`;
    expect(audit!.details).toMatchObject({ type: 'script', size: 24 });
    expect(JSON.stringify(audit!.details)).not.toContain('echo');
  });

  it("shows the history with each result, the admin the script and output, the action's page the upgraded packages; paged 10 at a time", async () => {
    const { agent, admin, page } = await fleet();
    const api = async (body: unknown) => {
      const res = await ctx.request('POST', `/api/v1/devices/${agent.device_id}/actions`, { body });
      expect(res.status).toBe(201);
      return res.body.id as string;
    };
    const updates = await api({ type: 'apply_updates' });
    await finish(agent, updates, {
      exit_code: 0,
      output: 'Reading package lists...\n',
      duration_ms: 5230,
      details: { upgraded: [{ name: 'fleet-test-pkg', from: '1.0-1', to: '1.1-1' }], reboot_required: true },
    });
    const script = await api({ type: 'script', parameters: { interpreter: 'sh', script: 'echo geheim-skript' } });
    await finish(agent, script, { exit_code: 3, output: `${'x'.repeat(3000)}geheime-ausgabe`, duration_ms: 40 });

    const device = await page(admin);
    const row = (id: string) => new RegExp(`<tr data-action="${id}"[\\s\\S]*?</tr>`).exec(device.text)![0];
    expect(row(updates)).toContain('data-status="succeeded"');
    expect(row(updates)).toContain('Exit-Code 0, 5,2 s');
    expect(row(script)).toContain('data-status="failed"');
    expect(row(script)).toContain('Exit-Code 3');
    expect(row(script)).toContain('echo geheim-skript');
    // The device page shows an output's end; the action's page all of it.
    expect(row(script)).toContain('Die letzten 2.000 Zeichen:');
    expect(row(script)).toContain('geheime-ausgabe');
    expect(row(script)).not.toContain('x'.repeat(1990));
    const whole = await admin.get(`/portal/actions/${script}`);
    expect(whole.status).toBe(200);
    expect(whole.text).toContain(`${'x'.repeat(3000)}geheime-ausgabe`);
    const updated = await admin.get(`/portal/actions/${updates}`);
    expect(updated.text).toContain('Aktualisierte Pakete');
    expect(updated.text).toMatch(/fleet-test-pkg<\/span> 1\.0-1 → 1\.1-1/);
    expect(updated.text).toContain('<td data-field="reboot_required">ja</td>');

    // Eleven finished actions: the newest ten, then a page with the oldest.
    for (let i = 0; i < 9; i++) {
      const id = await api({ type: 'apply_now' });
      await ctx.request('POST', `/api/v1/actions/${id}/cancel`);
    }
    const first = await page(admin);
    const history = /data-section="action-history"[\s\S]*?<\/table>/.exec(first.text)![0];
    expect(history.match(/<tr data-action=/g)).toHaveLength(10);
    expect(history).not.toContain(updates);
    const older = /href="(\/portal\/devices\/[^"]+\?actions_cursor=[^"#]+)#actions" rel="next"/.exec(first.text);
    expect(older).not.toBeNull();
    const second = await admin.get(older![1]!.replaceAll('&amp;', '&'));
    expect(second.status).toBe(200);
    const rest = /data-section="action-history"[\s\S]*?<\/table>/.exec(second.text)![0];
    expect(rest.match(/<tr data-action=/g)).toHaveLength(1);
    expect(rest).toContain(updates);
    expect(second.text).toContain('« Neueste');
    const bad = await admin.get(`/portal/devices/${agent.device_id}?actions_cursor=nonsense`);
    expect(bad.status).toBe(400);
    expect(bad.text).toContain('Diese Seitenangabe gehört nicht zu dieser Liste');
  });

  it('cancels a pending action once; a second cancel is refused in words and changes nothing', async () => {
    const { agent, admin, csrf } = await fleet();
    const token = await csrf(admin);
    await queue(admin, agent.device_id, token, { type: 'apply_now' });
    const [queued] = await actionsOf(agent.device_id);
    const back = `/portal/devices/${agent.device_id}`;
    const res = await admin.request('POST', `/portal/actions/${queued!.id}/cancel`, { _csrf: token, back });
    expect(res.status).toBe(303);
    expect(res.location).toBe(back);
    expect((await actionsOf(agent.device_id))[0]!.status).toBe('canceled');
    const after = await admin.get(back);
    expect(after.text).toContain('Jetzt anwenden abgebrochen');
    const row = new RegExp(`<tr data-action="${queued!.id}"[\\s\\S]*?</tr>`).exec(after.text)![0];
    expect(row).toContain('data-status="canceled"');
    expect(after.text).toContain('Keine offenen Aktionen.');
    const [audit] =
      await ctx.sql`select details from audit_events where target_id = ${queued!.id} and action = 'action.cancel'`;
    expect(audit!.details).toEqual({ type: 'apply_now' });

    const before = await databaseFingerprint(ctx.sql, { tables: ['portal_sessions'] });
    const again = await admin.request('POST', `/portal/actions/${queued!.id}/cancel`, { _csrf: token, back });
    expect(again.status).toBe(303);
    expect((await admin.get(back)).text).toContain('Nur eine wartende oder zugestellte Aktion lässt sich abbrechen');
    expect(await databaseFingerprint(ctx.sql, { tables: ['portal_sessions'] })).toBe(before);
  });

  it('bad input reads in the page language and queues nothing, at the confirmation and at a forged post', async () => {
    const { agent, admin, csrf } = await fleet();
    const token = await csrf(admin);
    const back = `/portal/devices/${agent.device_id}#actions`;
    for (const [form, words] of [
      [{ type: 'reboot', delay_seconds: '5000' }, 'Die Verzögerung muss eine ganze Zahl von 0 bis 3600 Sekunden sein.'],
      [{ type: 'reboot', delay_seconds: 'bald' }, 'Die Verzögerung muss'],
      [{ type: 'reboot', message: 'm'.repeat(201) }, 'Die Nachricht darf höchstens 200 Zeichen'],
      [{ type: 'script', interpreter: 'sh', script: '' }, 'Das Skript darf nicht leer sein'],
      [{ type: 'script', interpreter: 'sh', script: 'ä'.repeat(32_769) }, 'höchstens 64 KiB'],
      [{ type: 'script', interpreter: 'perl', script: 'print 1' }, 'sh, bash oder python3'],
      [{ type: 'script', interpreter: 'sh', script: 'true', timeout_seconds: '0' }, 'Das Zeitlimit muss'],
      [{ type: 'format_disk' }, 'Bitte eine Aktion wählen'],
    ] as const) {
      for (const path of ['actions/confirm', 'actions']) {
        const res = await admin.request('POST', `/portal/devices/${agent.device_id}/${path}`, {
          _csrf: token,
          ...form,
        });
        expect(res.status, `${path} ${JSON.stringify(form).slice(0, 80)}`).toBe(303);
        expect(res.location).toBe(back);
        const shown = await admin.get(`/portal/devices/${agent.device_id}`);
        expect(shown.text, JSON.stringify(form).slice(0, 80)).toContain(words);
      }
    }
    expect(await actionsOf(agent.device_id)).toEqual([]);
    expect(
      await ctx.sql`select 1 from audit_events where action = 'action.create'
                         and organization_id = ${agent.organization_id}`,
    ).toHaveLength(0);
  });

  it('a deprovisioned device offers no form, and a forged post is refused in words', async () => {
    const { agent, admin, csrf } = await fleet();
    const token = await csrf(admin);
    const dep = await ctx.request('POST', `/api/v1/devices/${agent.device_id}/deprovision`);
    expect(dep.status).toBe(200);
    const device = await admin.get(`/portal/devices/${agent.device_id}`);
    expect(device.text).toContain('Aktionen');
    expect(device.text).not.toContain('Neustart …');
    for (const path of ['actions/confirm', 'actions']) {
      const res = await admin.request('POST', `/portal/devices/${agent.device_id}/${path}`, {
        _csrf: token,
        type: 'apply_now',
      });
      expect(res.status).toBe(303);
    }
    expect((await admin.get(`/portal/devices/${agent.device_id}`)).text).toContain(
      'Das Gerät ist deprovisioniert und nimmt keine Aktionen an',
    );
    expect(await actionsOf(agent.device_id)).toEqual([]);
  });

  it('a viewer reads type, status and times, never a script or an output, and has no form; its forged posts are 403', async () => {
    const { agent, admin, viewer, csrf } = await fleet();
    const api = async (body: unknown) => {
      const res = await ctx.request('POST', `/api/v1/devices/${agent.device_id}/actions`, { body });
      expect(res.status).toBe(201);
      return res.body.id as string;
    };
    const done = await api({ type: 'script', parameters: { interpreter: 'sh', script: 'echo SCRIPT-TEXT-1' } });
    await finish(agent, done, { exit_code: 0, output: 'OUTPUT-TEXT-1', duration_ms: 10 });
    const pending = await api({ type: 'script', parameters: { interpreter: 'sh', script: 'echo SCRIPT-TEXT-2' } });
    expect((await admin.get(`/portal/actions/${done}`)).text).toContain('OUTPUT-TEXT-1');

    for (const path of [
      `/portal/devices/${agent.device_id}`,
      `/portal/actions/${done}`,
      `/portal/actions/${pending}`,
    ]) {
      const res = await viewer.get(path);
      expect(res.status, path).toBe(200);
      expect(res.text, path).toContain('Skript');
      expect(res.text, path).not.toMatch(/SCRIPT-TEXT|OUTPUT-TEXT/);
      expect(res.text, path).not.toContain('/cancel"');
      expect(res.text, path).not.toContain('/actions/confirm');
    }
    const device = await viewer.get(`/portal/devices/${agent.device_id}`);
    expect(device.text).toContain('data-status="succeeded"');
    expect(device.text).toContain('data-status="pending"');
    expect(device.text).not.toContain('Neustart …');

    const token = await csrf(viewer);
    const before = await databaseFingerprint(ctx.sql, { tables: ['portal_sessions'] });
    for (const [path, form] of [
      [`/portal/devices/${agent.device_id}/actions/confirm`, { type: 'apply_now' }],
      [`/portal/devices/${agent.device_id}/actions`, { type: 'apply_now' }],
      [`/portal/devices/${agent.device_id}/actions`, { type: 'script', interpreter: 'sh', script: 'id' }],
      [`/portal/actions/${pending}/cancel`, {}],
    ] as const) {
      const res = await viewer.request('POST', path, { _csrf: token, ...form });
      expect(res.status, path).toBe(403);
      expect(res.text).not.toContain('SCRIPT-TEXT');
    }
    expect(await databaseFingerprint(ctx.sql, { tables: ['portal_sessions'] })).toBe(before);
  });

  it('a post without the right CSRF token is 403 and changes nothing', async () => {
    const { agent, admin } = await fleet();
    const id = (
      await ctx.request('POST', `/api/v1/devices/${agent.device_id}/actions`, { body: { type: 'apply_now' } })
    ).body.id as string;
    const before = await databaseFingerprint(ctx.sql, { tables: ['portal_sessions'] });
    for (const csrf of [undefined, 'wrong-token']) {
      for (const [path, form] of [
        [`/portal/devices/${agent.device_id}/actions/confirm`, { type: 'reboot' }],
        [`/portal/devices/${agent.device_id}/actions`, { type: 'reboot' }],
        [`/portal/actions/${id}/cancel`, {}],
      ] as const) {
        const res = await admin.request('POST', path, { ...(csrf ? { _csrf: csrf } : {}), ...form });
        expect(res.status, `${path} ${csrf}`).toBe(403);
        expect(res.text).toContain('CSRF');
      }
    }
    expect(await databaseFingerprint(ctx.sql, { tables: ['portal_sessions'] })).toBe(before);
  });

  it("another organization's device and action are 404 on every page and form, and nothing changes", async () => {
    const mine = await fleet();
    const theirs = await enrollAgent(ctx);
    const action = (
      await ctx.request('POST', `/api/v1/devices/${theirs.device_id}/actions`, {
        body: { type: 'script', parameters: { interpreter: 'sh', script: 'echo THEIR-SCRIPT' } },
      })
    ).body.id as string;
    const token = await mine.csrf(mine.admin);
    const before = await databaseFingerprint(ctx.sql, { tables: ['portal_sessions'] });
    for (const path of [
      `/portal/devices/${theirs.device_id}`,
      `/portal/actions/${action}`,
      '/portal/actions/not-a-uuid',
    ]) {
      const res = await mine.admin.get(path);
      expect(res.status, path).toBe(404);
      expect(res.text).not.toContain('THEIR-SCRIPT');
    }
    for (const [path, form] of [
      [`/portal/devices/${theirs.device_id}/actions/confirm`, { type: 'apply_now' }],
      [`/portal/devices/${theirs.device_id}/actions`, { type: 'apply_now' }],
      [`/portal/actions/${action}/cancel`, {}],
    ] as const) {
      const res = await mine.admin.request('POST', path, { _csrf: token, ...form });
      expect(res.status, path).toBe(404);
    }
    expect(await databaseFingerprint(ctx.sql, { tables: ['portal_sessions'] })).toBe(before);
  });

  it('reads in English: the forms, the confirmation naming "1 device", the queue', async () => {
    const { agent, admin, csrf } = await fleet('en-GB,en;q=0.9');
    const device = await admin.get(`/portal/devices/${agent.device_id}`);
    for (const words of ['Actions', 'Reboot …', 'Apply now …', 'Apply updates …', 'Run script …', 'No open actions.']) {
      expect(device.text).toContain(words);
    }
    const { confirmation } = await queue(admin, agent.device_id, await csrf(admin), {
      type: 'apply_updates',
      security_only: 'true',
    });
    expect(confirmation.text).toContain('<strong data-field="count">1 device</strong>');
    expect(confirmation.text).toContain('Queue “Apply updates” for 1 device');
    expect(confirmation.text).toContain('security updates only');
    const after = await admin.get(`/portal/devices/${agent.device_id}`);
    expect(after.text).toContain('Apply updates queued');
    expect(after.text).toContain('waiting for the device');
  });
});
