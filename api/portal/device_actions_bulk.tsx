/**
 * The device list's bulk actions that queue a device action (reboot, apply now, apply
 * updates, a script) on the ticked devices or on every device the list's filter matches.
 * Its page takes the action's settings and names the count of devices in its button; up to
 * RINGS_ABOVE devices each gets its own action, by the API's create (its declaration,
 * service function and one audit event per device). Above, the action goes out as a
 * rollout in rings with `device_action` (the rollouts' create, as the API's POST
 * /rollouts makes it) over the org unit or the group the list is filtered by, the count
 * the admin confirmed as its `expected_devices`. A count that changed between the page and
 * the post queues nothing and shows the page again with the new count.
 */
import type { Context } from 'hono';
import { Hono } from 'hono';
import type { Child } from 'hono/jsx';
import * as actionOps from '../actions/operations.ts';
import type { ActionType } from '../actions/schemas.ts';
import { createAction } from '../actions/service.ts';
import type { BulkOutcome } from '../access/bulk.ts';
import * as deviceOps from '../devices/operations.ts';
import type { Db } from '../db/client.ts';
import * as groupOps from '../groups/operations.ts';
import { requireGroup } from '../groups/repo.ts';
import * as orgUnitOps from '../org_units/operations.ts';
import { requireOrgUnit } from '../org_units/repo.ts';
import * as rolloutOps from '../rollouts/operations.ts';
import { devicesOfScope, type RolloutScope } from '../rollouts/rings.ts';
import { createRollout } from '../rollouts/service.ts';
import {
  countOrganizationDevices,
  type DeviceFilter,
  deviceSerials,
  listMatchingDeviceIds,
  lockDevices,
} from '../devices/organize_repo.ts';
import { ApiError, notFound } from '../http/errors.ts';
import { authorizeEach, type PortalEnv, portalRead, postBulkWrite, postWrite } from './access.ts';
import {
  actionBodyOf,
  actionTypes,
  type CheckedAction,
  checkedBody,
  ConfirmationPage,
  typeLabel,
} from './device_actions.tsx';
import { RefusedDevices, selectedIds } from './device_bulk.tsx';
import { filterParams, listFilterOf, oneOf } from './device_filter.ts';
import { formFields, redirectWith, render } from './http.tsx';
import { formatNumber, t } from './i18n/index.ts';
import { type Flash, Layout } from './layout.tsx';
import { refusalText } from './refusals.ts';
import { RingFields, ringSettingsOf } from './rollouts.tsx';
import type { PortalSession } from './session.ts';

/** Up to this many devices each gets its action at once; more go out in rings. */
const RINGS_ABOVE = 50;

/** The device actions as the list's bulk control offers them. */
export function bulkActionChoices() {
  return {
    label: t().actions.bulk.group,
    options: actionTypes.map((type) => ({ value: type, label: typeLabel(type) })),
  };
}

/** The devices a bulk action names: the ticked ones, or every one the list's filter matches. */
interface Devices {
  scope: 'selected' | 'filter';
  selected: string[];
  filter: DeviceFilter;
}

function devicesOf(fields: Record<string, string | undefined>, ticked: readonly string[]): Devices {
  const scope = fields.scope === 'filter' ? 'filter' : 'selected';
  return { scope, selected: scope === 'filter' ? [] : selectedIds(ticked), filter: listFilterOf(fields) };
}

/** The list page the action came from, with its filter. */
function listOf(filter: DeviceFilter): string {
  const params = filterParams(filter);
  return params.size > 0 ? `/portal/devices?${params}` : '/portal/devices';
}

const countText = (n: number) => t().bulk.devices(n, formatNumber(n));

/**
 * Checks what is named before anything is counted or changed: the role and every ticked
 * device (another organization's is 404), the filter's unit and group; then no ticked
 * device, or more than RINGS_ABOVE, goes back to the list with why.
 */
async function checked(c: Context<PortalEnv>, devices: Devices) {
  await authorizeEach(
    c,
    actionOps.createAction,
    devices.selected.map((id) => ({ param: { id } })),
  );
  const db = await portalRead(c, deviceOps.listDevices, {
    param: { id: c.get('session').organizationId! },
    query: { oe_id: devices.filter.oe_id, group_id: devices.filter.group_id },
  });
  const text = t();
  const refusal =
    devices.scope === 'selected' && devices.selected.length === 0
      ? text.bulk.noDevices
      : devices.selected.length > RINGS_ABOVE
        ? text.actions.bulk.tooManyTicked(formatNumber(RINGS_ABOVE))
        : null;
  return { db, refusal };
}

/** The devices the action goes to now: the ticked ones, or the ids the filter matches. */
async function deviceIdsOf(c: Context<PortalEnv>, db: Db, devices: Devices) {
  if (devices.scope === 'selected') return devices.selected;
  const context = { pollIntervalSeconds: c.get('deps').config.agentPollIntervalSeconds };
  return (await listMatchingDeviceIds(db, c.get('session').organizationId!, devices.filter, context)).map((d) => d.id);
}

/**
 * The action's page for these devices: its settings (`values`, the defaults at first) and
 * the count in its button; above RINGS_ABOVE devices, why it cannot go out from here.
 */
async function bulkPage(
  c: Context<PortalEnv>,
  db: Db,
  type: ActionType,
  devices: Devices,
  values: Record<string, unknown>,
  flash: Flash | null = null,
  status: 200 | 400 | 409 = 200,
) {
  const session = c.get('session');
  const org = session.organizationId!;
  const back = listOf(devices.filter);
  const text = t();
  const count =
    devices.scope === 'filter'
      ? await countOrganizationDevices(db, org, devices.filter, {
          pollIntervalSeconds: c.get('deps').config.agentPollIntervalSeconds,
        })
      : devices.selected.length;
  if (count === 0) {
    return render(
      c,
      <Layout title={text.actions.bulk.title} session={session}>
        <p class="empty">{text.actions.bulk.nothing}</p>
        <p>
          <a href={back}>{text.bulk.backToList}</a>
        </p>
      </Layout>,
    );
  }
  if (count > RINGS_ABOVE) {
    const ring = ringScopeOf(devices.filter);
    if (ring !== null) return ringsPage(c, db, type, ring, values, flash, status);
    return render(
      c,
      <Layout title={text.actions.bulk.title} session={session} flash={flash}>
        <p>
          {text.actions.bulk.goesTo} <strong data-field="count">{countText(count)}</strong>.
        </p>
        <p class="warning" data-field="needs-scope">
          {text.actions.bulk.needsScope(formatNumber(RINGS_ABOVE))}
        </p>
        <p>
          <a href={back}>{text.bulk.backToList}</a>
        </p>
      </Layout>,
      status,
    );
  }
  const serials =
    devices.scope === 'selected' ? [...(await deviceSerials(db, org, devices.selected)).values()].sort() : [];
  const goesTo: Child = (
    <>
      {devices.scope === 'filter' ? text.bulk.filteredDevices : text.bulk.selectedDevices}.
      {serials.length > 0 ? <span class="serials report-message">{serials.join(', ')}</span> : null}
    </>
  );
  const hidden: [string, string][] = [
    ['scope', devices.scope],
    ['expected', String(count)],
    ...(devices.scope === 'selected' ? [['device', devices.selected.join(' ')] as [string, string]] : []),
    ...filterParams(devices.filter),
  ];
  return render(
    c,
    <ConfirmationPage
      session={session}
      action={{ type, parameters: values }}
      count={count}
      goesTo={goesTo}
      post="/portal/devices/bulk/actions"
      hidden={hidden}
      back={back}
      inputs
      notes={<p class="muted">{text.actions.bulk.eachAudited}</p>}
      flash={flash}
    />,
    status,
  );
}

/** The scope a rollout can take of a list filtered by one org unit alone or one group alone; else none. */
interface RingScope {
  scope: RolloutScope;
  id: string;
}

function ringScopeOf(filter: DeviceFilter): RingScope | null {
  if (filterParams(filter).size !== 1) return null;
  if (filter.oe_id !== undefined) return { scope: 'org_unit', id: filter.oe_id.toLowerCase() };
  if (filter.group_id !== undefined) return { scope: 'group', id: filter.group_id.toLowerCase() };
  return null;
}

const segmentOf: Record<RolloutScope, string> = { org_unit: 'org-units', group: 'groups' };
const filterOf = (ring: RingScope): DeviceFilter =>
  ring.scope === 'org_unit' ? { oe_id: ring.id } : { group_id: ring.id };

/**
 * The action in rings over a unit or a group: its settings, the rings, and the count the
 * rollout takes now (the scope's devices neither archived nor deprovisioned, as the rollout
 * takes them), which the post carries as `expected_devices`.
 */
async function ringsPage(
  c: Context<PortalEnv>,
  db: Db,
  type: ActionType,
  ring: RingScope,
  values: Record<string, unknown>,
  flash: Flash | null = null,
  status: 200 | 400 | 409 = 200,
) {
  const session = c.get('session');
  const text = t().actions.bulk;
  const [name, ids] = await Promise.all([
    ring.scope === 'org_unit'
      ? requireOrgUnit(db, ring.id).then((u) => u.name)
      : requireGroup(db, ring.id).then((g) => g.name),
    devicesOfScope(db, session.organizationId!, ring.scope, ring.id),
  ]);
  const back = listOf(filterOf(ring));
  if (ids.length === 0) {
    return render(
      c,
      <Layout title={text.title} session={session} flash={flash}>
        <p class="empty">{text.nothing}</p>
        <p>
          <a href={back}>{t().bulk.backToList}</a>
        </p>
      </Layout>,
      status,
    );
  }
  return render(
    c,
    <ConfirmationPage
      session={session}
      action={{ type, parameters: values }}
      count={ids.length}
      goesTo={<a href={back}>{ring.scope === 'org_unit' ? text.unitScope(name) : text.groupScope(name)}</a>}
      post={`/portal/${segmentOf[ring.scope]}/${ring.id}/actions`}
      hidden={[['expected_devices', String(ids.length)]]}
      back={back}
      inputs
      notes={
        <>
          <p data-field="in-rings">{text.inRings(formatNumber(RINGS_ABOVE))}</p>
          <p class="muted">{text.managedOnly}</p>
        </>
      }
      extra={
        <>
          <h2>{t().rollouts.ringsHeading}</h2>
          <RingFields />
        </>
      }
      flash={flash}
    />,
    status,
  );
}

function Result(props: {
  session: PortalSession;
  action: CheckedAction;
  filter: DeviceFilter;
  outcome: BulkOutcome<string>;
  serials: Map<string, string>;
}) {
  const { outcome } = props;
  const text = t();
  return (
    <Layout title={text.actions.bulk.resultTitle} session={props.session}>
      <p>
        <strong>{typeLabel(props.action.type)}</strong>:{' '}
        <strong data-field="queued">{countText(outcome.changed.length)}</strong> {text.actions.bulk.queued}.
      </p>
      <RefusedDevices
        failed={outcome.failed}
        count={countText(outcome.failed.length)}
        label={text.actions.bulk.notQueued}
        serials={props.serials}
      />
      <p>
        <a href={listOf(props.filter)}>{text.bulk.backToList}</a>
      </p>
    </Layout>
  );
}

export function deviceActionBulkRoutes() {
  const app = new Hono<PortalEnv>();

  // The list's bulk form names a device action: its page is here; any other action is the bulk pages' (device_bulk.tsx).
  app.get('/devices/bulk', async (c, next) => {
    const q = c.req.query();
    const type = oneOf(actionTypes, q.action);
    if (type === undefined) return next();
    const devices = devicesOf(q, c.req.queries('device') ?? []);
    const { db, refusal } = await checked(c, devices);
    if (refusal !== null) return redirectWith(c, listOf(devices.filter), { kind: 'error', text: refusal });
    return bulkPage(c, db, type, devices, {});
  });

  postBulkWrite(app, '/devices/bulk/actions', actionOps.createAction, async (c, writeEach) => {
    const session = c.get('session');
    const fields = await formFields(c);
    const devices = devicesOf(fields, fields.device === undefined ? [] : [fields.device]);
    const { db, refusal } = await checked(c, devices);
    if (refusal !== null) return redirectWith(c, listOf(devices.filter), { kind: 'error', text: refusal });
    const body = actionBodyOf(fields);
    const type = oneOf(actionTypes, String(body.type));
    if (type === undefined) return redirectWith(c, listOf(devices.filter), { kind: 'error', text: t().bulk.noAction });
    const values = body.parameters as Record<string, unknown>;
    let action: CheckedAction;
    try {
      action = checkedBody(body);
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      return bulkPage(c, db, type, devices, values, { kind: 'error', text: refusalText(err) }, 400);
    }
    const ids = await deviceIdsOf(c, db, devices);
    // The admin confirmed a count: another one now (a device came or went) queues nothing and asks again.
    if (String(ids.length) !== fields.expected || ids.length > RINGS_ABOVE) {
      const flash = { kind: 'error', text: t().actions.bulk.countChanged(countText(ids.length)) } as const;
      return bulkPage(c, db, type, devices, values, flash, 409);
    }
    const outcome = await writeEach(ids, {
      requestOf: (id) => ({ param: { id } }),
      lock: lockDevices,
      change: async (tx, caller, id) => ({ audit: (await createAction(tx, id, action, caller)).audit }),
    });
    const serials = await deviceSerials(
      db,
      session.organizationId!,
      outcome.failed.map((f) => f.item),
    );
    return render(
      c,
      <Result session={session} action={action} filter={devices.filter} outcome={outcome} serials={serials} />,
    );
  });

  // Above RINGS_ABOVE devices: a rollout in rings over the unit or group, by the rollouts' own create.
  for (const scope of ['org_unit', 'group'] as const) {
    postWrite(app, `/${segmentOf[scope]}/:id/actions`, rolloutOps.createRollout, async (c, write) => {
      const org = c.get('session').organizationId!;
      const ring = { scope, id: c.req.param('id').toLowerCase() };
      // The scope as its page reads it: another organization's is 404 before the form is read.
      const db = await portalRead(c, scope === 'org_unit' ? orgUnitOps.getOrgUnit : groupOps.getGroup, {
        param: { id: ring.id },
      });
      const fields = await formFields(c);
      const body = actionBodyOf(fields);
      const values = body.parameters as Record<string, unknown>;
      const type = oneOf(actionTypes, String(body.type));
      const poll = c.get('deps').config.agentPollIntervalSeconds;
      try {
        // Checked inside the write, after the session's role: a viewer's forged form is 403 whatever it holds.
        const rollout = await write({ param: { id: org } }, async (tx, caller) => {
          const action = checkedBody(body);
          const expected = fields.expected_devices?.trim() ?? '';
          const created = await createRollout(
            tx,
            org,
            {
              scope,
              scope_id: ring.id,
              device_action: action,
              expected_devices: /^\d{1,9}$/.test(expected) ? Number(expected) : expected,
              ...ringSettingsOf(fields),
            },
            caller,
            poll,
          );
          return { audit: created.audit, result: created.rollout };
        });
        const first = rollout.rings_detail[0]?.devices ?? 0;
        return redirectWith(c, `/portal/rollouts/${rollout.id}`, {
          kind: 'ok',
          text: t().rollouts.started(first, formatNumber(first)),
        });
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        // The operator's session is held to the organization it chose: another's scope is not found there.
        if (err.code === 'organization_mismatch') throw notFound('scope', ring.id);
        if (type === undefined || ![400, 409, 422].includes(err.status)) throw err;
        const flash: Flash =
          err.code === 'device_count_changed'
            ? {
                kind: 'error',
                text: t().actions.bulk.countChanged(
                  countText((await devicesOfScope(db, org, ring.scope, ring.id)).length),
                ),
              }
            : { kind: 'error', text: refusalText(err) };
        return ringsPage(c, db, type, ring, values, flash, err.status === 409 ? 409 : 400);
      }
    });
  }

  return app;
}
