/**
 * The organization's webhooks: subscribe a URL to events (the signing secret shown once),
 * each with its status in the API's terms and its last deliveries (status, attempts, last
 * error) each with a page of its attempts, a test event on request, and delete after a
 * confirmation. Changes go through the services the API routes call, with the routes'
 * declarations and audit actions.
 */
import { type Context, Hono } from 'hono';
import { ApiError, notFound } from '../http/errors.ts';
import * as webhookOps from '../webhooks/operations.ts';
import {
  type DeliveryRow,
  getDelivery,
  getWebhook,
  listAttempts,
  listRecentDeliveries,
  listWebhooks,
  type WebhookRow,
} from '../webhooks/repo.ts';
import { WEBHOOK_EVENT_TYPES, WebhookCreate } from '../webhooks/schemas.ts';
import { sendTestEvent, subscribe, unsubscribe } from '../webhooks/service.ts';
import { type PortalEnv, portalRead, postWrite } from './access.ts';
import { formFields, invalidInput, render, takeFlash, writeAndRedirect } from './http.tsx';
import { formatNumber, formatTime, t } from './i18n/index.ts';
import { CsrfField, type Flash, Layout } from './layout.tsx';
import { refusalText } from './refusals.ts';

/** Deliveries shown per webhook. */
const RECENT = 5;

/** The status badge's colour: green delivered, yellow waiting, red failing or disabled. */
const badgeOf = { ok: 'converged', idle: '', pending: 'pending', failing: 'failed', disabled: 'failed' } as const;

/**
 * The webhook's status in words that say what the API says: disabled, or by its newest
 * delivery (delivered, failed for good, being retried, waiting for its first attempt).
 */
function webhookStatus(hook: Pick<WebhookRow, 'disabled_at'>, recent: DeliveryRow[]) {
  const { webhooks: text } = t();
  if (hook.disabled_at) return { kind: 'disabled', label: text.disabled(formatTime(hook.disabled_at)) } as const;
  const newest = recent[0];
  if (newest === undefined) return { kind: 'idle', label: text.idle } as const;
  if (newest.status === 'delivered')
    return { kind: 'ok', label: text.delivered(formatTime(newest.delivered_at)) } as const;
  if (newest.status === 'failed') return { kind: 'failing', label: text.failing } as const;
  if (newest.attempts > 0) return { kind: 'failing', label: text.retrying(newest.attempts) } as const;
  return { kind: 'pending', label: text.pending } as const;
}

/** A delivery's last outcome: the error, else the HTTP status, else none yet. */
const outcomeOf = (d: Pick<DeliveryRow, 'last_error' | 'last_status_code'>) =>
  d.last_error ?? (d.last_status_code === null ? '–' : `HTTP ${d.last_status_code}`);

const deliveryBadge = (status: DeliveryRow['status']) => (
  <span class={`badge ${status === 'delivered' ? 'converged' : status}`}>{t().webhooks.deliveryLabel[status]}</span>
);

function Deliveries(props: { webhookId: string; rows: DeliveryRow[] }) {
  const { webhooks: text } = t();
  if (props.rows.length === 0) return <p class="muted">{text.noDeliveries}</p>;
  return (
    <div class="table-wrap">
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
            <th scope="col">
              <span class="visually-hidden">{text.showAttempts}</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {props.rows.map((d) => (
            <tr data-delivery={d.id} data-status={d.status}>
              <td>{formatTime(d.created_at)}</td>
              <td>
                <code>{d.event}</code>
              </td>
              <td data-field="status">{deliveryBadge(d.status)}</td>
              <td class="number" data-field="attempts">
                {formatNumber(d.attempts)}
              </td>
              <td data-field="error" class="report-message">
                {outcomeOf(d)}
              </td>
              <td>{d.status === 'delivered' ? formatTime(d.delivered_at) : formatTime(d.next_attempt_at)}</td>
              <td>
                <a href={`/portal/webhooks/${props.webhookId}/deliveries/${d.id}`}>{text.showAttempts}</a>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** What the new webhook form holds: empty, or what was sent when it was refused. */
interface WebhookForm {
  url: string;
  events: ReadonlySet<string>;
}

const emptyForm: WebhookForm = { url: '', events: new Set() };

/**
 * The webhooks page: the form for a new one (holding `form`, so a refused URL and its
 * ticked events need not be entered again) and each webhook with its backlog and last
 * deliveries.
 */
async function webhooksPage(c: Context<PortalEnv>, flash: Flash | null, form = emptyForm, status: 200 | 400 = 200) {
  const { webhooks: text } = t();
  const session = c.get('session');
  const org = session.organizationId!;
  const db = await portalRead(c, webhookOps.listWebhooks, { param: { id: org } });
  const [hooks, recent] = await Promise.all([listWebhooks(db, org, null, 500), listRecentDeliveries(db, org, RECENT)]);
  return render(
    c,
    <Layout title={text.title} session={session} flash={flash}>
      <form method="post" action="/portal/webhooks">
        <CsrfField session={session} />
        <h2>{text.newTitle}</h2>
        <label for="url">{text.url}</label>
        <input id="url" name="url" type="url" required maxlength={2048} value={form.url} />
        <fieldset>
          <legend>{text.events}</legend>
          {WEBHOOK_EVENT_TYPES.map((event) => (
            <label>
              <input type="checkbox" name={`event:${event}`} value="on" checked={form.events.has(event)} />{' '}
              <code>{event}</code>
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
        const state = webhookStatus(h, rows);
        return (
          <section class="webhook" data-webhook={h.id}>
            <h2 class="webhook-url">{h.url}</h2>
            <p>
              {text.events}: {h.events.join(', ')}
            </p>
            <p data-field="webhook-status" data-status={state.kind}>
              {text.status}: <span class={`badge ${badgeOf[state.kind]}`}>{state.label}</span>
            </p>
            <p>
              {text.pendingDeliveries}:{' '}
              <strong data-field="pending-deliveries" data-value={String(h.pending_deliveries)}>
                {formatNumber(h.pending_deliveries)}
              </strong>
            </p>
            <h3>{text.deliveries(RECENT)}</h3>
            <Deliveries webhookId={h.id} rows={rows} />
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
    status,
  );
}

export function webhookRoutes() {
  const app = new Hono<PortalEnv>();

  app.get('/webhooks', (c) => webhooksPage(c, takeFlash(c)));

  postWrite(app, '/webhooks', webhookOps.createWebhook, async (c, write) => {
    const { webhooks: text } = t();
    const session = c.get('session');
    const org = session.organizationId!;
    const fields = await formFields(c);
    const events = WEBHOOK_EVENT_TYPES.filter((e) => fields[`event:${e}`] === 'on');
    let done: { row: WebhookRow; secret: string };
    try {
      const parsed = WebhookCreate.safeParse({ url: fields.url, events });
      if (!parsed.success) throw invalidInput(parsed.error);
      const { config } = c.get('deps');
      done = await write({ param: { id: org } }, (tx) =>
        subscribe(tx, config, org, parsed.data).then(({ row, secret, audit }) => ({ audit, result: { row, secret } })),
      );
    } catch (err) {
      // Refused: the same page again, with what was entered and why.
      if (!(err instanceof ApiError) || ![400, 409, 422].includes(err.status)) throw err;
      const form = { url: (fields.url ?? '').slice(0, 2048), events: new Set<string>(events) };
      return webhooksPage(c, { kind: 'error', text: refusalText(err) }, form, 400);
    }
    const { row, secret } = done;
    return render(
      c,
      <Layout title={text.createdTitle} session={session}>
        <p>
          {text.created.before} <code>{row.url}</code> {text.created.after} <strong>{text.created.once}</strong>
          {text.created.header} <code>Fleet-Signature</code>
          {text.created.signature}
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
    const { webhooks: text } = t();
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
    const { webhooks: text } = t();
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

  // One delivery's attempts, as `GET /webhooks/{id}/deliveries/{delivery_id}/attempts` lists them.
  app.get('/webhooks/:id/deliveries/:delivery_id', async (c) => {
    const { webhooks: text } = t();
    const session = c.get('session');
    const id = c.req.param('id').toLowerCase();
    const deliveryId = c.req.param('delivery_id').toLowerCase();
    const db = await portalRead(c, webhookOps.listWebhookDeliveryAttempts, {
      param: { id, delivery_id: deliveryId },
    });
    const [hook, delivery, attempts] = await Promise.all([
      getWebhook(db, id),
      getDelivery(db, id, deliveryId),
      listAttempts(db, id, deliveryId),
    ]);
    if (hook === null || delivery === null || attempts === null) throw notFound('webhook delivery', deliveryId);
    const page = text.delivery;
    return render(
      c,
      <Layout title={page.title(delivery.event)} session={session}>
        <div class="table-wrap">
          <table class="hardware" data-delivery={delivery.id} data-status={delivery.status}>
            <tbody>
              <tr>
                <th scope="row">{page.webhook}</th>
                <td class="webhook-url">{hook.url}</td>
              </tr>
              <tr>
                <th scope="row">{text.event}</th>
                <td>
                  <code>{delivery.event}</code>
                </td>
              </tr>
              <tr>
                <th scope="row">{page.created}</th>
                <td>{formatTime(delivery.created_at)}</td>
              </tr>
              <tr>
                <th scope="row">{page.status}</th>
                <td data-field="status">{deliveryBadge(delivery.status)}</td>
              </tr>
              {delivery.status === 'failed' ? null : (
                <tr>
                  <th scope="row">{delivery.status === 'delivered' ? page.deliveredAt : page.nextAttempt}</th>
                  <td>
                    {formatTime(delivery.status === 'delivered' ? delivery.delivered_at : delivery.next_attempt_at)}
                  </td>
                </tr>
              )}
            </tbody>
          </table>
        </div>
        <h2>{page.attemptsTitle}</h2>
        {attempts.length === 0 ? (
          <p class="empty">{page.none}</p>
        ) : (
          <div class="table-wrap">
            <table class="attempts">
              <thead>
                <tr>
                  <th scope="col" class="number">
                    {page.attempt}
                  </th>
                  <th scope="col">{page.startedAt}</th>
                  <th scope="col">{page.outcome}</th>
                  <th scope="col" class="number">
                    {page.duration}
                  </th>
                </tr>
              </thead>
              <tbody>
                {attempts.map((a) => (
                  <tr data-attempt={String(a.attempt)}>
                    <td class="number">{formatNumber(a.attempt)}</td>
                    <td>{formatTime(a.started_at)}</td>
                    <td data-field="outcome" class="report-message">
                      {a.status_code === null ? null : <span data-field="status-code">HTTP {a.status_code}</span>}
                      {a.status_code !== null && a.error !== null ? ': ' : null}
                      {a.error ?? (a.status_code === null ? page.noAnswer : null)}
                    </td>
                    <td class="number" data-field="duration">
                      {page.milliseconds(formatNumber(a.duration_ms))}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        <p>
          <a href="/portal/webhooks">{text.back}</a>
        </p>
      </Layout>,
    );
  });

  postWrite(app, '/webhooks/:id/delete', webhookOps.deleteWebhook, async (c, write) => {
    const id = c.req.param('id').toLowerCase();
    return writeAndRedirect(c, '/portal/webhooks', t().webhooks.deleted, () =>
      write({ param: { id } }, (tx) => unsubscribe(tx, id).then(({ audit }) => ({ audit, result: null }))),
    );
  });
  return app;
}
