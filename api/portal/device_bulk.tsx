/**
 * Bulk actions of the device list: move to an org unit, add to or remove from a group,
 * select / deselect / unset a Merkmal, on the devices ticked in the list or on every device
 * its filter matches. A confirmation page names how many devices the action changes; the
 * action then makes, for each device, the very operation of its single change (the same
 * declaration, service function and one audit event per device), in chunks of
 * transactions, and reports the devices a rule refused (an archived device) beside those
 * it changed.
 */
import type { Context } from 'hono';
import { Hono } from 'hono';
import type { BulkOutcome } from '../access/bulk.ts';
import {
  type BulkAction,
  bulkActions,
  operationOf,
  requestOf,
  changeOf,
  type Target,
  targetOf,
} from '../device_bulk/actions.ts';
import { BULK_JOB_THRESHOLD, type BulkJobRow, getBulkJob, queueBulkJob, type Refusal } from '../device_bulk/jobs.ts';
import type { Db } from '../db/client.ts';
import * as deviceOps from '../devices/operations.ts';
import {
  countOrganizationDevices,
  type DeviceFilter,
  deviceSerials,
  listMatchingDeviceIds,
  lockDevices,
} from '../devices/organize_repo.ts';
import { listGroups } from '../groups/repo.ts';
import { listOrgUnits } from '../org_units/repo.ts';
import { unitChoices } from './org_unit_paths.ts';
import { notFound } from '../http/errors.ts';
import { isUuid } from '../http/uuid.ts';
import {
  authorizeEach,
  type PortalBulkWriter,
  type PortalEnv,
  portalRead,
  postBulkWrite,
  queueWrite,
} from './access.ts';
import { filterParams, listFilterOf, oneOf } from './device_filter.ts';
import { formFields, redirectWith, render } from './http.tsx';
import { formatNumber, t } from './i18n/index.ts';
import { CsrfField, Layout } from './layout.tsx';
import type { PortalSession } from './session.ts';

/** The query field of each kind of target. */
const targetField: Record<Target, string> = { oe: 'target_oe', group: 'target_group', merkmal: 'target_merkmal' };

/** At most this many devices ticked by hand (the list shows 50 a page): more is a forged form. */
const MAX_SELECTED = 1_000;

/** `n` devices, the number as the request's language writes it. */
const devices = (n: number) => t().bulk.devices(n, formatNumber(n));

/** The form's path of an action (a Merkmal's travels in the path, as in the single change's). */
function formPath(action: BulkAction, target: string): string {
  return targetOf[action] === 'merkmal'
    ? `/portal/devices/bulk/catalog/${encodeURIComponent(target)}/${action}`
    : `/portal/devices/bulk/${action}`;
}

/** The ids of the ticked devices: each a UUID (else 404, as an unknown id), once each. */
export function selectedIds(values: readonly string[]): string[] {
  const ids = new Set<string>();
  for (const value of values) {
    for (const id of value.split(/[\s,]+/).filter(Boolean)) {
      if (!isUuid(id)) throw notFound('device', id);
      ids.add(id.toLowerCase());
    }
  }
  return [...ids];
}

/** The controls below the list: the action, its target, and whether on the ticked devices or every one the filter matches. */
export function BulkControls(props: {
  names: { units: { id: string; parent_id: string | null; name: string }[]; groups: { id: string; name: string }[] };
  merkmale: { key: string; name: string }[];
  /** The device actions (device_actions_bulk.tsx), offered in a group of their own: they need no target. */
  deviceActions: { label: string; options: { value: string; label: string }[] };
  total: string;
}) {
  const { bulk: text } = t();
  const options: Record<Target, { value: string; label: string }[]> = {
    oe: unitChoices(props.names.units).map(({ unit, path }) => ({ value: unit.id, label: path })),
    group: props.names.groups.map((g) => ({ value: g.id, label: g.name })),
    merkmal: props.merkmale.map((m) => ({ value: m.key, label: `${m.name} (${m.key})` })),
  };
  return (
    <fieldset class="bulk">
      <legend>{text.legend}</legend>
      <div class="filters">
        <div>
          <label for="bulk-action">{text.action}</label>
          <select id="bulk-action" name="action" required>
            <option value="">{text.chooseAction}</option>
            {bulkActions.map((a) => (
              <option value={a}>{text.actions[a]}</option>
            ))}
            <optgroup label={props.deviceActions.label}>
              {props.deviceActions.options.map((o) => (
                <option value={o.value}>{o.label}</option>
              ))}
            </optgroup>
          </select>
        </div>
        {(['oe', 'group', 'merkmal'] as const).map((target) => (
          <div>
            <label for={`bulk-${target}`}>{text.targets[target]}</label>
            <select id={`bulk-${target}`} name={targetField[target]}>
              <option value="">{text.none}</option>
              {options[target].map((o) => (
                <option value={o.value}>{o.label}</option>
              ))}
            </select>
          </div>
        ))}
        <div>
          <button type="submit" name="scope" value="selected">
            {text.applySelected}
          </button>{' '}
          <button type="submit" name="scope" value="filter" class="secondary">
            {text.applyFiltered(props.total)}
          </button>
        </div>
      </div>
    </fieldset>
  );
}

/** What the list's form asked for: the action, its target, and the devices (ticked) or the filter. */
interface BulkRequest {
  action: BulkAction;
  target: string | undefined;
  scope: 'selected' | 'filter';
  selected: string[];
  filter: DeviceFilter;
}

function bulkRequestOf(
  action: BulkAction,
  fields: Record<string, string | undefined>,
  devices: readonly string[],
): BulkRequest {
  const raw = fields[targetField[targetOf[action]]]?.trim();
  return {
    action,
    target: raw ? raw : undefined,
    scope: fields.scope === 'filter' ? 'filter' : 'selected',
    selected: fields.scope === 'filter' ? [] : selectedIds(devices),
    filter: listFilterOf(fields),
  };
}

/** The list page the request came from, with its filter. */
function listOf(filter: DeviceFilter): string {
  const params = filterParams(filter);
  return params.size > 0 ? `/portal/devices?${params}` : '/portal/devices';
}

/**
 * Checks what is named before anything is counted or changed: the role and every id (the
 * ticked devices, the target, the filter's unit and group; another organization's is
 * 404); then a missing target, no ticked device or too many is sent back to the list.
 */
async function checked(c: Context<PortalEnv>, r: BulkRequest): Promise<Response | Db> {
  const session = c.get('session');
  const operation = operationOf(r.action);
  const requests = r.scope === 'selected' ? r.selected.map((id) => requestOf(r.action, r.target, id)) : [];
  await authorizeEach(c, operation, [...requests, requestOf(r.action, r.target, undefined)]);
  const db = await portalRead(c, deviceOps.listDevices, {
    param: { id: session.organizationId! },
    query: { oe_id: r.filter.oe_id, group_id: r.filter.group_id },
  });
  const back = listOf(r.filter);
  const { bulk: text } = t();
  const refusal =
    r.target === undefined
      ? text.noTarget[targetOf[r.action]]
      : r.scope === 'selected' && r.selected.length === 0
        ? text.noDevices
        : r.selected.length > MAX_SELECTED
          ? text.tooMany(formatNumber(MAX_SELECTED))
          : null;
  if (refusal !== null) return redirectWith(c, back, { kind: 'error', text: refusal });
  return db;
}

/** The target's name as the confirmation shows it. */
async function targetName(db: Db, c: Context<PortalEnv>, action: BulkAction, target: string): Promise<string> {
  const org = c.get('session').organizationId!;
  switch (targetOf[action]) {
    case 'oe':
      return (await listOrgUnits(db, org, null, 10_000)).find((u) => u.id === target)?.name ?? target;
    case 'group':
      return (await listGroups(db, org, null, 10_000)).find((g) => g.id === target)?.name ?? target;
    case 'merkmal':
      return target;
  }
}

function Confirmation(props: {
  session: PortalSession;
  r: BulkRequest & { target: string };
  count: number;
  name: string;
  serials: string[];
}) {
  const { r, count } = props;
  const { bulk: text } = t();
  return (
    <Layout title={text.confirmTitle} session={props.session}>
      <p>
        <strong>{text.summary[r.action](props.name)}</strong>
      </p>
      <p>
        {text.changes} <strong data-field="count">{devices(count)}</strong>:{' '}
        {r.scope === 'filter' ? text.filteredDevices : text.selectedDevices}.
      </p>
      {props.serials.length > 0 ? <p class="serials">{props.serials.join(', ')}</p> : null}
      {count === 0 ? (
        <p class="empty">{text.nothingToChange}</p>
      ) : (
        <form method="post" action={formPath(r.action, r.target)}>
          <CsrfField session={props.session} />
          <input type="hidden" name="scope" value={r.scope} />
          {r.scope === 'selected' ? <input type="hidden" name="device" value={r.selected.join(' ')} /> : null}
          {[...filterParams(r.filter)].map(([name, value]) => (
            <input type="hidden" name={name} value={value} />
          ))}
          {targetOf[r.action] === 'merkmal' ? null : (
            <input type="hidden" name={targetField[targetOf[r.action]]} value={r.target} />
          )}
          <p class="muted">{text.eachAudited}</p>
          {count > BULK_JOB_THRESHOLD ? (
            <p class="muted" data-field="background">
              {text.job.background(formatNumber(BULK_JOB_THRESHOLD))}
            </p>
          ) : null}
          <button type="submit" class="danger">
            {text.confirm(devices(count))}
          </button>{' '}
          <a href={listOf(r.filter)}>{text.cancel}</a>
        </form>
      )}
    </Layout>
  );
}

/** The devices a rule refused, each with the reason in the page's language where there is one. */
function Refusals(props: { rows: readonly Refusal[]; serials: Map<string, string> }) {
  const { bulk: text } = t();
  return (
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
            <th scope="col">{text.serial}</th>
            <th scope="col">{text.reason}</th>
          </tr>
        </thead>
        <tbody>
          {props.rows.map((r) => (
            <tr data-failed={r.device_id}>
              <td>
                <a href={`/portal/devices/${r.device_id}`}>{props.serials.get(r.device_id) ?? r.device_id}</a>
              </td>
              <td data-code={r.code}>{text.reasons[r.code] ?? r.message}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** A bulk result's refused devices: their count and each one's reason; nothing when none was refused. */
export function RefusedDevices(props: {
  failed: BulkOutcome<string>['failed'];
  count: string;
  label: string;
  serials: Map<string, string>;
}) {
  if (props.failed.length === 0) return null;
  return (
    <>
      <p>
        <strong data-field="failed">{props.count}</strong> {props.label}
      </p>
      <Refusals
        rows={props.failed.map(({ item, error }) => ({ device_id: item, code: error.code, message: error.message }))}
        serials={props.serials}
      />
    </>
  );
}

/**
 * A bulk action running in the background: what it does, how far it is (changed, refused,
 * left) and, once done, the result; it reloads itself while it runs (no script needed).
 */
function JobPage(props: { session: PortalSession; job: BulkJobRow; serials: Map<string, string> }) {
  const { job } = props;
  const { bulk: text } = t();
  const page = text.job;
  const running = job.status === 'queued' || job.status === 'running';
  return (
    <Layout title={page.title} session={props.session} refreshSeconds={running ? 2 : undefined}>
      <p>
        <strong>{text.summary[job.action](job.target_name)}</strong>
      </p>
      <p>{page.many(devices(job.total))}</p>
      <div class="table-wrap">
        <table class="hardware" data-bulk-job={job.id} data-status={job.status}>
          <tbody>
            <tr>
              <th scope="row">{page.status}</th>
              <td data-field="status">
                <span
                  class={`badge ${job.status === 'completed' ? 'converged' : job.status === 'failed' ? 'failed' : 'pending'}`}
                >
                  {page.statuses[job.status]}
                </span>
              </td>
            </tr>
            <tr>
              <th scope="row">{page.progress}</th>
              <td>
                <progress max={String(job.total)} value={String(job.done)}>
                  {formatNumber(job.done)} / {formatNumber(job.total)}
                </progress>{' '}
                {formatNumber(job.done)} / {formatNumber(job.total)}
              </td>
            </tr>
            <tr>
              <th scope="row">{page.changed}</th>
              <td data-field="changed" data-value={String(job.changed)}>
                {formatNumber(job.changed)}
              </td>
            </tr>
            <tr>
              <th scope="row">{page.refused}</th>
              <td data-field="refused" data-value={String(job.refused)}>
                {formatNumber(job.refused)}
              </td>
            </tr>
            <tr>
              <th scope="row">{page.left}</th>
              <td data-field="left" data-value={String(job.total - job.done)}>
                {formatNumber(job.total - job.done)}
              </td>
            </tr>
            {job.error === null ? null : (
              <tr>
                <th scope="row">{page.error}</th>
                <td data-field="error">{job.error}</td>
              </tr>
            )}
          </tbody>
        </table>
      </div>
      {running ? <p class="muted">{page.refreshing}</p> : null}
      {job.refusals.length > 0 ? (
        <>
          {job.refusals.length < job.refused ? <p>{page.moreRefused(formatNumber(job.refusals.length))}</p> : null}
          <Refusals rows={job.refusals} serials={props.serials} />
        </>
      ) : null}
      <p>
        <a href={listOf(job.filter)}>{text.backToList}</a>
      </p>
    </Layout>
  );
}

function Result(props: {
  session: PortalSession;
  filter: DeviceFilter;
  outcome: BulkOutcome<string>;
  serials: Map<string, string>;
}) {
  const { outcome } = props;
  const { bulk: text } = t();
  return (
    <Layout title={text.resultTitle} session={props.session}>
      <p>
        <strong data-field="changed">{devices(outcome.changed.length)}</strong> {text.changed}.
      </p>
      <RefusedDevices
        failed={outcome.failed}
        count={devices(outcome.failed.length)}
        label={text.notChanged}
        serials={props.serials}
      />
      <p>
        <a href={listOf(props.filter)}>{text.backToList}</a>
      </p>
    </Layout>
  );
}

export function deviceBulkRoutes() {
  const app = new Hono<PortalEnv>();

  // Registered before the device pages (mounted first): "bulk" is no device id.
  app.get('/devices/bulk', async (c) => {
    const session = c.get('session');
    const q = c.req.query();
    const action = oneOf(bulkActions, q.action);
    const filter = listFilterOf(q);
    if (action === undefined) return redirectWith(c, listOf(filter), { kind: 'error', text: t().bulk.noAction });
    const r = bulkRequestOf(action, q, c.req.queries('device') ?? []);
    const db = await checked(c, r);
    if (db instanceof Response) return db;
    const target = r.target!;
    const context = { pollIntervalSeconds: c.get('deps').config.agentPollIntervalSeconds };
    const count =
      r.scope === 'filter'
        ? await countOrganizationDevices(db, session.organizationId!, r.filter, context)
        : r.selected.length;
    const serials =
      r.scope === 'selected' ? [...(await deviceSerials(db, session.organizationId!, r.selected)).values()].sort() : [];
    return render(
      c,
      <Confirmation
        session={session}
        r={{ ...r, target }}
        count={count}
        name={await targetName(db, c, action, target)}
        serials={serials}
      />,
    );
  });

  // A bulk action's page while the worker runs it and after (an organization's own only).
  app.get('/devices/bulk/jobs/:id', async (c) => {
    const session = c.get('session');
    const org = session.organizationId!;
    const id = c.req.param('id');
    const db = await portalRead(c, deviceOps.listDevices, { param: { id: org } });
    const job = isUuid(id) ? await getBulkJob(db, id.toLowerCase()) : null;
    if (job === null || job.organization_id !== org) throw notFound('bulk action', id);
    const serials = await deviceSerials(
      db,
      org,
      job.refusals.map((r) => r.device_id),
    );
    return render(c, <JobPage session={session} job={job} serials={serials} />);
  });

  const apply = (action: BulkAction) => async (c: Context<PortalEnv>, writeEach: PortalBulkWriter) => {
    const session = c.get('session');
    const org = session.organizationId!;
    const fields = await formFields(c);
    const merkmal = c.req.param('merkmal');
    const r = bulkRequestOf(
      action,
      targetOf[action] === 'merkmal' ? { ...fields, target_merkmal: merkmal } : fields,
      fields.device === undefined ? [] : [fields.device],
    );
    const db = await checked(c, r);
    if (db instanceof Response) return db;
    const target = r.target!;
    const poll = c.get('deps').config.agentPollIntervalSeconds;
    // Ticked devices are never more than a job's threshold (MAX_SELECTED): only a filter's are counted.
    const count =
      r.scope === 'filter' ? await countOrganizationDevices(db, org, r.filter, { pollIntervalSeconds: poll }) : 0;
    if (count > BULK_JOB_THRESHOLD) {
      // Too many for one request: the worker lists and changes them (each as below), this answers at once.
      const name = await targetName(db, c, action, target);
      const id = await queueWrite(c, operationOf(action), (tx, caller, organizationId) =>
        queueBulkJob(tx, {
          organizationId,
          action,
          target,
          targetName: name,
          filter: r.filter,
          caller,
          requestId: c.get('requestId'),
          count,
        }),
      );
      return c.redirect(`/portal/devices/bulk/jobs/${id}`, 303);
    }
    const ids =
      r.scope === 'filter'
        ? (await listMatchingDeviceIds(db, org, r.filter, { pollIntervalSeconds: poll })).map((d) => d.id)
        : r.selected;
    const outcome = await writeEach(ids, {
      requestOf: (id) => requestOf(action, target, id),
      lock: lockDevices,
      change: changeOf(action, target, poll),
    });
    const serials = await deviceSerials(
      db,
      org,
      outcome.failed.map((f) => f.item),
    );
    return render(c, <Result session={session} filter={r.filter} outcome={outcome} serials={serials} />);
  };

  for (const action of ['move', 'group-add', 'group-remove'] as const) {
    postBulkWrite(app, `/devices/bulk/${action}`, operationOf(action), apply(action));
  }
  for (const verb of ['select', 'deselect', 'unset'] as const) {
    postBulkWrite(app, `/devices/bulk/catalog/:merkmal/${verb}`, operationOf(verb), apply(verb));
  }
  return app;
}
