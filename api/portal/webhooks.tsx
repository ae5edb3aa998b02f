/**
 * The organization's webhooks: subscribe a URL to events (the signing secret shown once),
 * each with its status in the API's terms and its last deliveries (status, attempts, last
 * error), a test event on request, and delete after a confirmation. Changes go through the
 * services the API routes call, with the routes' declarations and audit actions.
 */
import { Hono } from 'hono';
import { ApiError } from '../http/errors.ts';
import * as webhookOps from '../webhooks/operations.ts';
import { type DeliveryRow, getWebhook, listRecentDeliveries, listWebhooks, type WebhookRow } from '../webhooks/repo.ts';
import { WEBHOOK_EVENT_TYPES, WebhookCreate } from '../webhooks/schemas.ts';
import { sendTestEvent, subscribe, unsubscribe } from '../webhooks/service.ts';
import { type PortalEnv, portalRead, postWrite } from './access.ts';
import { createOrBack } from './credentials.tsx';
import { formFields, invalidInput, render, takeFlash, writeAndRedirect } from './http.tsx';
import { formatTime } from './i18n/index.ts';
import { CsrfField, Layout } from './layout.tsx';

/** Deliveries shown per webhook. */
const RECENT = 5;

/** The strings of this module, in one place. */
const text = {
  title: 'Webhooks',
  newTitle: 'Neuer Webhook',
  url: 'URL (https)',
  events: 'Ereignisse',
  create: 'Webhook anlegen',
  none: 'Noch keine Webhooks: legen Sie oben den ersten an.',
  status: 'Status',
  deliveries: (n: number) => `Letzte Zustellungen (höchstens ${n}, neueste zuerst)`,
  noDeliveries: 'Noch keine Zustellung.',
  time: 'Angelegt',
  event: 'Ereignis',
  deliveryStatus: 'Zustellung',
  attempts: 'Versuche',
  lastError: 'Letzter Fehler',
  next: 'Nächster Versuch / zugestellt',
  test: 'Test-Ereignis senden',
  testHint: 'Sendet nur diesem Webhook ein signiertes Ereignis webhook.test; die Zustellung erscheint hier.',
  testSent: 'Test-Ereignis eingereiht: die Zustellung steht unten beim Webhook (Seite neu laden für das Ergebnis).',
  testRefused: 'Dieser Webhook ist deaktiviert und sendet nichts mehr: löschen Sie ihn und legen Sie ihn neu an.',
  delete: 'Löschen …',
  deleteTitle: 'Webhook löschen',
  deleteQuestion: (url: string) =>
    `Den Webhook für ${url} mit seinen Zustellungen löschen? Es wird nichts mehr an ihn gesendet.`,
  deleteButton: 'Löschen',
  cancel: 'Abbrechen',
  deleted: 'Webhook gelöscht.',
  createdTitle: 'Webhook angelegt',
  secret: 'Signatur-Geheimnis',
  back: 'Zurück zu den Webhooks',
  /** The webhook's state in the API's terms: `disabled_at`, and what its deliveries say. */
  disabled: (at: string) =>
    `deaktiviert seit ${at}: Zustellungen schlugen 3 Tage lang fehl, es wird nichts mehr gesendet`,
  idle: 'aktiv, noch keine Zustellung',
  delivered: (at: string) => `aktiv, zuletzt zugestellt ${at}`,
  retrying: (attempts: number) => `aktiv, Zustellung schlägt fehl: ${attempts} Versuche, wird wiederholt`,
  failing: 'aktiv, letzte Zustellung endgültig fehlgeschlagen',
  pending: 'aktiv, Zustellung wartet',
} as const;

/** The status badge's colour: green delivered, yellow waiting, red failing or disabled. */
const badgeOf = { ok: 'converged', idle: '', pending: 'pending', failing: 'failed', disabled: 'failed' } as const;

/** A delivery's `status` as the API names it. */
const deliveryLabel: Record<DeliveryRow['status'], string> = {
  pending: 'wartet',
  delivered: 'zugestellt',
  failed: 'fehlgeschlagen',
};

/**
 * The webhook's status in words that say what the API says: disabled, or by its newest
 * delivery (delivered, failed for good, being retried, waiting for its first attempt).
 */
function webhookStatus(hook: Pick<WebhookRow, 'disabled_at'>, recent: DeliveryRow[]) {
  if (hook.disabled_at) return { kind: 'disabled', label: text.disabled(formatTime(hook.disabled_at)) } as const;
  const newest = recent[0];
  if (newest === undefined) return { kind: 'idle', label: text.idle } as const;
  if (newest.status === 'delivered')
    return { kind: 'ok', label: text.delivered(formatTime(newest.delivered_at)) } as const;
  if (newest.status === 'failed') return { kind: 'failing', label: text.failing } as const;
  if (newest.attempts > 0) return { kind: 'failing', label: text.retrying(newest.attempts) } as const;
  return { kind: 'pending', label: text.pending } as const;
}

function Deliveries(props: { rows: DeliveryRow[] }) {
  if (props.rows.length === 0) return <p class="muted">{text.noDeliveries}</p>;
  return (
    <table class="deliveries">
      <thead>
        <tr>
          <th scope="col">{text.time}</th>
          <th scope="col">{text.event}</th>
          <th scope="col">{text.deliveryStatus}</th>
          <th scope="col" class="number">
            {text.attempts}
          </th>
          <th scope="col">{text.lastError}</th>
          <th scope="col">{text.next}</th>
        </tr>
      </thead>
      <tbody>
        {props.rows.map((d) => (
          <tr data-delivery={d.id} data-status={d.status}>
            <td>{formatTime(d.created_at)}</td>
            <td>
              <code>{d.event}</code>
            </td>
            <td data-field="status">
              <span class={`badge ${d.status === 'delivered' ? 'converged' : d.status}`}>
                {deliveryLabel[d.status]}
              </span>
            </td>
            <td class="number" data-field="attempts">
              {d.attempts}
            </td>
            <td data-field="error" class="report-message">
              {d.last_error ?? (d.last_status_code === null ? '–' : `HTTP ${d.last_status_code}`)}
            </td>
            <td>{d.status === 'delivered' ? formatTime(d.delivered_at) : formatTime(d.next_attempt_at)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function webhookRoutes() {
  const app = new Hono<PortalEnv>();

  app.get('/webhooks', async (c) => {
    const session = c.get('session');
    const org = session.organizationId!;
    const db = await portalRead(c, webhookOps.listWebhooks, { param: { id: org } });
    const [hooks, recent] = await Promise.all([
      listWebhooks(db, org, null, 500),
      listRecentDeliveries(db, org, RECENT),
    ]);
    return render(
      c,
      <Layout title={text.title} session={session} flash={takeFlash(c)}>
        <form method="post" action="/portal/webhooks">
          <CsrfField session={session} />
          <h2>{text.newTitle}</h2>
          <label for="url">{text.url}</label>
          <input id="url" name="url" type="url" required maxlength={2048} />
          <fieldset>
            <legend>{text.events}</legend>
            {WEBHOOK_EVENT_TYPES.map((event) => (
              <label>
                <input type="checkbox" name={`event:${event}`} value="on" /> <code>{event}</code>
              </label>
            ))}
          </fieldset>
          <p>
            <button type="submit">{text.create}</button>
          </p>
        </form>
        {hooks.length === 0 ? <p class="empty">{text.none}</p> : null}
        {hooks.slice(0, 500).map((h) => {
          const rows = recent.get(h.id) ?? [];
          const status = webhookStatus(h, rows);
          return (
            <section class="webhook" data-webhook={h.id}>
              <h2 class="webhook-url">{h.url}</h2>
              <p>
                {text.events}: {h.events.join(', ')}
              </p>
              <p data-field="webhook-status" data-status={status.kind}>
                {text.status}: <span class={`badge ${badgeOf[status.kind]}`}>{status.label}</span>
              </p>
              <h3>{text.deliveries(RECENT)}</h3>
              <Deliveries rows={rows} />
              <div>
                {h.disabled_at ? null : (
                  <form class="inline" method="post" action={`/portal/webhooks/${h.id}/test`}>
                    <CsrfField session={session} />
                    <button type="submit" class="secondary" title={text.testHint}>
                      {text.test}
                    </button>{' '}
                  </form>
                )}
                <a href={`/portal/webhooks/${h.id}/delete`}>{text.delete}</a>
              </div>
            </section>
          );
        })}
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
      <Layout title={text.createdTitle} session={session}>
        <p>
          Der Webhook für <code>{row.url}</code> wurde angelegt. Kopieren Sie das Signatur-Geheimnis jetzt:{' '}
          <strong>es wird nur dieses eine Mal angezeigt</strong>. Jede Zustellung trägt den Header{' '}
          <code>Fleet-Signature</code>, ein HMAC-SHA256 mit diesem Geheimnis.
        </p>
        <label for="secret">{text.secret}</label>
        <input id="secret" readonly value={secret} size={60} />
        <p>
          <a href="/portal/webhooks">{text.back}</a>
        </p>
      </Layout>,
      201,
    );
  });

  postWrite(app, '/webhooks/:id/test', webhookOps.testWebhook, async (c, write) => {
    const id = c.req.param('id').toLowerCase();
    return writeAndRedirect(c, '/portal/webhooks', text.testSent, () =>
      write({ param: { id } }, async (tx) => {
        try {
          const { audit } = await sendTestEvent(tx, id);
          return { audit, result: null };
        } catch (err) {
          if (err instanceof ApiError && err.code === 'invalid_request') throw new ApiError(err.code, text.testRefused);
          throw err;
        }
      }),
    );
  });

  app.get('/webhooks/:id/delete', async (c) => {
    const session = c.get('session');
    const id = c.req.param('id').toLowerCase();
    const db = await portalRead(c, webhookOps.deleteWebhook, { param: { id } });
    const hook = await getWebhook(db, id);
    return render(
      c,
      <Layout title={text.deleteTitle} session={session}>
        <p>{text.deleteQuestion(hook!.url)}</p>
        <form method="post" action={`/portal/webhooks/${id}/delete`}>
          <CsrfField session={session} />
          <button type="submit" class="danger">
            {text.deleteButton}
          </button>{' '}
          <a href="/portal/webhooks">{text.cancel}</a>
        </form>
      </Layout>,
    );
  });

  postWrite(app, '/webhooks/:id/delete', webhookOps.deleteWebhook, async (c, write) => {
    const id = c.req.param('id').toLowerCase();
    return writeAndRedirect(c, '/portal/webhooks', text.deleted, () =>
      write({ param: { id } }, (tx) => unsubscribe(tx, id).then(({ audit }) => ({ audit, result: null }))),
    );
  });
  return app;
}
