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
import { actorOf, type AuditEntry, type Caller, type Operation, type RequestValues } from '../access/declaration.ts';
import { recordEffectiveChange } from '../catalog/effective_changes.ts';
import { selectionOperations, type SelectionVerb } from '../catalog/operations.ts';
import { changeSelection } from '../catalog/service.ts';
import type { Db } from '../db/client.ts';
import * as deviceOps from '../devices/operations.ts';
import {
  countOrganizationDevices,
  type DeviceFilter,
  deviceSerials,
  listMatchingDeviceIds,
  lockDevices,
  moveDevice,
} from '../devices/organize_repo.ts';
import * as groupOps from '../groups/operations.ts';
import { listGroups } from '../groups/repo.ts';
import { listOrgUnits } from '../org_units/repo.ts';
import { unitChoices } from './org_unit_paths.ts';
import { changeMember } from '../groups/service.ts';
import { notFound } from '../http/errors.ts';
import { isUuid } from '../http/uuid.ts';
import {
  authorizeEach,
  type BulkOutcome,
  type PortalBulkWriter,
  type PortalEnv,
  portalRead,
  postBulkWrite,
} from './access.ts';
import { filterParams, listFilterOf, oneOf } from './device_filter.ts';
import { formFields, redirectWith, render } from './http.tsx';
import { formatNumber, t } from './i18n/index.ts';
import { CsrfField, Layout } from './layout.tsx';
import type { PortalSession } from './session.ts';

/** The actions, by the path segment of their form. */
const bulkActions = ['move', 'group-add', 'group-remove', 'select', 'deselect', 'unset'] as const;
type BulkAction = (typeof bulkActions)[number];
type Target = 'oe' | 'group' | 'merkmal';
const targetOf: Record<BulkAction, Target> = {
  move: 'oe',
  'group-add': 'group',
  'group-remove': 'group',
  select: 'merkmal',
  deselect: 'merkmal',
  unset: 'merkmal',
};
/** The query field of each kind of target. */
const targetField: Record<Target, string> = { oe: 'target_oe', group: 'target_group', merkmal: 'target_merkmal' };

/** At most this many devices ticked by hand (the list shows 50 a page): more is a forged form. */
const MAX_SELECTED = 1_000;

/** `n` devices, the number as the request's language writes it. */
const devices = (n: number) => t().bulk.devices(n, formatNumber(n));

/** The declaration each action's form makes for each device: its API twin's. */
function operationOf(action: BulkAction): Operation {
  switch (action) {
    case 'move':
      return deviceOps.moveDevice;
    case 'group-add':
      return groupOps.addGroupMember;
    case 'group-remove':
      return groupOps.removeGroupMember;
    default:
      return selectionOperations.devices[action];
  }
}

/** A device's request as the action's API call names it (`target` may be missing: the devices alone). */
function requestOf(action: BulkAction, target: string | undefined, deviceId: string | undefined): RequestValues {
  switch (targetOf[action]) {
    case 'oe':
      return { param: { id: deviceId }, json: { oe_id: target } };
    case 'group':
      return { param: { id: target, device_id: deviceId } };
    case 'merkmal':
      return { param: { id: deviceId, merkmal: target } };
  }
}

/** The form's path of an action (a Merkmal's travels in the path, as in the single change's). */
function formPath(action: BulkAction, target: string): string {
  return targetOf[action] === 'merkmal'
    ? `/portal/devices/bulk/catalog/${encodeURIComponent(target)}/${action}`
    : `/portal/devices/bulk/${action}`;
}

/** The ids of the ticked devices: each a UUID (else 404, as an unknown id), once each. */
function selectedIds(values: readonly string[]): string[] {
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
          <button type="submit" class="danger">
            {text.confirm(devices(count))}
          </button>{' '}
          <a href={listOf(r.filter)}>{text.cancel}</a>
        </form>
      )}
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
      {outcome.failed.length > 0 ? (
        <>
          <p>
            <strong data-field="failed">{devices(outcome.failed.length)}</strong> {text.notChanged}
          </p>
          <table>
            <thead>
              <tr>
                <th scope="col">{text.serial}</th>
                <th scope="col">{text.reason}</th>
              </tr>
            </thead>
            <tbody>
              {outcome.failed.map(({ item, error }) => (
                <tr data-failed={item}>
                  <td>
                    <a href={`/portal/devices/${item}`}>{props.serials.get(item) ?? item}</a>
                  </td>
                  <td data-code={error.code}>{text.reasons[error.code] ?? error.message}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      ) : null}
      <p>
        <a href={listOf(props.filter)}>{text.backToList}</a>
      </p>
    </Layout>
  );
}

/** Each action's change of one device, by the service function its API route calls, and the route's audit entry. */
function changeOf(
  action: BulkAction,
  target: string,
  pollIntervalSeconds: number,
): (tx: Db, caller: Caller, deviceId: string) => Promise<{ audit: AuditEntry }> {
  switch (action) {
    case 'move':
      return async (tx, caller, deviceId) => {
        const row = await moveDevice(tx, deviceId, target, actorOf(caller), recordEffectiveChange, pollIntervalSeconds);
        return {
          audit: {
            organizationId: row.organization_id,
            targetType: 'device',
            targetId: deviceId,
            details: { oe_id: target },
          },
        };
      };
    case 'group-add':
    case 'group-remove':
      return (tx, caller, deviceId) =>
        changeMember(tx, action === 'group-add' ? 'add' : 'remove', target, deviceId, caller, recordEffectiveChange);
    default: {
      const verb: SelectionVerb = action;
      const change =
        verb === 'unset'
          ? ({ kind: 'unset' } as const)
          : ({ kind: 'set', state: verb === 'select' ? 'present' : 'absent', optionen: {} } as const);
      return (tx, caller, deviceId) => changeSelection(tx, 'devices', deviceId, target, change, caller);
    }
  }
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
