/**
 * Staged rollouts in the portal: the organization's rollouts (newest first, by status,
 * paged), a rollout with a bar per ring (its devices converged, pending, failed), pause,
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
  listRollouts,
  pauseRollout,
  resumeRollout,
} from '../rollouts/service.ts';
import { canWrite, type PortalEnv, portalRead, type PortalWriter, postWrite } from './access.ts';
import { formFields, invalidInput, redirectWith, render, safeBack, takeFlash, writeAndRedirect } from './http.tsx';
import { formatTime } from './i18n/index.ts';
import { CsrfField, Layout } from './layout.tsx';
import type { PortalSession } from './session.ts';

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

/** Every string of these pages, in one place. */
const T = {
  listTitle: 'Rollouts',
  intro:
    'Ein Rollout ändert ein Merkmal an einer Organisationseinheit oder Gruppe in Ringen: erst bei wenigen Geräten, ' +
    'dann bei mehr. Melden zu viele Geräte eines Rings einen Fehler, hält es von selbst an, bevor der nächste Ring ' +
    'geöffnet wird. Ein Rollout starten Sie an der Seite einer Organisationseinheit oder Gruppe.',
  empty: 'Noch keine Rollouts.',
  emptyFiltered: 'Keine Rollouts mit diesem Status.',
  filter: 'Status',
  all: 'alle',
  apply: 'Filtern',
  next: 'Nächste Seite →',
  first: '← Erste Seite',
  created: 'Angelegt',
  scope: 'Bereich',
  merkmal: 'Merkmal',
  action: 'Aktion',
  status: 'Status',
  progress: 'Fortschritt',
  details: 'Details',
  ringsHeading: 'Ringe',
  ring: (n: number) => `Ring ${n + 1}`,
  ringOf: (n: number, of: number) => `Ring ${n + 1} von ${of}`,
  upTo: (percent: number) => `bis ${percent} %`,
  devices: 'Geräte',
  bar: 'Umsetzung',
  figures: 'Zahlen',
  opened: 'Geöffnet',
  notOpened: 'noch nicht geöffnet',
  converged: 'umgesetzt',
  pending: 'ausstehend',
  failed: 'fehlgeschlagen',
  uncounted: 'Veraltete oder deprovisionierte Geräte zählen nicht mit (grauer Rest des Balkens).',
  barLabel: (d: RingDetail) =>
    `${d.converged} umgesetzt, ${d.pending} ausstehend, ${d.failed} fehlgeschlagen von ${d.devices} Geräten`,
  refresh: 'Aktualisieren',
  refreshNote: `Die Zahlen aktualisieren sich alle ${REFRESH_SECONDS} Sekunden, solange das Rollout läuft.`,
  back: '← Alle Rollouts',
  title: (r: Rollout) => `Rollout: ${r.merkmal} ${actionLabel[r.action]}`,
  limits: 'Grenzen',
  limitsText: (r: Rollout) =>
    `höchstens ${percent(r.max_failure_ratio)} Fehler je Ring; nächster Ring, wenn mindestens ${percent(
      r.min_reported_ratio,
    )} berichtet haben${r.soak_seconds === 0 ? ' (ohne Wartezeit)' : ` und ${duration(r.soak_seconds)} vergangen sind`}`,
  ringsText: (r: Rollout) => r.rings.map((p) => `${p} %`).join(' → '),
  createdBy: 'Angelegt von',
  completedAt: 'Beendet',
  orgUnit: (name: string) => `Organisationseinheit „${name}“`,
  group: (name: string) => `Gruppe „${name}“`,
  unknownScope: 'gelöscht',
  pausedFailures: (ring: number, failed: number, reported: number, max: number) =>
    `automatisch angehalten: in ${T.ring(ring)} sind ${failed} von ${reported} berichtenden Geräten ` +
    `fehlgeschlagen, mehr als die erlaubten ${percent(max)}. Prüfen Sie die fehlgeschlagenen Geräte; ` +
    'wer fortsetzt, nimmt die bisherigen Fehler hin.',
  pausedManual: 'von Hand angehalten',
  operator: 'Betreiber',
  system: 'System',
  actions: 'Aktionen',
  failedDevices: 'Fehlgeschlagene Geräte des Bereichs',
  confirm: {
    pause: {
      title: 'Rollout anhalten',
      text: 'Es wird kein weiterer Ring geöffnet, bis Sie das Rollout fortsetzen. Geräte geöffneter Ringe behalten die Änderung.',
      button: 'Anhalten',
      done: 'Rollout angehalten.',
      link: 'Anhalten …',
    },
    resume: {
      title: 'Rollout fortsetzen',
      text: 'Das Rollout wird weiter beurteilt und öffnet die nächsten Ringe. Fehler, die es bisher angehalten haben, nehmen Sie damit hin.',
      button: 'Fortsetzen',
      done: 'Rollout fortgesetzt.',
      link: 'Fortsetzen …',
    },
    abort: {
      title: 'Rollout abbrechen',
      text: 'Jedes Gerät eines geöffneten Rings bekommt bei seinem nächsten Check-in seinen vorigen Zustand zurück; am Bereich wird nichts gespeichert. Das lässt sich nicht rückgängig machen.',
      button: 'Abbrechen (Rollout beenden)',
      done: 'Rollout abgebrochen: die Geräte bekommen ihren vorigen Zustand zurück.',
      link: 'Abbrechen …',
    },
  } satisfies Record<Verb, { title: string; text: string; button: string; done: string; link: string }>,
  cancel: 'Zurück',
  notActive:
    'Das geht in diesem Zustand des Rollouts nicht (es ist z. B. schon abgeschlossen, abgebrochen oder ' +
    'bereits angehalten). Nichts wurde geändert.',
  started: (r: Rollout) =>
    `Rollout gestartet: ${T.ring(0)} mit ${r.rings_detail[0]?.devices ?? 0} Geräten ist geöffnet.`,
  inProgressTitle: 'Hier läuft schon ein Rollout',
  inProgress:
    'Dieses Merkmal wird an diesem Bereich gerade von einem Rollout geändert. Solange es läuft oder angehalten ist, ' +
    'geht keine andere Änderung des Merkmals hier. Warten Sie, bis es abgeschlossen ist, oder halten Sie es an und ' +
    'brechen Sie es ab. Nichts wurde geändert.',
  toRollout: 'Zum laufenden Rollout',
  runningHeading: 'Laufende Rollouts',
  noneRunning: 'Kein Rollout läuft.',
  allRollouts: 'Alle Rollouts',
};

const statusLabel: Record<RolloutStatus, string> = {
  running: 'läuft',
  paused: 'angehalten',
  completed: 'abgeschlossen',
  aborted: 'abgebrochen',
};
const statuses = Object.keys(statusLabel) as RolloutStatus[];

export const actionLabel: Record<RolloutAction, string> = {
  select: 'auswählen',
  deselect: 'abwählen',
  unset: 'zurücksetzen',
};

const verbs: Verb[] = ['pause', 'resume', 'abort'];
const verbOperation = {
  pause: rolloutOps.pauseRollout,
  resume: rolloutOps.resumeRollout,
  abort: rolloutOps.abortRollout,
} as const;
const verbService = { pause: pauseRollout, resume: resumeRollout, abort: abortRollout } as const;

function percent(ratio: number): string {
  return `${Math.round(ratio * 1000) / 10} %`;
}

function duration(seconds: number): string {
  if (seconds < 120) return `${seconds} Sekunden`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} Minuten`;
  return `${Math.round((seconds / 3600) * 10) / 10} Stunden`.replace('.', ',');
}

function actorName(actor: Actor | null | undefined): string {
  if (!actor) return '–';
  return actor.type === 'api_key' ? actor.name : actor.type === 'operator' ? T.operator : T.system;
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
  if (name === undefined) return <span>{T.unknownScope}</span>;
  const href = props.admin
    ? `/portal/${unit ? 'org-units' : 'groups'}/${r.scope_id}`
    : `/portal/devices?${unit ? 'oe_id' : 'group_id'}=${r.scope_id}`;
  return <a href={href}>{unit ? T.orgUnit(name) : T.group(name)}</a>;
}

/** The rollout's status in words, with why it paused. */
function statusText(r: Rollout): string {
  if (r.status !== 'paused') return statusLabel[r.status];
  if (r.paused_reason === 'manual') return `${statusLabel.paused} (${T.pausedManual})`;
  const ring = r.rings_detail.find((d) => d.ring === r.current_ring);
  const failed = ring?.failed ?? 0;
  return T.pausedFailures(r.current_ring, failed, failed + (ring?.converged ?? 0), r.max_failure_ratio);
}

/** A ring's devices as one bar: converged, pending, failed by their share; the rest (not counted) grey. */
function RingBar(props: { ring: RingDetail }) {
  const d = props.ring;
  const share = (n: number) => (d.devices === 0 ? 0 : Math.min(100, (100 * n) / d.devices));
  const converged = share(d.converged);
  const pending = Math.min(100 - converged, share(d.pending));
  const failed = Math.min(100 - converged - pending, share(d.failed));
  return (
    <svg class="bar" viewBox="0 0 100 10" preserveAspectRatio="none" role="img" aria-label={T.barLabel(d)}>
      <rect class="converged" x="0" y="0" width={String(converged)} height="10" />
      <rect class="pending" x={String(converged)} y="0" width={String(pending)} height="10" />
      <rect class="failed" x={String(converged + pending)} y="0" width={String(failed)} height="10" />
    </svg>
  );
}

function RingTable(props: { rollout: Rollout }) {
  const r = props.rollout;
  return (
    <table class="rings">
      <thead>
        <tr>
          <th scope="col">{T.ringsHeading}</th>
          <th scope="col" class="number">
            {T.devices}
          </th>
          <th scope="col">{T.bar}</th>
          <th scope="col">{T.figures}</th>
          <th scope="col">{T.opened}</th>
        </tr>
      </thead>
      <tbody>
        {r.rings_detail.map((d) => (
          <tr data-ring={d.ring} data-opened={d.opened_at ? 'true' : 'false'}>
            <th scope="row">
              {T.ring(d.ring)} <span class="muted">({T.upTo(d.percent)})</span>
            </th>
            <td class="number" data-field="devices">
              {d.devices}
            </td>
            <td>{d.opened_at ? <RingBar ring={d} /> : <span class="muted">{T.notOpened}</span>}</td>
            <td>
              {d.opened_at ? (
                <span class="ring-figures">
                  {figureKinds.map((kind) => (
                    <>
                      {/* A zero is plain: only what there is stands out. */}
                      <span class={d[kind] > 0 ? `badge ${kind}` : 'badge'} data-count={kind}>
                        {d[kind]} {T[kind]}
                      </span>{' '}
                    </>
                  ))}
                </span>
              ) : (
                '–'
              )}
            </td>
            <td data-field="opened_at">{d.opened_at ? formatTime(d.opened_at) : T.notOpened}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** Pause, resume and abort, each a link to its confirmation, as the rollout's status allows. */
function RolloutActions(props: { rollout: Rollout }) {
  const r = props.rollout;
  const allowed: Verb[] =
    r.status === 'running' ? ['pause', 'abort'] : r.status === 'paused' ? ['resume', 'abort'] : [];
  if (allowed.length === 0) return null;
  return (
    <p class="actions">
      {allowed.map((verb, i) => (
        <>
          {i > 0 ? ' · ' : null}
          <a href={`/portal/rollouts/${r.id}/confirm/${verb}`} data-action={verb}>
            {T.confirm[verb].link}
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
  const ring = r.status === 'completed' ? '' : `${T.ringOf(r.current_ring, r.rings.length)}: `;
  return `${ring}${converged} von ${devices} Geräten ${T.converged}${failed > 0 ? `, ${failed} ${T.failed}` : ''}`;
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
  return (
    <>
      <h2>{T.runningHeading}</h2>
      {props.rollouts.length === 0 ? (
        <p class="empty">
          {T.noneRunning} <a href="/portal/rollouts">{T.allRollouts}</a>
        </p>
      ) : (
        <RolloutTable rollouts={props.rollouts} names={props.names} admin={canWrite(props.session)} />
      )}
    </>
  );
}

function RolloutTable(props: { rollouts: Rollout[]; names: ScopeNames; admin: boolean }) {
  return (
    <table>
      <thead>
        <tr>
          <th scope="col">{T.created}</th>
          <th scope="col">{T.scope}</th>
          <th scope="col">{T.merkmal}</th>
          <th scope="col">{T.action}</th>
          <th scope="col">{T.status}</th>
          <th scope="col">{T.progress}</th>
          <th scope="col">{T.details}</th>
        </tr>
      </thead>
      <tbody>
        {props.rollouts.map((r) => (
          <tr data-rollout={r.id}>
            <td>{formatTime(r.created_at)}</td>
            <td>
              <ScopeLink rollout={r} names={props.names} admin={props.admin} />
            </td>
            <td>{r.merkmal}</td>
            <td>{actionLabel[r.action]}</td>
            <td data-field="status" data-status={r.status}>
              {statusLabel[r.status]}
              {r.status === 'paused' && r.paused_reason === 'failure_ratio' ? ` (${T.failed})` : ''}
            </td>
            <td>{progressText(r)}</td>
            <td>
              <a href={`/portal/rollouts/${r.id}`} aria-label={`${T.details}: ${r.merkmal} ${actionLabel[r.action]}`}>
                {T.details}
              </a>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
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
  return render(
    c,
    <Layout title={T.inProgressTitle} session={c.get('session')}>
      <p class="flash error">{T.inProgress}</p>
      <p>
        {id ? (
          <>
            <a href={`/portal/rollouts/${id}`}>{T.toRollout}</a> ·{' '}
          </>
        ) : null}
        <a href={back}>{T.cancel}</a>
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
  return (
    <form method="post" action="/portal/rollouts" class="rollout-form">
      <CsrfField session={props.session} />
      <input type="hidden" name="scope" value={props.scope} />
      <input type="hidden" name="scope_id" value={props.scopeId} />
      <input type="hidden" name="merkmal" value={props.merkmal} />
      <input type="hidden" name="action" value={props.action} />
      <input type="hidden" name="from" value={props.from} />
      <label for="rings">Ringe (kumulierte Prozent, aufsteigend, der letzte 100)</label>
      <input id="rings" name="rings" value={d.rings.join(', ')} required maxlength={100} />
      <label for="max_failure_ratio">Höchster Fehleranteil je Ring (0 bis 1; 0.1 = 10 %)</label>
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
      <label for="min_reported_ratio">Mindestanteil berichtender Geräte vor dem nächsten Ring (0 bis 1)</label>
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
      <label for="soak_seconds">Wartezeit je Ring in Sekunden (3600 = 1 Stunde)</label>
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
      return redirectWith(c, back, { kind: 'error', text: err.message });
    }
    throw err;
  }
  return redirectWith(c, `/portal/rollouts/${rollout.id}`, { kind: 'ok', text: T.started(rollout) });
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
    const query = (more: Record<string, string>) =>
      `/portal/rollouts?${new URLSearchParams({ ...(status ? { status } : {}), ...more })}`;
    return render(
      c,
      <Layout title={T.listTitle} session={session} flash={takeFlash(c)}>
        <p class="muted">{T.intro}</p>
        <form method="get" action="/portal/rollouts" class="filters" aria-label="Rollouts filtern">
          <div>
            <label for="status">{T.filter}</label>
            <select id="status" name="status">
              <option value="">{T.all}</option>
              {statuses.map((s) => (
                <option value={s} selected={s === status}>
                  {statusLabel[s]}
                </option>
              ))}
            </select>
          </div>
          <div>
            <button type="submit">{T.apply}</button>
          </div>
        </form>
        {page.items.length === 0 ? (
          <p class="empty">{status ? T.emptyFiltered : T.empty}</p>
        ) : (
          <RolloutTable rollouts={page.items} names={names} admin={canWrite(session)} />
        )}
        <p>
          {cursor ? <a href={query({})}>{T.first}</a> : null}
          {cursor && page.next_cursor ? ' · ' : null}
          {page.next_cursor ? <a href={query({ cursor: page.next_cursor })}>{T.next}</a> : null}
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
    return render(
      c,
      <Layout title={T.title(r)} session={session} flash={takeFlash(c)} scripts={live ? [SCRIPT] : []}>
        <p>
          <a href="/portal/rollouts">{T.back}</a>
        </p>
        <table>
          <tbody>
            <tr>
              <th scope="row">{T.scope}</th>
              <td data-field="scope">
                <ScopeLink rollout={r} names={names} admin={admin} />
              </td>
            </tr>
            <tr>
              <th scope="row">{T.merkmal}</th>
              <td data-field="merkmal">{r.merkmal}</td>
            </tr>
            <tr>
              <th scope="row">{T.action}</th>
              <td data-field="action">{actionLabel[r.action]}</td>
            </tr>
            <tr>
              <th scope="row">{T.ringsHeading}</th>
              <td>{T.ringsText(r)}</td>
            </tr>
            <tr>
              <th scope="row">{T.limits}</th>
              <td>{T.limitsText(r)}</td>
            </tr>
            <tr>
              <th scope="row">{T.createdBy}</th>
              <td>
                {actorName(r.created_by as Actor)}, {formatTime(r.created_at)}
              </td>
            </tr>
          </tbody>
        </table>
        <section id="rollout-live" data-refresh={live ? String(REFRESH_SECONDS) : undefined} aria-live="polite">
          <p>
            <strong>{T.status}:</strong>{' '}
            <span data-field="status" data-status={r.status} data-reason={r.paused_reason ?? undefined}>
              {statusText(r)}
            </span>
            {r.completed_at ? ` · ${T.completedAt} ${formatTime(r.completed_at)}` : null}
          </p>
          {admin ? <RolloutActions rollout={r} /> : null}
          <RingTable rollout={r} />
          <p class="muted">{T.uncounted}</p>
          {r.rings_detail.some((d) => d.failed > 0) ? (
            <p>
              <a
                href={`/portal/devices?${r.scope === 'org_unit' ? 'oe_id' : 'group_id'}=${r.scope_id}&merkmal=${encodeURIComponent(r.merkmal)}&convergence=failed`}
              >
                {T.failedDevices}
              </a>
            </p>
          ) : null}
        </section>
        {live ? (
          <p class="muted">
            {T.refreshNote} <a href={`/portal/rollouts/${r.id}`}>{T.refresh}</a>
          </p>
        ) : null}
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
    const text = T.confirm[verb];
    return render(
      c,
      <Layout title={text.title} session={session}>
        <p>
          <strong>{T.title(r)}</strong> ({statusText(r)})
        </p>
        <p>{text.text}</p>
        <form method="post" action={`/portal/rollouts/${r.id}/${verb}`}>
          <CsrfField session={session} />
          <button type="submit" class={verb === 'abort' ? 'danger' : ''}>
            {text.button}
          </button>{' '}
          <a href={`/portal/rollouts/${r.id}`}>{T.cancel}</a>
        </form>
      </Layout>,
    );
  });

  for (const verb of verbs) {
    postWrite(app, `/rollouts/:id/${verb}`, verbOperation[verb], async (c, write) => {
      const id = c.req.param('id').toLowerCase();
      const poll = c.get('deps').config.agentPollIntervalSeconds;
      return writeAndRedirect(c, `/portal/rollouts/${id}`, T.confirm[verb].done, () =>
        write({ param: { id } }, async (tx, caller) => {
          try {
            const { audit } = await verbService[verb](tx, id, caller, poll);
            return { audit, result: null };
          } catch (err) {
            if (err instanceof ApiError && err.code === 'rollout_not_active') throw new ApiError(err.code, T.notActive);
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
