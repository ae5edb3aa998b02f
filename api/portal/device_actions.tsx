/**
 * A device's actions in the portal: on its page the queue (pending, delivered, running) and
 * the history (finished, paged), the forms for reboot, apply now, apply updates and a
 * script, each confirmed with the count of devices ("1 Gerät") before it is queued; an
 * action's own page; cancel. Reads and writes go through the actions' own declarations and
 * service functions, as the API's routes do, so a viewer reads type, status and times but
 * never a script or an output (the service leaves them out for it) and has no form.
 */
import type { Context } from 'hono';
import { Hono } from 'hono';
import type { Child } from 'hono/jsx';
import * as actionOps from '../actions/operations.ts';
import { ActionCreate, type ActionObject, type ActionStatus, type ActionType } from '../actions/schemas.ts';
import { cancelAction, createAction, getAction, listActions } from '../actions/service.ts';
import { getDevice } from '../devices/repo.ts';
import { ApiError, notFound } from '../http/errors.ts';
import { invalidRequest } from '../http/openapi.ts';
import { canWrite, type PortalEnv, portalRead, postWrite } from './access.ts';
import { formFields, redirectWith, render, safeBack, takeFlash, writeAndRedirect } from './http.tsx';
import { formatNumber, formatTime, t } from './i18n/index.ts';
import { CsrfField, type Flash, Layout } from './layout.tsx';
import { refusalText } from './refusals.ts';
import type { PortalSession } from './session.ts';

/** The types, in the order the page offers them. */
export const actionTypes = ['reboot', 'apply_now', 'apply_updates', 'script'] as const satisfies readonly ActionType[];
const OPEN: ActionStatus[] = ['pending', 'delivered', 'running'];
const FINISHED: ActionStatus[] = ['succeeded', 'failed', 'expired', 'canceled'];
const CANCELABLE: ActionStatus[] = ['pending', 'delivered'];
const INTERPRETERS = ['sh', 'bash', 'python3'] as const;
/** The open actions the device page lists (newest first), and the history's page. */
const QUEUE_LIMIT = 50;
const HISTORY_PAGE = 10;
/** Of a long output the device page shows its end; the action's page shows all of it. */
const OUTPUT_TAIL = 2_000;

/**
 * A form that carries a script: its 64 KiB of UTF-8, URL-encoded (up to three characters a
 * byte), and the rest of the form. Every other form of the portal keeps the smaller limit.
 */
export const SCRIPT_FORM_BYTES = 256 * 1024;
export function takesScript(path: string): boolean {
  return /^\/portal\/(devices\/[^/]+\/actions(\/confirm)?|devices\/bulk\/actions|(org-units|groups)\/[^/]+\/actions)$/.test(
    path,
  );
}

/** The type's name in words. */
export const typeLabel = (type: ActionType) => t().actions.types[type];

/** A form's whole number as the API takes it; other text is passed on for the schema to refuse, an empty field left out. */
function wholeNumber(value: string | undefined): number | string | undefined {
  const text = (value ?? '').trim();
  if (text === '') return undefined;
  return /^-?\d{1,10}$/.test(text) ? Number(text) : text;
}

/**
 * The create body (`type`, `parameters`) of a form's fields, as the API takes it. A
 * textarea's line breaks arrive as CR LF: a script runs with LF. Checked by the API's own
 * schema (`checkedBody`), in the service again.
 */
export function actionBodyOf(fields: Record<string, string | undefined>): { type: unknown; parameters: object } {
  const type = fields.type;
  const given = (entries: Record<string, unknown>) =>
    Object.fromEntries(Object.entries(entries).filter(([, v]) => v !== undefined));
  switch (type) {
    case 'reboot':
      return {
        type,
        parameters: given({
          delay_seconds: wholeNumber(fields.delay_seconds),
          message: fields.message?.trim() ? fields.message.trim() : undefined,
        }),
      };
    case 'apply_updates':
      // An unticked checkbox sends nothing: only "true" asks for the security updates alone.
      return { type, parameters: { security_only: fields.security_only === 'true' } };
    case 'script':
      return {
        type,
        parameters: given({
          interpreter: fields.interpreter,
          script: (fields.script ?? '').replace(/\r\n?/g, '\n'),
          timeout_seconds: wholeNumber(fields.timeout_seconds),
        }),
      };
    default:
      return { type, parameters: {} };
  }
}

export type CheckedAction = { type: ActionType; parameters: Record<string, unknown> };

/** The body checked by the API's schema (400 with the fields it names, else the type and its parameters). */
export function checkedBody(body: { type: unknown; parameters: object }): CheckedAction {
  const parsed = ActionCreate.safeParse(body);
  if (!parsed.success) throw invalidRequest('json', parsed.error.issues);
  return { type: parsed.data.type, parameters: parsed.data.parameters ?? {} };
}

/** The parameters in words ("in 60 s", "nur Sicherheitsupdates"); the script itself is shown apart. */
function parametersText(type: ActionType, parameters: Record<string, unknown>): string {
  const text = t().actions.parameters;
  const seconds = (v: unknown) => formatNumber(Number(v));
  const parts: string[] = [];
  switch (type) {
    case 'reboot':
      parts.push(text.delay(seconds(parameters.delay_seconds ?? 60)));
      if (typeof parameters.message === 'string' && parameters.message !== '')
        parts.push(text.message(parameters.message));
      break;
    case 'apply_updates':
      parts.push(parameters.security_only === false ? text.allUpdates : text.securityOnly);
      break;
    case 'script':
      parts.push(
        text.interpreter(String(parameters.interpreter)),
        text.timeout(seconds(parameters.timeout_seconds ?? 600)),
      );
      break;
  }
  return parts.length === 0 ? text.none : parts.join(', ');
}

/** The settings in words, or null for an action without any (apply now): a rollout's title names them. */
export function settingsText(type: ActionType, parameters: Record<string, unknown>): string | null {
  const text = parametersText(type, parameters);
  return text === t().actions.parameters.none ? null : text;
}

/** The parameter fields of a type, filled with `values` (a form's, or the defaults). */
function ParameterInputs(props: { type: ActionType; values: Record<string, unknown>; idPrefix: string }) {
  const { type, values } = props;
  const id = (field: string) => `${props.idPrefix}-${field}`;
  const text = t().actions.forms;
  switch (type) {
    case 'reboot':
      return (
        <>
          <label for={id('delay')}>{text.reboot.delay}</label>
          <input
            id={id('delay')}
            name="delay_seconds"
            type="number"
            min={0}
            max={3600}
            step={1}
            value={String(values.delay_seconds ?? 60)}
            required
          />
          <label for={id('message')}>{text.reboot.message}</label>
          <input id={id('message')} name="message" maxlength={200} value={String(values.message ?? '')} />
        </>
      );
    case 'apply_now':
      return <p class="muted">{text.applyNow.note}</p>;
    case 'apply_updates':
      return (
        <>
          <p class="muted">{text.applyUpdates.note}</p>
          <label for={id('security')} class="check">
            <input
              id={id('security')}
              name="security_only"
              type="checkbox"
              value="true"
              checked={values.security_only !== false}
            />{' '}
            {text.applyUpdates.securityOnly}
          </label>
        </>
      );
    case 'script':
      return (
        <>
          <label for={id('interpreter')}>{text.script.interpreter}</label>
          <select id={id('interpreter')} name="interpreter">
            {INTERPRETERS.map((i) => (
              <option value={i} selected={i === (values.interpreter ?? 'sh')}>
                {i}
              </option>
            ))}
          </select>
          <label for={id('script')}>{text.script.script}</label>
          <textarea id={id('script')} name="script" rows={6} required>
            {String(values.script ?? '')}
          </textarea>
          <label for={id('timeout')}>{text.script.timeout}</label>
          <input
            id={id('timeout')}
            name="timeout_seconds"
            type="number"
            min={1}
            max={3600}
            step={1}
            value={String(values.timeout_seconds ?? 600)}
            required
          />
        </>
      );
  }
}

/** The checked action as hidden fields: the confirmation posts back exactly what it showed. */
function ParameterHidden(props: { action: CheckedAction }) {
  const { type, parameters } = props.action;
  const fields: [string, string][] = [['type', type]];
  for (const [name, value] of Object.entries(parameters)) fields.push([name, String(value)]);
  return (
    <>
      {fields.map(([name, value]) => (
        <input type="hidden" name={name} value={value} />
      ))}
    </>
  );
}

/** What the action does, as its confirmation and its page show it: type, settings, and a script's text. */
function ActionSummary(props: { action: CheckedAction }) {
  const { type, parameters } = props.action;
  const text = t().actions.confirm;
  return (
    <>
      <div class="table-wrap">
        <table>
          <tbody>
            <tr>
              <th scope="row">{text.action}</th>
              <td data-field="type">{typeLabel(type)}</td>
            </tr>
            <tr>
              <th scope="row">{text.parameters}</th>
              <td data-field="parameters">{parametersText(type, parameters)}</td>
            </tr>
          </tbody>
        </table>
      </div>
      {type === 'script' && typeof parameters.script === 'string' ? (
        <>
          <h2>{t().actions.script}</h2>
          <pre class="output" data-field="script">
            {parameters.script}
          </pre>
        </>
      ) : null}
    </>
  );
}

/** An action's status as a badge, coloured as a convergence reads (done, waiting, failed). */
function ActionStatusBadge(props: { status: ActionStatus }) {
  const { status } = props;
  const kind =
    status === 'succeeded'
      ? 'converged'
      : status === 'failed'
        ? 'failed'
        : status === 'expired' || status === 'canceled'
          ? 'status-archived'
          : 'pending';
  return (
    <span class={`badge ${kind}`} data-status={status}>
      {t().actions.statuses[status]}
    </span>
  );
}

function CancelButton(props: { session: PortalSession; action: ActionObject; back: string }) {
  const text = t().actions;
  return (
    <form class="inline" method="post" action={`/portal/actions/${props.action.id}/cancel`}>
      <CsrfField session={props.session} />
      <input type="hidden" name="back" value={props.back} />
      <button type="submit" class="secondary" aria-label={text.cancelLabel(typeLabel(props.action.type))}>
        {text.cancel}
      </button>
    </form>
  );
}

/** A script's text and the output, for a reader the service shows them to (a viewer gets neither). */
function ScriptAndOutput(props: { action: ActionObject; tail: boolean }) {
  const a = props.action;
  const text = t().actions;
  const script = typeof a.parameters.script === 'string' ? a.parameters.script : null;
  const output = a.result?.output ?? null;
  if (script === null && output === null) return null;
  const shortened = props.tail && output !== null && output.length > OUTPUT_TAIL;
  return (
    <details class="action-output">
      <summary>{script === null ? text.output : output === null ? text.script : text.scriptAndOutput}</summary>
      {script === null ? null : (
        <>
          <strong>{text.script}</strong>
          <pre class="output" data-field="script">
            {script}
          </pre>
        </>
      )}
      {output === null ? null : (
        <>
          <strong>{text.output}</strong>
          {shortened ? <p class="muted">{text.outputTail(formatNumber(OUTPUT_TAIL))}</p> : null}
          {output === '' ? (
            <p class="muted">{text.noOutput}</p>
          ) : (
            <pre class="output" data-field="output">
              {shortened ? output.slice(-OUTPUT_TAIL) : output}
            </pre>
          )}
          {shortened ? <a href={`/portal/actions/${a.id}`}>{text.wholeOutput}</a> : null}
        </>
      )}
    </details>
  );
}

function ActionRow(props: { session: PortalSession; action: ActionObject; queue: boolean; admin: boolean }) {
  const a = props.action;
  const text = t().actions;
  return (
    <tr data-action={a.id} data-type={a.type}>
      <td>
        <a href={`/portal/actions/${a.id}`}>{typeLabel(a.type)}</a>
        {a.rollout_id === null ? null : (
          <>
            {' · '}
            <a href={`/portal/rollouts/${a.rollout_id}`}>{text.fromRollout}</a>
          </>
        )}
        <span class="report-message muted">{parametersText(a.type, a.parameters)}</span>
        <ScriptAndOutput action={a} tail />
      </td>
      <td data-field="status">
        <ActionStatusBadge status={a.status} />
      </td>
      <td>{formatTime(a.created_at)}</td>
      {props.queue ? (
        <td>{formatTime(a.expires_at)}</td>
      ) : (
        <>
          <td>{formatTime(a.finished_at)}</td>
          <td data-field="result">
            {a.result === null
              ? '–'
              : text.result(
                  String(a.result.exit_code),
                  formatNumber(a.result.duration_ms / 1000, { maximumFractionDigits: 1 }),
                )}
          </td>
        </>
      )}
      {props.queue && props.admin ? (
        <td>
          {CANCELABLE.includes(a.status) ? (
            <CancelButton session={props.session} action={a} back={`/portal/devices/${a.device_id}`} />
          ) : (
            '–'
          )}
        </td>
      ) : null}
    </tr>
  );
}

function ActionTable(props: { session: PortalSession; actions: ActionObject[]; queue: boolean; admin: boolean }) {
  const text = t().actions.columns;
  return (
    <div class="table-wrap">
      <table class="actions" data-section={props.queue ? 'action-queue' : 'action-history'}>
        <thead>
          <tr>
            <th scope="col">{text.action}</th>
            <th scope="col">{text.status}</th>
            <th scope="col">{text.created}</th>
            {props.queue ? (
              <th scope="col">{text.expires}</th>
            ) : (
              <>
                <th scope="col">{text.finished}</th>
                <th scope="col">{text.result}</th>
              </>
            )}
            {props.queue && props.admin ? <th scope="col">{text.cancel}</th> : null}
          </tr>
        </thead>
        <tbody>
          {props.actions.map((a) => (
            <ActionRow session={props.session} action={a} queue={props.queue} admin={props.admin} />
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** The device page's forms: each posts to the confirmation, which names the count before anything is queued. */
function ActionForms(props: { session: PortalSession; deviceId: string }) {
  const text = t().actions.forms;
  const buttons: Record<ActionType, string> = {
    reboot: text.reboot.button,
    apply_now: text.applyNow.button,
    apply_updates: text.applyUpdates.button,
    script: text.script.button,
  };
  return (
    <fieldset class="bulk">
      <legend>{text.legend}</legend>
      <div class="choices">
        {actionTypes.map((type) => (
          <section data-action-form={type}>
            <h3>{typeLabel(type)}</h3>
            <form method="post" action={`/portal/devices/${props.deviceId}/actions/confirm`}>
              <CsrfField session={props.session} />
              <input type="hidden" name="type" value={type} />
              <ParameterInputs type={type} values={{}} idPrefix={`action-${type}`} />
              <p>
                <button type="submit" class={type === 'reboot' || type === 'script' ? 'danger' : ''}>
                  {buttons[type]}
                </button>
              </p>
            </form>
          </section>
        ))}
      </div>
    </fieldset>
  );
}

export type DeviceActions = Awaited<ReturnType<typeof loadDeviceActions>>;

/** The device's queue and a page of its history (`cursor`), as the session may read them. */
export async function loadDeviceActions(c: Context<PortalEnv>, deviceId: string, cursor: string | undefined) {
  const db = await portalRead(c, actionOps.listActions, { param: { id: deviceId } });
  const caller = c.get('session').caller;
  const [queue, history] = await Promise.all([
    listActions(db, deviceId, { status: OPEN, limit: QUEUE_LIMIT }, caller),
    listActions(db, deviceId, { status: FINISHED, cursor, limit: HISTORY_PAGE }, caller),
  ]);
  return { queue: queue.items, history: history.items, next: history.next_cursor, paged: cursor !== undefined };
}

/** The device page's section: forms for a device that takes actions, the queue and the history. */
export function ActionsSection(props: {
  session: PortalSession;
  deviceId: string;
  /** Whether the device takes actions (neither archived nor deprovisioned). */
  managed: boolean;
  actions: DeviceActions;
}) {
  const { session, deviceId, actions } = props;
  const admin = canWrite(session);
  const text = t().actions;
  const page = (cursor: string | null) =>
    `/portal/devices/${deviceId}${cursor === null ? '' : `?actions_cursor=${encodeURIComponent(cursor)}`}#actions`;
  return (
    <section id="actions" aria-labelledby="actions-heading">
      <h2 id="actions-heading">{text.heading}</h2>
      <p class="muted">{text.intro}</p>
      {admin && props.managed ? <ActionForms session={session} deviceId={deviceId} /> : null}
      <h3>{text.queue}</h3>
      {actions.queue.length === 0 ? (
        <p class="empty">{text.queueEmpty}</p>
      ) : (
        <ActionTable session={session} actions={actions.queue} queue admin={admin} />
      )}
      <h3>{text.history}</h3>
      {actions.history.length === 0 ? (
        <p class="empty">{text.historyEmpty}</p>
      ) : (
        <ActionTable session={session} actions={actions.history} queue={false} admin={admin} />
      )}
      {actions.paged || actions.next !== null ? (
        <nav class="paging" aria-label={text.paging.label}>
          {actions.paged ? <a href={page(null)}>{text.paging.newest}</a> : null}
          {actions.next !== null ? (
            <a href={page(actions.next)} rel="next">
              {text.paging.older}
            </a>
          ) : null}
        </nav>
      ) : null}
    </section>
  );
}

/**
 * The confirmation of an action for one or many devices: what it does, the devices it
 * goes to (their count in the button), and the form that queues it. `inputs`: the
 * parameters are still to be filled in here (a bulk action's page), else they travel hidden.
 */
export function ConfirmationPage(props: {
  session: PortalSession;
  action: CheckedAction;
  count: number;
  goesTo: Child;
  post: string;
  hidden: [string, string][];
  back: string;
  inputs?: boolean;
  notes?: Child;
  /** More fields of the form (a rollout's rings). */
  extra?: Child;
  flash?: Flash | null;
}) {
  const { action, session } = props;
  const text = t().actions.confirm;
  const devices = t().bulk.devices(props.count, formatNumber(props.count));
  return (
    <Layout title={text.title} session={session} flash={props.flash ?? null}>
      {props.inputs ? null : <ActionSummary action={action} />}
      <p>
        {t().actions.bulk.goesTo} <strong data-field="count">{devices}</strong>: {props.goesTo}
      </p>
      {props.notes}
      <p class="muted">{text.waits}</p>
      <form method="post" action={props.post} data-confirm-action={action.type}>
        <CsrfField session={session} />
        {props.hidden.map(([name, value]) => (
          <input type="hidden" name={name} value={value} />
        ))}
        {props.inputs ? (
          <>
            <input type="hidden" name="type" value={action.type} />
            <h2>{typeLabel(action.type)}</h2>
            <ParameterInputs type={action.type} values={action.parameters} idPrefix="confirm" />
          </>
        ) : (
          <ParameterHidden action={action} />
        )}
        {props.extra}
        <p>
          <button type="submit" class="danger">
            {text.button(typeLabel(action.type), devices)}
          </button>{' '}
          <a href={props.back}>{text.cancel}</a>
        </p>
      </form>
    </Layout>
  );
}

function actorName(actor: ActionObject['created_by']): string {
  const text = t().actions.page;
  return actor.type === 'api_key' ? actor.name : actor.type === 'operator' ? text.operator : text.system;
}

/** What the agent reported beside the exit code: upgraded packages, a needed reboot, the boot, an interruption. */
function ResultDetails(props: { type: ActionType; details: Record<string, unknown> }) {
  const { details } = props;
  const text = t().actions.page;
  const upgraded = Array.isArray(details.upgraded)
    ? (details.upgraded as unknown[]).filter(
        (u): u is { name: unknown; from: unknown; to: unknown } => typeof u === 'object' && u !== null,
      )
    : null;
  return (
    <>
      {props.type === 'apply_updates' || upgraded !== null ? (
        <tr>
          <th scope="row">{text.upgraded}</th>
          <td data-field="upgraded">
            {upgraded === null || upgraded.length === 0 ? (
              text.noneUpgraded
            ) : (
              <ul class="plain">
                {upgraded.map((u) => (
                  <li>
                    <span class="mono">{String(u.name)}</span> {String(u.from ?? '–')} → {String(u.to ?? '–')}
                  </li>
                ))}
              </ul>
            )}
          </td>
        </tr>
      ) : null}
      {typeof details.reboot_required === 'boolean' ? (
        <tr>
          <th scope="row">{text.rebootRequired}</th>
          <td data-field="reboot_required">{details.reboot_required ? text.yes : text.no}</td>
        </tr>
      ) : null}
      {typeof details.booted_at === 'string' ? (
        <tr>
          <th scope="row">{text.bootedAt}</th>
          <td>{formatTime(details.booted_at)}</td>
        </tr>
      ) : null}
      {details.interrupted === true ? (
        <tr>
          <td colspan={2} class="warning" data-field="interrupted">
            {text.interrupted}
          </td>
        </tr>
      ) : null}
    </>
  );
}

export function deviceActionRoutes() {
  const app = new Hono<PortalEnv>();

  // The confirmation changes nothing; it is declared as the queueing it leads to, so a
  // viewer is refused it (403) as the queueing, and another organization's device is 404.
  postWrite(app, '/devices/:id/actions/confirm', actionOps.createAction, async (c) => {
    const session = c.get('session');
    const id = c.req.param('id');
    const db = await portalRead(c, actionOps.createAction, { param: { id } });
    const device = await getDevice(db, id, c.get('deps').config.agentPollIntervalSeconds);
    if (!device) throw notFound('device', id);
    const back = `/portal/devices/${device.id}`;
    let action: CheckedAction;
    try {
      action = checkedBody(actionBodyOf(await formFields(c)));
      // Said before the confirmation, in the words the queueing would refuse it with (the service decides again).
      if (device.archived_at) throw new ApiError('device_archived', 'the device is archived', { status: 409 });
      if (device.deprovisioned_at)
        throw new ApiError('device_deprovisioned', 'the device is deprovisioned', { status: 409 });
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      return redirectWith(c, `${back}#actions`, { kind: 'error', text: refusalText(err) });
    }
    return render(
      c,
      <ConfirmationPage
        session={session}
        action={action}
        count={1}
        goesTo={
          <a href={back}>
            {device.serial}
            {device.hostname ? ` (${device.hostname})` : ''}
          </a>
        }
        post={`/portal/devices/${device.id}/actions`}
        hidden={[]}
        back={back}
      />,
    );
  });

  postWrite(app, '/devices/:id/actions', actionOps.createAction, async (c, write) => {
    const id = c.req.param('id');
    const body = actionBodyOf(await formFields(c));
    return writeAndRedirect(
      c,
      `/portal/devices/${id}#actions`,
      (action: ActionObject) => t().actions.queued(typeLabel(action.type)),
      () =>
        // The body is checked inside the write, after the session's role: a viewer's forged form is 403.
        write({ param: { id } }, async (tx, caller) => {
          const { action, audit } = await createAction(tx, id, body, caller);
          return { audit, result: action };
        }),
    );
  });

  postWrite(app, '/actions/:id/cancel', actionOps.cancelAction, async (c, write) => {
    const id = c.req.param('id');
    const back = safeBack((await formFields(c)).back, `/portal/actions/${id}`);
    return writeAndRedirect(
      c,
      back,
      (action: ActionObject) => t().actions.canceled(typeLabel(action.type)),
      () =>
        write({ param: { id } }, async (tx) => {
          const { action, audit } = await cancelAction(tx, id);
          return { audit, result: action };
        }),
    );
  });

  app.get('/actions/:id', async (c) => {
    const session = c.get('session');
    const id = c.req.param('id').toLowerCase();
    const db = await portalRead(c, actionOps.getAction, { param: { id } });
    const a = await getAction(db, id, session.caller);
    const device = await getDevice(db, a.device_id, c.get('deps').config.agentPollIntervalSeconds);
    const serial = device?.serial ?? a.device_id;
    const text = t().actions;
    const page = text.page;
    const admin = canWrite(session);
    return render(
      c,
      <Layout title={page.title(typeLabel(a.type), serial)} session={session} flash={takeFlash(c)}>
        <p>
          <a href={`/portal/devices/${a.device_id}`}>{page.back}</a>
        </p>
        <div class="table-wrap">
          <table data-action={a.id}>
            <tbody>
              <tr>
                <th scope="row">{page.device}</th>
                <td>
                  <a href={`/portal/devices/${a.device_id}`}>{serial}</a>
                </td>
              </tr>
              <tr>
                <th scope="row">{text.confirm.action}</th>
                <td data-field="type">{typeLabel(a.type)}</td>
              </tr>
              <tr>
                <th scope="row">{text.confirm.parameters}</th>
                <td data-field="parameters">{parametersText(a.type, a.parameters)}</td>
              </tr>
              <tr>
                <th scope="row">{text.columns.status}</th>
                <td data-field="status">
                  <ActionStatusBadge status={a.status} />
                </td>
              </tr>
              <tr>
                <th scope="row">{page.createdBy}</th>
                <td>
                  {actorName(a.created_by)}, {formatTime(a.created_at)}
                </td>
              </tr>
              {a.rollout_id === null ? null : (
                <tr>
                  <th scope="row">{page.rollout}</th>
                  <td>
                    <a href={`/portal/rollouts/${a.rollout_id}`}>{page.toRollout}</a>
                  </td>
                </tr>
              )}
              <tr>
                <th scope="row">{text.columns.expires}</th>
                <td>{formatTime(a.expires_at)}</td>
              </tr>
              <tr>
                <th scope="row">{page.delivered}</th>
                <td>{formatTime(a.delivered_at)}</td>
              </tr>
              <tr>
                <th scope="row">{page.started}</th>
                <td>{formatTime(a.started_at)}</td>
              </tr>
              <tr>
                <th scope="row">{text.columns.finished}</th>
                <td>{formatTime(a.finished_at)}</td>
              </tr>
              {a.result === null ? null : (
                <>
                  <tr>
                    <th scope="row">{page.exitCode}</th>
                    <td data-field="exit_code">{String(a.result.exit_code)}</td>
                  </tr>
                  <tr>
                    <th scope="row">{page.duration}</th>
                    <td>{page.seconds(formatNumber(a.result.duration_ms / 1000, { maximumFractionDigits: 1 }))}</td>
                  </tr>
                  <ResultDetails type={a.type} details={a.result.details} />
                </>
              )}
            </tbody>
          </table>
        </div>
        {admin && CANCELABLE.includes(a.status) ? (
          <p>
            <CancelButton session={session} action={a} back={`/portal/actions/${a.id}`} />
          </p>
        ) : null}
        {typeof a.parameters.script === 'string' ? (
          <>
            <h2>{text.script}</h2>
            <pre class="output" data-field="script">
              {a.parameters.script}
            </pre>
          </>
        ) : null}
        {a.result !== null && a.result.output !== null ? (
          <>
            <h2>{text.output}</h2>
            {a.result.output === '' ? (
              <p class="muted">{text.noOutput}</p>
            ) : (
              <pre class="output" data-field="output">
                {a.result.output}
              </pre>
            )}
          </>
        ) : null}
      </Layout>,
    );
  });

  return app;
}
