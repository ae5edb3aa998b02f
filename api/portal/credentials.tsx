/**
 * The organization's credentials for other systems: API keys (create with a role and an
 * optional expiry, revoke after a confirmation) and webhooks (subscribe a URL to events,
 * delete after a confirmation). A new key or signing secret is shown once, in the answer
 * to the POST itself (never in a cookie or a URL; Cache-Control no-store), and never again.
 * Changes go through the services the API routes call, with the routes' audit actions.
 */
import { Hono } from 'hono';
import * as keyOps from '../api_keys/operations.ts';
import { getApiKey, listApiKeys } from '../api_keys/repo.ts';
import { ApiKeyCreate } from '../api_keys/schemas.ts';
import { createKey, revokeKey } from '../api_keys/service.ts';
import { ApiError } from '../http/errors.ts';
import * as webhookOps from '../webhooks/operations.ts';
import { getWebhook, listWebhooks } from '../webhooks/repo.ts';
import { WEBHOOK_EVENT_TYPES, WebhookCreate } from '../webhooks/schemas.ts';
import { subscribe, unsubscribe } from '../webhooks/service.ts';
import { type PortalEnv, portalRead, postWrite } from './access.ts';
import { formatTime, formFields, invalidInput, redirectWith, render, takeFlash, writeAndRedirect } from './http.tsx';
import { CsrfField, Layout } from './layout.tsx';

/** Runs a create whose result page shows a secret; a refusal goes back to the form as a message. */
async function createOrBack<T>(c: Parameters<typeof redirectWith>[0], back: string, create: () => Promise<T>) {
  try {
    return { result: await create() };
  } catch (err) {
    if (err instanceof ApiError && [400, 409, 422].includes(err.status)) {
      return { response: redirectWith(c, back, { kind: 'error', text: err.message }) };
    }
    throw err;
  }
}

export function credentialRoutes() {
  const app = new Hono<PortalEnv>();

  app.get('/api-keys', async (c) => {
    const session = c.get('session');
    const org = session.organizationId!;
    const db = await portalRead(c, keyOps.listApiKeys, { param: { id: org } });
    const keys = await listApiKeys(db, org, null, 500);
    return render(
      c,
      <Layout title="API-Schlüssel" session={session} flash={takeFlash(c)}>
        <form method="post" action="/portal/api-keys">
          <CsrfField session={session} />
          <h2>Neuer API-Schlüssel</h2>
          <label for="name">Name</label>
          <input id="name" name="name" required maxlength={200} />
          <label for="role">Rolle</label>
          <select id="role" name="role">
            <option value="viewer">Leser (nur lesen)</option>
            <option value="admin">Admin (alles in dieser Organisation)</option>
          </select>
          <label for="expires_on">Läuft ab am (optional, Ende des Tages UTC)</label>
          <input id="expires_on" name="expires_on" type="date" />
          <p>
            <button type="submit">Schlüssel erstellen</button>
          </p>
        </form>
        <table>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Rolle</th>
              <th scope="col">Präfix</th>
              <th scope="col">Zuletzt benutzt</th>
              <th scope="col">Läuft ab</th>
              <th scope="col">Widerrufen</th>
            </tr>
          </thead>
          <tbody>
            {keys.slice(0, 500).map((k) => (
              <tr>
                <td>{k.name}</td>
                <td>{k.role === 'admin' ? 'Admin' : 'Leser'}</td>
                <td>
                  <code>{k.prefix}</code>
                </td>
                <td>{formatTime(k.last_used_at)}</td>
                <td>{formatTime(k.expires_at)}</td>
                <td>
                  {k.revoked_at ? (
                    formatTime(k.revoked_at)
                  ) : (
                    <a href={`/portal/api-keys/${k.id}/revoke`}>Widerrufen …</a>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </Layout>,
    );
  });

  postWrite(app, '/api-keys', keyOps.createApiKey, async (c, write) => {
    const session = c.get('session');
    const org = session.organizationId!;
    const fields = await formFields(c);
    const done = await createOrBack(c, '/portal/api-keys', () => {
      const parsed = ApiKeyCreate.safeParse({
        name: fields.name,
        role: fields.role,
        ...(fields.expires_on ? { expires_at: `${fields.expires_on}T23:59:59Z` } : {}),
      });
      if (!parsed.success) throw invalidInput(parsed.error);
      return write({ param: { id: org } }, (tx) =>
        createKey(tx, org, parsed.data).then(({ row, key, audit }) => ({ audit, result: { row, key } })),
      );
    });
    if (done.response) return done.response;
    const { row, key } = done.result;
    return render(
      c,
      <Layout title="API-Schlüssel erstellt" session={session}>
        <p>
          Der Schlüssel „{row.name}“ ({row.role === 'admin' ? 'Admin' : 'Leser'}) wurde erstellt. Kopieren Sie ihn
          jetzt: <strong>er wird nur dieses eine Mal angezeigt</strong> und ist nur als Hash gespeichert.
        </p>
        <label for="key">Schlüssel</label>
        <input id="key" readonly value={key} size={60} />
        <p>
          <a href="/portal/api-keys">Zurück zu den API-Schlüsseln</a>
        </p>
      </Layout>,
      201,
    );
  });

  app.get('/api-keys/:id/revoke', async (c) => {
    const session = c.get('session');
    const id = c.req.param('id').toLowerCase();
    const db = await portalRead(c, keyOps.revokeApiKey, { param: { id } });
    const key = await getApiKey(db, id);
    return render(
      c,
      <Layout title="API-Schlüssel widerrufen" session={session}>
        <p>
          Den Schlüssel „{key!.name}“ (<code>{key!.prefix}</code>) widerrufen? Er funktioniert danach sofort nicht mehr,
          und Portal-Sitzungen mit ihm enden.
        </p>
        <form method="post" action={`/portal/api-keys/${id}/revoke`}>
          <CsrfField session={session} />
          <button type="submit" class="danger">
            Widerrufen
          </button>{' '}
          <a href="/portal/api-keys">Abbrechen</a>
        </form>
      </Layout>,
    );
  });

  postWrite(app, '/api-keys/:id/revoke', keyOps.revokeApiKey, async (c, write) => {
    const id = c.req.param('id').toLowerCase();
    return writeAndRedirect(c, '/portal/api-keys', 'API-Schlüssel widerrufen.', () =>
      write({ param: { id } }, (tx) => revokeKey(tx, id).then(({ audit }) => ({ audit, result: null }))),
    );
  });

  app.get('/webhooks', async (c) => {
    const session = c.get('session');
    const org = session.organizationId!;
    const db = await portalRead(c, webhookOps.listWebhooks, { param: { id: org } });
    const hooks = await listWebhooks(db, org, null, 500);
    return render(
      c,
      <Layout title="Webhooks" session={session} flash={takeFlash(c)}>
        <form method="post" action="/portal/webhooks">
          <CsrfField session={session} />
          <h2>Neuer Webhook</h2>
          <label for="url">URL (https)</label>
          <input id="url" name="url" type="url" required maxlength={2048} />
          <fieldset>
            <legend>Ereignisse</legend>
            {WEBHOOK_EVENT_TYPES.map((event) => (
              <label>
                <input type="checkbox" name={`event:${event}`} value="on" /> <code>{event}</code>
              </label>
            ))}
          </fieldset>
          <p>
            <button type="submit">Webhook anlegen</button>
          </p>
        </form>
        {hooks.length === 0 ? (
          <p class="empty">Noch keine Webhooks: legen Sie oben den ersten an.</p>
        ) : (
          <table>
            <thead>
              <tr>
                <th scope="col">URL</th>
                <th scope="col">Ereignisse</th>
                <th scope="col">Status</th>
                <th scope="col">Aktion</th>
              </tr>
            </thead>
            <tbody>
              {hooks.slice(0, 500).map((h) => (
                <tr>
                  <td>{h.url}</td>
                  <td>{h.events.join(', ')}</td>
                  <td>{h.disabled_at ? `deaktiviert seit ${formatTime(h.disabled_at)}` : 'aktiv'}</td>
                  <td>
                    <a href={`/portal/webhooks/${h.id}/delete`}>Löschen …</a>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Layout>,
    );
  });

  postWrite(app, '/webhooks', webhookOps.createWebhook, async (c, write) => {
    const session = c.get('session');
    const org = session.organizationId!;
    const fields = await formFields(c);
    const done = await createOrBack(c, '/portal/webhooks', () => {
      const events = WEBHOOK_EVENT_TYPES.filter((e) => fields[`event:${e}`] === 'on');
      const parsed = WebhookCreate.safeParse({ url: fields.url, events });
      if (!parsed.success) throw invalidInput(parsed.error);
      const { config } = c.get('deps');
      return write({ param: { id: org } }, (tx) =>
        subscribe(tx, config, org, parsed.data).then(({ row, secret, audit }) => ({ audit, result: { row, secret } })),
      );
    });
    if (done.response) return done.response;
    const { row, secret } = done.result;
    return render(
      c,
      <Layout title="Webhook angelegt" session={session}>
        <p>
          Der Webhook für <code>{row.url}</code> wurde angelegt. Kopieren Sie das Signatur-Geheimnis jetzt:{' '}
          <strong>es wird nur dieses eine Mal angezeigt</strong>. Jede Zustellung trägt den Header{' '}
          <code>Fleet-Signature</code>, ein HMAC-SHA256 mit diesem Geheimnis.
        </p>
        <label for="secret">Signatur-Geheimnis</label>
        <input id="secret" readonly value={secret} size={60} />
        <p>
          <a href="/portal/webhooks">Zurück zu den Webhooks</a>
        </p>
      </Layout>,
      201,
    );
  });

  app.get('/webhooks/:id/delete', async (c) => {
    const session = c.get('session');
    const id = c.req.param('id').toLowerCase();
    const db = await portalRead(c, webhookOps.deleteWebhook, { param: { id } });
    const hook = await getWebhook(db, id);
    return render(
      c,
      <Layout title="Webhook löschen" session={session}>
        <p>
          Den Webhook für <code>{hook!.url}</code> mit seinen Zustellungen löschen? Es wird nichts mehr an ihn gesendet.
        </p>
        <form method="post" action={`/portal/webhooks/${id}/delete`}>
          <CsrfField session={session} />
          <button type="submit" class="danger">
            Löschen
          </button>{' '}
          <a href="/portal/webhooks">Abbrechen</a>
        </form>
      </Layout>,
    );
  });

  postWrite(app, '/webhooks/:id/delete', webhookOps.deleteWebhook, async (c, write) => {
    const id = c.req.param('id').toLowerCase();
    return writeAndRedirect(c, '/portal/webhooks', 'Webhook gelöscht.', () =>
      write({ param: { id } }, (tx) => unsubscribe(tx, id).then(({ audit }) => ({ audit, result: null }))),
    );
  });
  return app;
}
