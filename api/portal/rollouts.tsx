/**
 * Staged rollouts in the portal: the organization's rollouts (newest first, by status,
 * paged), a rollout with a bar per ring (its devices converged, pending, failed, each
 * figure a link to the list of those devices) and what its current ring waits for, pause,
 * resume and abort after a confirmation, and the creation "in rings" that an org unit's or
 * a group's catalog change offers. Reads and writes go through the rollouts' own
 * declarations and service functions, as the API's routes do. The rollout page refreshes
 * its live part by the portal's one script, or by its refresh link without script.
 */
import type { Context } from 'hono';
import { Hono } from 'hono';
import type { Actor } from '../access/declaration.ts';
import type { Db } from '../db/client.ts';
import { listGroups } from '../groups/repo.ts';
import { ApiError, notFound } from '../http/errors.ts';
import { listOrgUnits } from '../org_units/repo.ts';
import * as rolloutOps from '../rollouts/operations.ts';
import {
  DEFAULT_MAX_FAILURE_RATIO,
  DEFAULT_MIN_REPORTED_RATIO,
  DEFAULT_RINGS,
  DEFAULT_SOAK_SECONDS,
  RolloutCreate,
} from '../rollouts/schemas.ts';
import {
  abortRollout,
  createRollout,
  getRollout,
  listRolloutDevices,
  listRollouts,
  pauseRollout,
  resumeRollout,
} from '../rollouts/service.ts';
import type { Convergence } from '../devices/repo.ts';
import { ConvergenceBadge } from './badges.tsx';
import { reportLabel, reportMessage } from './labels.ts';
import { RelativeTime } from './relative_time.tsx';
import { canWrite, type PortalEnv, portalRead, type PortalWriter, postWrite } from './access.ts';
import { formFields, invalidInput, redirectWith, render, safeBack, takeFlash, writeAndRedirect } from './http.tsx';
import { formatNumber, formatTime, t } from './i18n/index.ts';
import { CsrfField, Layout } from './layout.tsx';
import type { PortalSession } from './session.ts';
import { refusalText } from './refusals.ts';

export type Rollout = Awaited<ReturnType<typeof getRollout>>;
type RolloutStatus = Rollout['status'];
type RingDetail = Rollout['rings_detail'][number];
export type RolloutAction = 'select' | 'deselect' | 'unset';
type Verb = 'pause' | 'resume' | 'abort';

const PAGE_SIZE = 25;
/** How often a rollout's page refreshes its figures while the rollout is under way. */
const REFRESH_SECONDS = 3;
const SCRIPT = '/portal/rollouts.js';

/** The defaults the form offers: those of a rollout created without them. */
const ROLLOUT_DEFAULTS = {
  rings: DEFAULT_RINGS,
  max_failure_ratio: DEFAULT_MAX_FAILURE_RATIO,
  min_reported_ratio: DEFAULT_MIN_REPORTED_RATIO,
  soak_seconds: DEFAULT_SOAK_SECONDS,
};

const statuses: RolloutStatus[] = ['running', 'paused', 'completed', 'aborted'];

/** A rollout's action in words (the catalog change it makes). */
export const actionLabel = (action: RolloutAction) => t().rollouts.actions[action];

/** What a rollout changes, as its Merkmal and action, or (a device action) the action's type. */
const subjectOf = (r: Rollout) => r.merkmal ?? r.device_action?.type ?? '';
const verbOf = (r: Rollout) => (r.action === null ? '' : t().rollouts.actions[r.action]);

const verbs: Verb[] = ['pause', 'resume', 'abort'];
const verbOperation = {
  pause: rolloutOps.pauseRollout,
  resume: rolloutOps.resumeRollout,
  abort: rolloutOps.abortRollout,
} as const;
const verbService = { pause: pauseRollout, resume: resumeRollout, abort: abortRollout } as const;

/** A ratio (0.1) as a percentage ("10 %", "10%"), to a tenth at most. */
function percent(ratio: number): string {
  return t().rollouts.percent(formatNumber(ratio * 100, { maximumFractionDigits: 1 }));
}

function duration(seconds: number): string {
  const { duration: text } = t().rollouts;
  if (seconds < 120) return text.seconds(seconds, formatNumber(seconds));
  if (seconds < 7200) {
    const minutes = Math.round(seconds / 60);
    return text.minutes(minutes, formatNumber(minutes));
  }
  const hours = Math.round((seconds / 3600) * 10) / 10;
  return text.hours(hours, formatNumber(hours, { maximumFractionDigits: 1 }));
}

function actorName(actor: Actor | null | undefined): string {
  if (!actor) return '–';
  const text = t().rollouts;
  return actor.type === 'api_key' ? actor.name : actor.type === 'operator' ? text.operator : text.system;
}

/** Names of the organization's org units and groups: a rollout's scope is shown by name. */
async function scopeNames(db: Db, organizationId: string) {
  const [units, groups] = await Promise.all([
    listOrgUnits(db, organizationId, null, 10_000),
    listGroups(db, organizationId, null, 10_000),
  ]);
  return { unit: new Map(units.map((u) => [u.id, u.name])), group: new Map(groups.map((g) => [g.id, g.name])) };
}
type ScopeNames = Awaited<ReturnType<typeof scopeNames>>;

/** The scope by name, linked: to its page for an admin, to its devices for a viewer. */
function ScopeLink(props: { rollout: Rollout; names: ScopeNames; admin: boolean }) {
  const { rollout: r, names } = props;
  const unit = r.scope === 'org_unit';
  const name = (unit ? names.unit : names.group).get(r.scope_id);
  const text = t().rollouts;
  if (name === undefined) return <span>{text.unknownScope}</span>;
  const href = props.admin
    ? `/portal/${unit ? 'org-units' : 'groups'}/${r.scope_id}`
    : `/portal/devices?${unit ? 'oe_id' : 'group_id'}=${r.scope_id}`;
  return <a href={href}>{unit ? text.orgUnit(name) : text.group(name)}</a>;
}

/** The rollout's status in words, with why it paused. */
function statusText(r: Rollout): string {
  const text = t().rollouts;
  if (r.status !== 'paused') return text.statuses[r.status];
  if (r.paused_reason === 'manual') return text.pausedManual;
  const ring = r.rings_detail.find((d) => d.ring === r.current_ring);
  const failed = ring?.failed ?? 0;
  return text.pausedFailures(
    formatNumber(r.current_ring + 1),
    formatNumber(failed),
    formatNumber(failed + (ring?.converged ?? 0)),
    percent(r.max_failure_ratio),
  );
}

/** A ring's devices as one bar: converged, pending, failed by their share; the rest (not counted) grey. */
function RingBar(props: { ring: RingDetail }) {
  const d = props.ring;
  const share = (n: number) => (d.devices === 0 ? 0 : Math.min(100, (100 * n) / d.devices));
  const converged = share(d.converged);
  const pending = Math.min(100 - converged, share(d.pending));
  const failed = Math.min(100 - converged - pending, share(d.failed));
  const label = t().rollouts.barLabel(
    d.devices,
    formatNumber(d.converged),
    formatNumber(d.pending),
    formatNumber(d.failed),
    formatNumber(d.devices),
  );
  return (
    <svg class="bar" viewBox="0 0 100 10" preserveAspectRatio="none" role="img" aria-label={label}>
      <rect class="converged" x="0" y="0" width={String(converged)} height="10" />
      <rect class="pending" x={String(converged)} y="0" width={String(pending)} height="10" />
      <rect class="failed" x={String(converged + pending)} y="0" width={String(failed)} height="10" />
    </svg>
  );
}

/** The portal's list of a ring's devices, of one convergence when given. */
function ringDevicesHref(rolloutId: string, ring: number, convergence?: Convergence): string {
  const query = new URLSearchParams({ ring: String(ring), ...(convergence ? { convergence } : {}) });
  return `/portal/rollouts/${rolloutId}/devices?${query}`;
}

/** What the current ring waits for before the next opens, in words; null when it waits for nothing. */
function waitingText(r: Rollout): string | null {
  const ring = r.rings_detail.find((d) => d.ring === r.current_ring);
  const waiting = ring?.waiting_for;
  if (!ring || !waiting) return null;
  const text = t().rollouts.waiting;
  const n = formatNumber(ring.ring + 1);
  if (waiting.reason === 'no_live_devices') return text.noLiveDevices(n);
  if (waiting.reason === 'soak') return text.soak(n, formatTime(waiting.until ?? ring.opened_at ?? r.created_at));
  return text.reports(n, formatNumber(waiting.reported), formatNumber(waiting.needed));
}

function RingTable(props: { rollout: Rollout }) {
  const r = props.rollout;
  const text = t().rollouts;
  return (
    <div class="table-wrap">
      <table class="rings">
        <thead>
          <tr>
            <th scope="col">{text.ringsHeading}</th>
            <th scope="col" class="number">
              {text.devices}
            </th>
            <th scope="col">{text.bar}</th>
            <th scope="col">{text.figures}</th>
            <th scope="col">{text.opened}</th>
          </tr>
        </thead>
        <tbody>
          {r.rings_detail.map((d) => (
            <tr data-ring={d.ring} data-opened={d.opened_at ? 'true' : 'false'}>
              <th scope="row">
                {text.ring(formatNumber(d.ring + 1))}{' '}
                <span class="muted">({text.upTo(text.percent(formatNumber(d.percent)))})</span>
              </th>
              <td class="number" data-field="devices">
                <a href={ringDevicesHref(r.id, d.ring)} title={text.ringDevicesOf(formatNumber(d.ring + 1))}>
                  {formatNumber(d.devices)}
                </a>
              </td>
              <td>{d.opened_at ? <RingBar ring={d} /> : <span class="muted">{text.notOpened}</span>}</td>
              <td>
                {d.opened_at ? (
                  <span class="ring-figures">
                    {figureKinds.map((kind) => (
                      <>
                        {/* A zero is plain: only what there is stands out. Each figure lists its devices. */}
                        <a href={ringDevicesHref(r.id, d.ring, kind)}>
                          <span class={d[kind] > 0 ? `badge ${kind}` : 'badge'} data-count={kind}>
                            {formatNumber(d[kind])} {text.figure[kind]}
                          </span>
                        </a>{' '}
                      </>
                    ))}
                  </span>
                ) : (
                  '–'
                )}
              </td>
              <td data-field="opened_at">{d.opened_at ? formatTime(d.opened_at) : text.notOpened}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** Pause, resume and abort, each a link to its confirmation, as the rollout's status allows. */
function RolloutActions(props: { rollout: Rollout }) {
  const r = props.rollout;
  const allowed: Verb[] =
    r.status === 'running' ? ['pause', 'abort'] : r.status === 'paused' ? ['resume', 'abort'] : [];
  if (allowed.length === 0) return null;
  const text = t().rollouts;
  return (
    <p class="actions">
      {allowed.map((verb, i) => (
        <>
          {i > 0 ? ' · ' : null}
          <a href={`/portal/rollouts/${r.id}/confirm/${verb}`} data-action={verb}>
            {text.confirm[verb].link}
          </a>
        </>
      ))}
    </p>
  );
}

const figureKinds = ['converged', 'pending', 'failed'] as const;

const underWay = (r: Rollout) => r.status === 'running' || r.status === 'paused';

/** How far a rollout got: its current ring, and its opened rings' devices converged. */
function progressText(r: Rollout): string {
  const opened = r.rings_detail.filter((d) => d.opened_at);
  const devices = opened.reduce((n, d) => n + d.devices, 0);
  const converged = opened.reduce((n, d) => n + d.converged, 0);
  const failed = opened.reduce((n, d) => n + d.failed, 0);
  const text = t().rollouts;
  const ring =
    r.status === 'completed' ? '' : `${text.ringOf(formatNumber(r.current_ring + 1), formatNumber(r.rings.length))}: `;
  const figures = text.progressText(devices, formatNumber(converged), formatNumber(devices));
  return `${ring}${figures}${failed > 0 ? text.progressFailed(formatNumber(failed)) : ''}`;
}

/** The rollouts under way (running or paused), for the overview: up to 100 of each. */
export async function rolloutsUnderWay(c: Context<PortalEnv>): Promise<{ rollouts: Rollout[]; names: ScopeNames }> {
  const org = c.get('session').organizationId!;
  const db = await portalRead(c, rolloutOps.listRollouts, { param: { id: org } });
  const poll = c.get('deps').config.agentPollIntervalSeconds;
  const [running, paused, names] = await Promise.all([
    listRollouts(db, org, { status: 'running', limit: 100 }, poll),
    listRollouts(db, org, { status: 'paused', limit: 100 }, poll),
    scopeNames(db, org),
  ]);
  const rollouts = [...running.items, ...paused.items].sort((a, b) =>
    String(b.created_at).localeCompare(String(a.created_at)),
  );
  return { rollouts, names };
}

/** The overview's list of the rollouts under way. */
export function RolloutsUnderWay(props: { rollouts: Rollout[]; names: ScopeNames; session: PortalSession }) {
  const text = t().rollouts;
  return (
    <>
      <h2>{text.runningHeading}</h2>
      {props.rollouts.length === 0 ? (
        <p class="empty">
          {text.noneRunning} <a href="/portal/rollouts">{text.allRollouts}</a>
        </p>
      ) : (
        <RolloutTable rollouts={props.rollouts} names={props.names} admin={canWrite(props.session)} />
      )}
    </>
  );
}

function RolloutTable(props: { rollouts: Rollout[]; names: ScopeNames; admin: boolean }) {
  const text = t().rollouts;
  return (
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
            <th scope="col">{text.created}</th>
            <th scope="col">{text.scope}</th>
            <th scope="col">{text.merkmal}</th>
            <th scope="col">{text.action}</th>
            <th scope="col">{text.status}</th>
            <th scope="col">{text.progress}</th>
            <th scope="col">{text.details}</th>
          </tr>
        </thead>
        <tbody>
          {props.rollouts.map((r) => (
            <tr data-rollout={r.id}>
              <td>{formatTime(r.created_at)}</td>
              <td>
                <ScopeLink rollout={r} names={props.names} admin={props.admin} />
              </td>
              <td>{subjectOf(r)}</td>
              <td>{verbOf(r)}</td>
              <td data-field="status" data-status={r.status}>
                {text.statuses[r.status]}
                {r.status === 'paused' && r.paused_reason === 'failure_ratio' ? text.pausedForFailures : ''}
              </td>
              <td>{progressText(r)}</td>
              <td>
                <a href={`/portal/rollouts/${r.id}`} aria-label={text.detailsOf(subjectOf(r), verbOf(r))}>
                  {text.details}
                </a>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** The id of the rollout a 409 `rollout_in_progress` names (in its details or its message). */
function heldBy(err: ApiError): string | null {
  const details = err.details as { rollout_id?: unknown } | undefined;
  if (typeof details?.rollout_id === 'string') return details.rollout_id;
  return /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i.exec(err.message)?.[0] ?? null;
}

/** A change refused because a rollout holds the Merkmal at the scope: what to do, and the way to that rollout. */
export function rolloutInProgressPage(c: Context<PortalEnv>, err: ApiError, back: string) {
  const id = heldBy(err);
  const text = t().rollouts;
  return render(
    c,
    <Layout title={text.inProgressTitle} session={c.get('session')}>
      <p class="flash error">{text.inProgress}</p>
      <p>
        {id ? (
          <>
            <a href={`/portal/rollouts/${id}`}>{text.toRollout}</a> ·{' '}
          </>
        ) : null}
        <a href={back}>{text.cancel}</a>
      </p>
    </Layout>,
    409,
  );
}

/** Whether an error is the refusal of a change a rollout holds. */
export const isRolloutInProgress = (err: unknown): err is ApiError =>
  err instanceof ApiError && err.code === 'rollout_in_progress';

/** The rollouts under way by scope and Merkmal (`scopeId merkmal` → rollout id): a scope's page links them. */
export async function heldMerkmale(db: Db, organizationId: string, pollIntervalSeconds: number) {
  const [running, paused] = await Promise.all([
    listRollouts(db, organizationId, { status: 'running', limit: 100 }, pollIntervalSeconds),
    listRollouts(db, organizationId, { status: 'paused', limit: 100 }, pollIntervalSeconds),
  ]);
  return new Map([...running.items, ...paused.items].map((r) => [`${r.scope_id} ${r.merkmal}`, r.id]));
}

/** The "in rings" form of a catalog change's confirmation: the rollout's fields, the defaults filled in. */
export function InRingsForm(props: {
  session: PortalSession;
  scope: 'org_unit' | 'group';
  scopeId: string;
  merkmal: string;
  action: RolloutAction;
  from: string;
  button: string;
}) {
  const d = ROLLOUT_DEFAULTS;
  const { form: text } = t().rollouts;
  return (
    <form method="post" action="/portal/rollouts" class="rollout-form">
      <CsrfField session={props.session} />
      <input type="hidden" name="scope" value={props.scope} />
      <input type="hidden" name="scope_id" value={props.scopeId} />
      <input type="hidden" name="merkmal" value={props.merkmal} />
      <input type="hidden" name="action" value={props.action} />
      <input type="hidden" name="from" value={props.from} />
      <label for="rings">{text.rings}</label>
      <input id="rings" name="rings" value={d.rings.join(', ')} required maxlength={100} />
      <label for="max_failure_ratio">{text.maxFailureRatio}</label>
      <input
        id="max_failure_ratio"
        name="max_failure_ratio"
        type="number"
        min={0}
        max={1}
        step="any"
        value={String(d.max_failure_ratio)}
        required
      />
      <label for="min_reported_ratio">{text.minReportedRatio}</label>
      <input
        id="min_reported_ratio"
        name="min_reported_ratio"
        type="number"
        min={0}
        max={1}
        step="any"
        value={String(d.min_reported_ratio)}
        required
      />
      <label for="soak_seconds">{text.soakSeconds}</label>
      <input
        id="soak_seconds"
        name="soak_seconds"
        type="number"
        min={0}
        max={604800}
        step={1}
        value={String(d.soak_seconds)}
        required
      />
      <p>
        <button type="submit">{props.button}</button>
      </p>
    </form>
  );
}

/** A form's number as the API takes it (a German decimal comma too); else the text, for the schema to refuse. */
function numberField(value: string | undefined): number | string {
  const text = (value ?? '').trim().replace(',', '.');
  return text !== '' && Number.isFinite(Number(text)) ? Number(text) : text;
}

/** The rollout the "in rings" form asks for, checked by the API's own schema. */
function rolloutBody(fields: Record<string, string>) {
  const rings = (fields.rings ?? '')
    .split(/[\s,;]+/)
    .filter((r) => r !== '')
    .map((r) => numberField(r));
  const parsed = RolloutCreate.safeParse({
    scope: fields.scope,
    scope_id: (fields.scope_id ?? '').toLowerCase(),
    merkmal: fields.merkmal,
    action: fields.action,
    rings,
    max_failure_ratio: numberField(fields.max_failure_ratio),
    min_reported_ratio: numberField(fields.min_reported_ratio),
    soak_seconds: numberField(fields.soak_seconds),
  });
  if (!parsed.success) throw invalidInput(parsed.error);
  return parsed.data;
}

async function createInRings(c: Context<PortalEnv>, write: PortalWriter, fields: Record<string, string>) {
  const org = c.get('session').organizationId!;
  const back = safeBack(fields.from, '/portal/rollouts');
  const poll = c.get('deps').config.agentPollIntervalSeconds;
  let rollout: Rollout;
  try {
    // The form is checked inside the write, after the session's role: a viewer's forged form is 403 whatever it holds.
    rollout = await write({ param: { id: org } }, async (tx, caller) => {
      const { rollout, audit } = await createRollout(tx, org, rolloutBody(fields), caller, poll);
      return { audit, result: rollout };
    });
  } catch (err) {
    if (isRolloutInProgress(err)) return rolloutInProgressPage(c, err, back);
    // The operator's session is held to the organization it chose: another's scope is not found there.
    if (err instanceof ApiError && err.code === 'organization_mismatch') throw notFound('scope', fields.scope_id ?? '');
    if (err instanceof ApiError && [400, 409, 413, 422].includes(err.status)) {
      return redirectWith(c, back, { kind: 'error', text: refusalText(err) });
    }
    throw err;
  }
  const first = rollout.rings_detail[0]?.devices ?? 0;
  return redirectWith(c, `/portal/rollouts/${rollout.id}`, {
    kind: 'ok',
    text: t().rollouts.started(first, formatNumber(first)),
  });
}

export function rolloutRoutes() {
  const app = new Hono<PortalEnv>();

  app.get('/rollouts', async (c) => {
    const session = c.get('session');
    const org = session.organizationId!;
    const q = c.req.query();
    const status = statuses.find((s) => s === q.status);
    const cursor = q.cursor && q.cursor.length <= 200 ? q.cursor : undefined;
    const db = await portalRead(c, rolloutOps.listRollouts, { param: { id: org } });
    const poll = c.get('deps').config.agentPollIntervalSeconds;
    const [page, names] = await Promise.all([
      listRollouts(db, org, { status, cursor, limit: PAGE_SIZE }, poll),
      scopeNames(db, org),
    ]);
    const text = t().rollouts;
    const query = (more: Record<string, string>) =>
      `/portal/rollouts?${new URLSearchParams({ ...(status ? { status } : {}), ...more })}`;
    return render(
      c,
      <Layout title={text.listTitle} session={session} flash={takeFlash(c)}>
        <p class="muted">{text.intro}</p>
        <form method="get" action="/portal/rollouts" class="filters" aria-label={text.filterForm}>
          <div>
            <label for="status">{text.filter}</label>
            <select id="status" name="status">
              <option value="">{text.all}</option>
              {statuses.map((s) => (
                <option value={s} selected={s === status}>
                  {text.statuses[s]}
                </option>
              ))}
            </select>
          </div>
          <div>
            <button type="submit">{text.apply}</button>
          </div>
        </form>
        {page.items.length === 0 ? (
          <p class="empty">{status ? text.emptyFiltered : text.empty}</p>
        ) : (
          <RolloutTable rollouts={page.items} names={names} admin={canWrite(session)} />
        )}
        <p>
          {cursor ? <a href={query({})}>{text.first}</a> : null}
          {cursor && page.next_cursor ? ' · ' : null}
          {page.next_cursor ? <a href={query({ cursor: page.next_cursor })}>{text.next}</a> : null}
        </p>
      </Layout>,
    );
  });

  app.get('/rollouts/:id', async (c) => {
    const session = c.get('session');
    const id = c.req.param('id').toLowerCase();
    const db = await portalRead(c, rolloutOps.getRollout, { param: { id } });
    const r = await getRollout(db, id, c.get('deps').config.agentPollIntervalSeconds);
    const names = await scopeNames(db, r.organization_id);
    const admin = canWrite(session);
    const live = underWay(r);
    const text = t().rollouts;
    const title = text.title(subjectOf(r), verbOf(r));
    const soak = r.soak_seconds === 0 ? null : duration(r.soak_seconds);
    const waiting = waitingText(r);
    const waitingReason = r.rings_detail.find((d) => d.ring === r.current_ring)?.waiting_for?.reason;
    return render(
      c,
      <Layout title={title} session={session} flash={takeFlash(c)} scripts={live ? [SCRIPT] : []}>
        <p>
          <a href="/portal/rollouts">{text.back}</a>
        </p>
        <div class="table-wrap">
          <table>
            <tbody>
              <tr>
                <th scope="row">{text.scope}</th>
                <td data-field="scope">
                  <ScopeLink rollout={r} names={names} admin={admin} />
                </td>
              </tr>
              <tr>
                <th scope="row">{text.merkmal}</th>
                <td data-field="merkmal">{subjectOf(r)}</td>
              </tr>
              <tr>
                <th scope="row">{text.action}</th>
                <td data-field="action">{verbOf(r)}</td>
              </tr>
              <tr>
                <th scope="row">{text.ringsHeading}</th>
                <td>{r.rings.map((p) => text.percent(formatNumber(p))).join(' → ')}</td>
              </tr>
              <tr>
                <th scope="row">{text.limits}</th>
                <td>{text.limitsText(percent(r.max_failure_ratio), percent(r.min_reported_ratio), soak)}</td>
              </tr>
              <tr>
                <th scope="row">{text.createdBy}</th>
                <td>
                  {actorName(r.created_by as Actor)}, {formatTime(r.created_at)}
                </td>
              </tr>
            </tbody>
          </table>
        </div>
        <section id="rollout-live" data-refresh={live ? String(REFRESH_SECONDS) : undefined} aria-live="polite">
          <p>
            <strong>{text.status}:</strong>{' '}
            <span data-field="status" data-status={r.status} data-reason={r.paused_reason ?? undefined}>
              {statusText(r)}
            </span>
            {r.completed_at ? ` · ${text.completedAt} ${formatTime(r.completed_at)}` : null}
          </p>
          {waiting === null ? null : (
            <p data-field="waiting_for" data-reason={waitingReason}>
              {waiting}
            </p>
          )}
          {admin ? <RolloutActions rollout={r} /> : null}
          <RingTable rollout={r} />
          <p class="muted">{text.uncounted}</p>
          {r.merkmal !== null && r.rings_detail.some((d) => d.failed > 0) ? (
            <p>
              <a
                href={`/portal/devices?${r.scope === 'org_unit' ? 'oe_id' : 'group_id'}=${r.scope_id}&merkmal=${encodeURIComponent(r.merkmal)}&convergence=failed`}
              >
                {text.failedDevices}
              </a>
            </p>
          ) : null}
        </section>
        {live ? (
          <p class="muted">
            {text.refreshNote(formatNumber(REFRESH_SECONDS))} <a href={`/portal/rollouts/${r.id}`}>{text.refresh}</a>
          </p>
        ) : null}
      </Layout>,
    );
  });

  app.get('/rollouts/:id/devices', async (c) => {
    const session = c.get('session');
    const id = c.req.param('id').toLowerCase();
    const db = await portalRead(c, rolloutOps.listRolloutDevices, { param: { id } });
    const poll = c.get('deps').config.agentPollIntervalSeconds;
    const r = await getRollout(db, id, poll);
    const q = c.req.query();
    // What the page cannot take is left out, as the rollouts' list does with its filter.
    const ring =
      q.ring !== undefined && /^[0-9]$/.test(q.ring) && Number(q.ring) < r.rings.length ? Number(q.ring) : undefined;
    const convergence = figureKinds.find((k) => k === q.convergence);
    const cursor = q.cursor && q.cursor.length <= 200 ? q.cursor : undefined;
    const page = await listRolloutDevices(db, id, { ring, convergence, cursor, limit: PAGE_SIZE }, poll);
    const text = t().rollouts;
    const list = text.deviceList;
    const query = (more: Record<string, string>) =>
      `/portal/rollouts/${id}/devices?${new URLSearchParams({
        ...(ring === undefined ? {} : { ring: String(ring) }),
        ...(convergence ? { convergence } : {}),
        ...more,
      })}`;
    const ringName = ring === undefined ? null : text.ring(formatNumber(ring + 1));
    const heading = list.title(ringName, convergence ? text.figure[convergence] : null);
    const now = new Date();
    return render(
      c,
      <Layout title={heading} session={session}>
        <p>
          <a href={`/portal/rollouts/${r.id}`}>{list.back(subjectOf(r), verbOf(r))}</a>
        </p>
        <p class="muted">{list.intro}</p>
        {page.items.length === 0 ? (
          <p class="empty">{list.empty}</p>
        ) : (
          <div class="table-wrap">
            <table class="rollout-devices">
              <thead>
                <tr>
                  <th scope="col">{list.serial}</th>
                  <th scope="col">{list.hostname}</th>
                  <th scope="col">{text.ringsHeading}</th>
                  <th scope="col">{list.convergence}</th>
                  <th scope="col">{list.reported}</th>
                </tr>
              </thead>
              <tbody>
                {page.items.map((d) => (
                  <tr data-device={d.device_id} data-stale={d.stale ? 'true' : undefined}>
                    <td>
                      <a href={`/portal/devices/${d.device_id}`}>{d.serial_number}</a>
                      {d.stale ? (
                        <>
                          {' '}
                          <span class="badge status-stale">{list.stale}</span>
                        </>
                      ) : null}
                    </td>
                    <td>{d.hostname ?? '–'}</td>
                    <td>{text.ring(formatNumber(d.ring + 1))}</td>
                    <td>
                      {d.convergence === null ? (
                        <span class="muted">{list.notOpened}</span>
                      ) : (
                        <ConvergenceBadge convergence={d.convergence} />
                      )}
                    </td>
                    <td>
                      {d.reported === null ? (
                        <span class="muted">{list.nothingReported}</span>
                      ) : (
                        <>
                          {reportLabel(d.reported.event)}, <RelativeTime at={new Date(d.reported.at)} now={now} />
                          {reportMessage(d.reported.detail) === null ? null : (
                            <>
                              : <span class="muted">{reportMessage(d.reported.detail)}</span>
                            </>
                          )}
                        </>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        <p>
          {cursor ? <a href={query({})}>{text.first}</a> : null}
          {cursor && page.next_cursor ? ' · ' : null}
          {page.next_cursor ? <a href={query({ cursor: page.next_cursor })}>{text.next}</a> : null}
        </p>
      </Layout>,
    );
  });

  app.get('/rollouts/:id/confirm/:verb', async (c) => {
    const session = c.get('session');
    const id = c.req.param('id').toLowerCase();
    const verb = verbs.find((v) => v === c.req.param('verb'));
    if (verb === undefined) throw notFound('page', c.req.param('verb'));
    const db = await portalRead(c, verbOperation[verb], { param: { id } });
    const r = await getRollout(db, id, c.get('deps').config.agentPollIntervalSeconds);
    const text = t().rollouts;
    const confirm = text.confirm[verb];
    return render(
      c,
      <Layout title={confirm.title} session={session}>
        <p>
          <strong>{text.title(subjectOf(r), verbOf(r))}</strong> ({statusText(r)})
        </p>
        <p>{confirm.text}</p>
        <form method="post" action={`/portal/rollouts/${r.id}/${verb}`}>
          <CsrfField session={session} />
          <button type="submit" class={verb === 'abort' ? 'danger' : ''}>
            {confirm.button}
          </button>{' '}
          <a href={`/portal/rollouts/${r.id}`}>{text.cancel}</a>
        </form>
      </Layout>,
    );
  });

  for (const verb of verbs) {
    postWrite(app, `/rollouts/:id/${verb}`, verbOperation[verb], async (c, write) => {
      const id = c.req.param('id').toLowerCase();
      const poll = c.get('deps').config.agentPollIntervalSeconds;
      const text = t().rollouts;
      return writeAndRedirect(c, `/portal/rollouts/${id}`, text.confirm[verb].done, () =>
        write({ param: { id } }, async (tx, caller) => {
          try {
            const { audit } = await verbService[verb](tx, id, caller, poll);
            return { audit, result: null };
          } catch (err) {
            if (err instanceof ApiError && err.code === 'rollout_not_active')
              throw new ApiError(err.code, text.notActive);
            throw err;
          }
        }),
      );
    });
  }

  postWrite(app, '/rollouts', rolloutOps.createRollout, async (c, write) =>
    createInRings(c, write, await formFields(c)),
  );

  return app;
}
