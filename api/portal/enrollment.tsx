/**
 * Bringing devices in: enrollment sessions (create, devices used of the
 * quota, expiry, revoke) and ISO builds (trigger for a template or a session with an
 * optional WLAN, progress refreshing until done, download). Inputs are checked by the
 * API's own schemas; changes go through the services the API routes call.
 */
import { Hono } from 'hono';
import * as sessionOps from '../enrollment_sessions/operations.ts';
import { createSession, revokeSession } from '../enrollment_sessions/service.ts';
import { listEnrollmentSessions } from '../enrollment_sessions/repo.ts';
import { EnrollmentSessionCreate } from '../enrollment_sessions/schemas.ts';
import * as isoOps from '../iso_builds/operations.ts';
import { IsoBuildCreate } from '../iso_builds/schemas.ts';
import { serveIsoDownload, triggerIsoBuild } from '../iso_builds/service.ts';
import { listIsoBuilds } from '../iso_builds/repo.ts';
import { listTemplates } from '../templates/repo.ts';
import { auditPortalRead, canWrite, type PortalEnv, portalRead, postWrite } from './access.ts';
import { formFields, invalidInput, render, takeFlash, writeAndRedirect } from './http.tsx';
import { formatNumber, formatTime, t } from './i18n/index.ts';
import { IsoBuildTable } from './iso_build_table.tsx';
import { CsrfField, Layout } from './layout.tsx';

export function enrollmentRoutes() {
  const app = new Hono<PortalEnv>();

  app.get('/enrollment-sessions', async (c) => {
    const session = c.get('session');
    const org = session.organizationId!;
    const db = await portalRead(c, sessionOps.listEnrollmentSessions, { param: { id: org } });
    const [sessions, templates] = await Promise.all([
      listEnrollmentSessions(db, org, null, 500),
      listTemplates(db, null, 500),
    ]);
    const templateName = new Map(templates.map((tpl) => [tpl.id, tpl.name]));
    const now = Date.now();
    const { enrollment: text } = t();
    return render(
      c,
      <Layout title={text.title} session={session} flash={takeFlash(c)}>
        <p>
          {text.intro.before}
          <a href="/portal/iso-builds">{text.intro.isoBuilds}</a>
          {text.intro.after}
        </p>
        <h2>{text.new}</h2>
        <form method="post" action="/portal/enrollment-sessions">
          <CsrfField session={session} />
          <label for="template_id">{text.template}</label>
          <select id="template_id" name="template_id" required>
            {templates.map((tpl) => (
              <option value={tpl.id}>{tpl.name}</option>
            ))}
          </select>
          <label for="max_devices">{text.maxDevices}</label>
          <input id="max_devices" name="max_devices" type="number" min={1} max={100000} value="25" required />
          <label for="days">{text.days}</label>
          <input id="days" name="days" type="number" min={1} max={365} value="14" required />
          <p>
            <button type="submit">{text.create}</button>
          </p>
        </form>
        <h2>{text.sessions}</h2>
        {sessions.length === 0 ? (
          <p class="empty">{text.none}</p>
        ) : (
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">{text.session}</th>
                  <th scope="col">{text.template}</th>
                  <th scope="col">{text.devices}</th>
                  <th scope="col">{text.expires}</th>
                  <th scope="col">{text.status}</th>
                  <th scope="col">{text.action}</th>
                </tr>
              </thead>
              <tbody>
                {sessions.slice(0, 500).map((s) => {
                  const status = s.revoked_at
                    ? 'revoked'
                    : s.expires_at.getTime() <= now
                      ? 'expired'
                      : s.devices_used >= s.max_devices
                        ? 'exhausted'
                        : 'active';
                  return (
                    <tr>
                      <td>
                        <code>{s.id}</code>
                      </td>
                      <td>{templateName.get(s.template_id) ?? s.template_id}</td>
                      <td>{text.used(formatNumber(s.devices_used), formatNumber(s.max_devices))}</td>
                      <td>{formatTime(s.expires_at)}</td>
                      <td>{text.states[status]}</td>
                      <td>
                        {status === 'revoked' ? null : (
                          <form method="post" action={`/portal/enrollment-sessions/${s.id}/revoke`}>
                            <CsrfField session={session} />
                            <button type="submit" class="danger">
                              {text.revoke}
                            </button>
                          </form>
                        )}
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
        )}
      </Layout>,
    );
  });

  postWrite(app, '/enrollment-sessions', sessionOps.createEnrollmentSession, async (c, write) => {
    const org = c.get('session').organizationId!;
    const fields = await formFields(c);
    return writeAndRedirect(c, '/portal/enrollment-sessions', t().enrollment.created, () => {
      const days = Number(fields.days);
      const parsed = EnrollmentSessionCreate.safeParse({
        template_id: fields.template_id,
        max_devices: Number(fields.max_devices),
        expires_at:
          Number.isInteger(days) && days >= 1 && days <= 365
            ? new Date(Date.now() + days * 86_400_000).toISOString()
            : '',
      });
      if (!parsed.success) throw invalidInput(parsed.error);
      return write({ param: { id: org }, json: parsed.data }, async (tx) => {
        const { audit } = await createSession(tx, org, parsed.data);
        return { audit, result: null };
      });
    });
  });

  postWrite(app, '/enrollment-sessions/:id/revoke', sessionOps.revokeEnrollmentSession, async (c, write) => {
    const id = c.req.param('id');
    return writeAndRedirect(c, '/portal/enrollment-sessions', t().enrollment.revokedFlash, () =>
      write({ param: { id } }, async (tx) => {
        const { audit } = await revokeSession(tx, id);
        return { audit, result: null };
      }),
    );
  });

  app.get('/iso-builds', async (c) => {
    const { isoBuilds: text } = t();
    const session = c.get('session');
    const org = session.organizationId!;
    const db = await portalRead(c, isoOps.listIsoBuilds, { param: { id: org } });
    const write = canWrite(session);
    const [builds, templates, sessions] = await Promise.all([
      listIsoBuilds(db, org, null, 500),
      listTemplates(db, null, 500),
      write ? listEnrollmentSessions(db, org, null, 500) : Promise.resolve([]),
    ]);
    const newest = [...builds].reverse().slice(0, 100);
    const busy = newest.some((b) => b.status === 'pending' || b.status === 'running');
    const templateName = new Map(templates.map((template) => [template.id, template.name]));
    const usable = sessions.filter((s) => !s.revoked_at && s.expires_at.getTime() > Date.now());
    return render(
      c,
      <Layout title={text.title} session={session} flash={takeFlash(c)} refreshSeconds={busy ? 2 : undefined}>
        {write ? (
          <>
            <h2>{text.newTitle}</h2>
            <form method="post" action="/portal/iso-builds">
              <CsrfField session={session} />
              <label for="source">{text.for}</label>
              <select id="source" name="source">
                {usable.map((s) => (
                  <option value={`session:${s.id}`}>
                    {text.sessionOption(
                      s.id.slice(0, 8),
                      templateName.get(s.template_id) ?? s.template_id,
                      formatNumber(s.devices_used),
                      formatNumber(s.max_devices),
                    )}
                  </option>
                ))}
                {templates.map((template) => (
                  <option value={`template:${template.id}`}>{text.templateOption(template.name)}</option>
                ))}
              </select>
              <fieldset>
                <legend>{text.wlan}</legend>
                <label for="ssid">{text.ssid}</label>
                <input id="ssid" name="ssid" autocomplete="off" maxlength={32} />
                <label for="psk">{text.psk}</label>
                <input id="psk" name="psk" type="password" autocomplete="off" maxlength={63} />
              </fieldset>
              <p>
                <button type="submit">{text.submit}</button>
              </p>
            </form>
          </>
        ) : null}
        <h2>{text.builds}</h2>
        {busy ? <p class="muted">{text.refreshing}</p> : null}
        {newest.length === 0 ? (
          <p class="empty">{write ? text.noneAdmin : text.noneViewer}</p>
        ) : (
          <IsoBuildTable builds={newest} templateName={templateName} admin={write} />
        )}
      </Layout>,
    );
  });

  postWrite(app, '/iso-builds', isoOps.createIsoBuild, async (c, write) => {
    const org = c.get('session').organizationId!;
    const fields = await formFields(c);
    return writeAndRedirect(c, '/portal/iso-builds', t().isoBuilds.started, () => {
      const [kind, id] = (fields.source ?? '').split(':');
      const wlan = fields.ssid || fields.psk ? { ssid: fields.ssid ?? '', psk: fields.psk ?? '' } : undefined;
      const parsed = IsoBuildCreate.safeParse({
        ...(kind === 'session' ? { enrollment_session_id: id } : { template_id: id }),
        ...(wlan ? { wlan } : {}),
      });
      if (!parsed.success) throw invalidInput(parsed.error);
      return write({ param: { id: org }, json: parsed.data }, async (tx) => {
        const { audit } = await triggerIsoBuild(tx, c.get('deps'), org, parsed.data);
        return { audit, result: null };
      });
    });
  });

  app.get('/iso-builds/:id/download', async (c) => {
    const id = c.req.param('id');
    const db = await portalRead(c, isoOps.downloadIsoBuild, { param: { id } });
    const res = await serveIsoDownload(c, db, id, c.req.header('range'), c.req.header('if-range'));
    // An image carries the code or a session id: its download is audited as the API's is.
    if (res.status < 400) await auditPortalRead(c, isoOps.downloadIsoBuild, 'iso_build', id);
    return res;
  });
  return app;
}
