/**
 * The device pages: the list with filters, search and paging; a device with
 * its details, hardware, events and catalog (state, origin and its explanation),
 * select / deselect / unset at the device (and the way to its org unit's, confirmed first),
 * and the lifecycle after a confirmation. Every read and write goes through portalRead / portalWrite and the
 * services the API uses.
 */
import { Hono } from 'hono';
import { selectionOperations } from '../catalog/operations.ts';
import { changeSelection } from '../catalog/service.ts';
import { loadOutcomes, type MerkmalOutcome } from '../catalog/outcomes.ts';
import { loadCatalogStates, loadExplanation } from '../catalog/state.ts';
import type { Explanation } from '../catalog/resolution.ts';
import type { Db } from '../db/client.ts';
import { getHardware, listEvents } from '../devices/lifecycle_repo.ts';
import { transitionDevice, type Transition } from '../devices/lifecycle_service.ts';
import * as deviceOps from '../devices/operations.ts';
import {
  countOrganizationDevices,
  DEVICE_SORTS,
  type DeviceSort,
  decodeDeviceCursor,
  encodeDeviceCursor,
  type ListedDevice,
  pageOrganizationDevices,
} from '../devices/organize_repo.ts';
import { type DeviceRow, getDevice } from '../devices/repo.ts';
import { DISK_ENCRYPTION_STATES } from '../devices/disk_encryption.ts';
import { listCatalogMerkmale } from '../catalog/repo.ts';
import { listGroups } from '../groups/repo.ts';
import { notFound } from '../http/errors.ts';
import { listOrgUnits } from '../org_units/repo.ts';
import { unitChoices } from './org_unit_paths.ts';
import { listTemplates } from '../templates/repo.ts';
import { readInventoryPage } from '../inventory/routes.ts';
import { SoftwareSection } from './device_software.tsx';
import { canWrite, type PortalEnv, portalRead, postWrite } from './access.ts';
import { EventTable, HardwareTable } from './device_details.tsx';
import { DiskKeys, deviceDiskKeys } from './disk_keys.tsx';
import { ActionsSection, loadDeviceActions } from './device_actions.tsx';
import { formFields, render, safeBack, takeFlash, writeAndRedirect } from './http.tsx';
import { formatNumber, formatTime, t } from './i18n/index.ts';
import { ConvergenceBadge, StatusBadge } from './badges.tsx';
import {
  convergenceLabel,
  diskEncryptionLabel,
  reportLabel,
  reportMessage,
  stateLabel,
  statusLabel,
} from './labels.ts';
import { CsrfField, Layout } from './layout.tsx';
import { BulkControls } from './device_bulk.tsx';
import { bulkActionChoices } from './device_actions_bulk.tsx';
import { convergences, filterParams, listedStatuses, listFilterOf, oneOf } from './device_filter.ts';
import { RelativeTime } from './relative_time.tsx';
import { ChangeButtons } from './scope_catalog.tsx';
import { DeviceVulnerabilitiesSection, loadDeviceVulnerabilities } from './device_vulnerabilities.tsx';
import { CveFilterFields, CveFilterNote } from './security.tsx';
import type { PortalSession } from './session.ts';

const PAGE_SIZE = 50;

/** The list's query without its Merkmal: the convergence then filters the devices' own. */
function withoutMerkmal(params: URLSearchParams): URLSearchParams {
  const rest = new URLSearchParams(params);
  rest.delete('merkmal');
  return rest;
}

/** The list's query without its CVE filter. */
function withoutCve(params: URLSearchParams): URLSearchParams {
  const rest = new URLSearchParams(params);
  rest.delete('cve');
  rest.delete('cve_status');
  return rest;
}

/** "1 Gerät", "10.000 Geräte" / "10,000 devices": a count of devices, grouped as the language writes numbers. */
function deviceCount(n: number): string {
  return t().devices.count(n, formatNumber(n));
}

/**
 * A sortable column's header: a link to its order (or, when it is the current one, to the
 * reverse where there is one), the current order marked for screen readers too.
 */
function SortHeader(props: {
  label: string;
  sort: DeviceSort;
  asc: DeviceSort;
  desc?: DeviceSort;
  /** The order a click on an unsorted column chooses (default: ascending). */
  first?: DeviceSort;
  href: (sort: DeviceSort) => string;
}) {
  const { sort, asc, desc } = props;
  const current = sort === asc ? 'ascending' : sort === desc ? 'descending' : undefined;
  const target = current === 'ascending' ? (desc ?? asc) : current === 'descending' ? asc : (props.first ?? asc);
  const arrow = current === 'ascending' ? ' ▲' : current === 'descending' ? ' ▼' : '';
  return (
    <th scope="col" aria-sort={current}>
      <a href={props.href(target)} data-sort={target}>
        {props.label}
        {arrow}
      </a>
    </th>
  );
}

/** First, previous and next page, each a link when there is such a page. */
function Paging(props: { first: string | null; previous: string | null; next: string | null }) {
  if (props.first === null && props.next === null) return null;
  const text = t().devices.list.paging;
  return (
    <nav class="paging" aria-label={text.label}>
      {props.first ? <a href={props.first}>{text.first}</a> : null}
      {props.previous ? (
        <a href={props.previous} rel="prev">
          {text.previous}
        </a>
      ) : null}
      {props.next ? (
        <a href={props.next} rel="next">
          {text.next}
        </a>
      ) : null}
    </nav>
  );
}

/** Names of the organization's org units, groups and templates, for the tables and filters. */
async function namesOf(db: Db, organizationId: string) {
  const [units, groups, templates] = await Promise.all([
    listOrgUnits(db, organizationId, null, 10_000),
    listGroups(db, organizationId, null, 10_000),
    listTemplates(db, null, 500),
  ]);
  return {
    units,
    groups,
    unit: new Map(units.map((u) => [u.id, u.name])),
    group: new Map(groups.map((g) => [g.id, g.name])),
    template: new Map(templates.map((t) => [t.id, t.name])),
  };
}

function Lifecycle(props: { device: DeviceRow }) {
  const d = props.device;
  const text = t().devices.lifecycle;
  if (d.archived_at) return <p>{text.archivedAt(formatTime(d.archived_at))}</p>;
  return (
    <p>
      {d.deprovisioned_at ? (
        <a href={`/portal/devices/${d.id}/confirm/reprovision`}>{text.reprovision}</a>
      ) : (
        <a href={`/portal/devices/${d.id}/confirm/deprovision`}>{text.deprovision}</a>
      )}{' '}
      · <a href={`/portal/devices/${d.id}/confirm/archive`}>{text.archive}</a>
    </p>
  );
}

/** The agent's last report of a Merkmal: what, when, and its message. */
function Reported(props: { outcome: MerkmalOutcome | undefined }) {
  const reported = props.outcome?.reported ?? null;
  if (reported === null) return <span class="muted">{t().devices.device.noReport}</span>;
  const message = reportMessage(reported.detail);
  return (
    <span>
      <span data-event={reported.event}>{reportLabel(reported.event)}</span>{' '}
      <span class="muted">{formatTime(reported.at)}</span>
      {message === null ? null : (
        <span class="report-message" data-field="message">
          {message}
        </span>
      )}
    </span>
  );
}

function Steps(props: { e: Explanation }) {
  const { e } = props;
  const text = t().devices.steps;
  return (
    <ol class="steps">
      {e.steps.map((s) => {
        const decisive =
          (s.step === 'geraet' && e.origin === 'geraet') ||
          (s.step === 'gruppe' && e.origin === 'gruppe') ||
          (s.step === 'workspace' && e.origin === 'workspace');
        switch (s.step) {
          case 'workspace':
            return <li class={decisive ? 'decisive' : ''}>{text.workspace(stateLabel(s.state))}</li>;
          case 'oe':
            return <li>{text.unit(s.name, s.state === null ? text.noOverride : stateLabel(s.state))}</li>;
          case 'gruppe':
            return (
              <li class={decisive ? 'decisive' : ''}>
                {text.groups(s.present, s.absent)}
                {s.groups.length > 0 ? ` (${s.groups.map((g) => `${g.name}: ${stateLabel(g.state)}`).join(', ')})` : ''}
                {s.present === s.absent ? text.tie : ''}
              </li>
            );
          case 'geraet':
            return (
              <li class={decisive ? 'decisive' : ''}>
                {text.device(s.state === null ? text.noOwnOverride : stateLabel(s.state))}
              </li>
            );
          default:
            return null;
        }
      })}
    </ol>
  );
}

function SelectionButtons(props: { session: PortalSession; action: string; label: string; back: string }) {
  const { session, action } = props;
  const text = t().devices;
  return (
    <span>
      {(['select', 'deselect', 'unset'] as const).map((verb) => (
        <form class="inline" method="post" action={`${action}/${verb}`}>
          <CsrfField session={session} />
          <input type="hidden" name="back" value={props.back} />
          <button type="submit" class="secondary" aria-label={text.verbLabel(props.label, text.verbs[verb])}>
            {text.verbs[verb]}
          </button>{' '}
        </form>
      ))}
    </span>
  );
}

/** Each lifecycle transition is its API operation. */
const transitionOperation = {
  deprovision: deviceOps.deprovisionDevice,
  reprovision: deviceOps.reprovisionDevice,
  archive: deviceOps.archiveDevice,
} as const satisfies Record<Transition, unknown>;
const transitions = Object.keys(transitionOperation) as Transition[];

export function deviceRoutes() {
  const app = new Hono<PortalEnv>();

  app.get('/devices', async (c) => {
    const session = c.get('session');
    const org = session.organizationId!;
    const q = c.req.query();
    // The portal's own default: creation order, as it always listed them.
    const sort = oneOf(DEVICE_SORTS, q.sort) ?? 'created_at';
    const filter = listFilterOf(q);
    // The filters' ids are checked as the API checks them: another organization's is 404.
    const db = await portalRead(c, deviceOps.listDevices, {
      param: { id: org },
      query: { oe_id: filter.oe_id, group_id: filter.group_id },
    });
    const context = { pollIntervalSeconds: c.get('deps').config.agentPollIntervalSeconds };
    const poll = context.pollIntervalSeconds;
    const names = await namesOf(db, org);
    const cursor = decodeDeviceCursor(sort, q.cursor);
    const [{ rows: page, hasPrevious, hasNext }, total, merkmale] = await Promise.all([
      pageOrganizationDevices(db, org, filter, sort, cursor, PAGE_SIZE, context),
      countOrganizationDevices(db, org, filter, context),
      canWrite(session) ? listCatalogMerkmale(db) : Promise.resolve([]),
    ]);
    const params = filterParams(filter);
    const filtered = params.size > 0;
    const sorted = new URLSearchParams(params);
    if (sort !== 'created_at') sorted.set('sort', sort);
    const pageLink = (row: ListedDevice, direction: 'after' | 'before') =>
      `/portal/devices?${new URLSearchParams([...sorted, ['cursor', encodeDeviceCursor(sort, row, direction)]])}`;
    const sortLink = (to: DeviceSort) => {
      const next = new URLSearchParams(params);
      if (to !== 'created_at') next.set('sort', to);
      return `/portal/devices?${next}`;
    };
    const write = canWrite(session);
    const now = new Date();
    const { devices: all } = t();
    const text = all.list;
    return render(
      c,
      <Layout title={all.title} session={session} flash={takeFlash(c)}>
        <form method="get" action="/portal/devices" class="filters" aria-label={text.filtersLabel}>
          <div>
            <label for="q">{text.search}</label>
            <input id="q" name="q" type="search" value={filter.q ?? ''} maxlength={100} />
          </div>
          <div>
            <label for="oe_id">{text.orgUnit}</label>
            <select id="oe_id" name="oe_id">
              <option value="">{text.any}</option>
              {unitChoices(names.units).map(({ unit: u, path }) => (
                <option value={u.id} selected={u.id === filter.oe_id}>
                  {path}
                </option>
              ))}
            </select>
          </div>
          <div>
            <label for="group_id">{text.group}</label>
            <select id="group_id" name="group_id">
              <option value="">{text.any}</option>
              {names.groups.map((g) => (
                <option value={g.id} selected={g.id === filter.group_id}>
                  {g.name}
                </option>
              ))}
            </select>
          </div>
          <div>
            <label for="status">{text.status}</label>
            <select id="status" name="status">
              <option value="">{text.any}</option>
              {listedStatuses.map((s) => (
                <option value={s} selected={s === filter.status}>
                  {statusLabel(s)}
                </option>
              ))}
            </select>
          </div>
          <div>
            <label for="convergence">{filter.merkmal ? text.convergenceOf(filter.merkmal) : text.convergence}</label>
            <select id="convergence" name="convergence">
              <option value="">{text.any}</option>
              {convergences.map((v) => (
                <option value={v} selected={v === filter.convergence}>
                  {convergenceLabel(v)}
                </option>
              ))}
            </select>
            {filter.merkmal ? <input type="hidden" name="merkmal" value={filter.merkmal} /> : null}
            <CveFilterFields filter={filter} />
          </div>
          <div>
            <label for="disk_encryption">{text.diskEncryption}</label>
            <select id="disk_encryption" name="disk_encryption">
              <option value="">{text.any}</option>
              {DISK_ENCRYPTION_STATES.map((s) => (
                <option value={s} selected={s === filter.disk_encryption}>
                  {diskEncryptionLabel(s)}
                </option>
              ))}
            </select>
          </div>
          <div>
            <label for="sort">{text.sort}</label>
            <select id="sort" name="sort">
              {DEVICE_SORTS.map((s) => (
                <option value={s} selected={s === sort}>
                  {text.sorts[s]}
                </option>
              ))}
            </select>
          </div>
          <div>
            <label for="stale">{text.staleOnly}</label>
            <input id="stale" name="stale" type="checkbox" value="true" checked={filter.stale === true} />
          </div>
          <div>
            <button type="submit">{text.filter}</button>
          </div>
        </form>
        {filter.merkmal ? (
          <p data-filter="merkmal">
            {text.merkmalFilter.before} <strong>{filter.merkmal}</strong>{' '}
            {text.merkmalFilter.after(convergenceLabel(filter.convergence!))}{' '}
            <a href={`/portal/devices?${withoutMerkmal(sorted)}`}>{text.withoutMerkmal}</a>
          </p>
        ) : null}
        <CveFilterNote filter={filter} without={`/portal/devices?${withoutCve(sorted)}`} />
        <p class="muted">{text.staleNote(formatNumber((3 * poll) / 60, { maximumFractionDigits: 2 }))}</p>
        <p data-field="total">
          <strong>{deviceCount(total)}</strong>
          {filtered ? text.matchFilters(total) : ''}
          {page.length > 0 && page.length < total ? text.onThisPage(formatNumber(page.length)) : ''}
        </p>
        {page.length === 0 ? (
          <p class="empty">
            {filtered ? text.noneMatch : text.noneYet}{' '}
            {filtered ? (
              <a href="/portal/devices">{text.resetFilters}</a>
            ) : write ? (
              <a href="/portal/enrollment-sessions">{text.toEnrollmentSessions}</a>
            ) : null}
          </p>
        ) : (
          <form method="get" action="/portal/devices/bulk" id="bulk" aria-label={text.bulkLabel}>
            {[...params].map(([name, value]) => (
              <input type="hidden" name={name} value={value} />
            ))}
            <div class="table-wrap">
              <table class="devices">
                <thead>
                  <tr>
                    {write ? (
                      <th scope="col">
                        <span class="visually-hidden">{text.selection}</span>
                      </th>
                    ) : null}
                    <SortHeader label={text.columns.serial} sort={sort} asc="serial" href={sortLink} />
                    <th scope="col">{text.columns.hostname}</th>
                    <th scope="col">{text.columns.orgUnit}</th>
                    <th scope="col">{text.columns.groups}</th>
                    <th scope="col">{text.columns.template}</th>
                    <SortHeader
                      label={text.columns.lastCheckin}
                      sort={sort}
                      asc="last_checkin"
                      desc="-last_checkin"
                      first="-last_checkin"
                      href={sortLink}
                    />
                    <th scope="col">{text.columns.status}</th>
                    <th scope="col">{text.columns.convergence}</th>
                    <SortHeader
                      label={text.columns.created}
                      sort={sort}
                      asc="created_at"
                      desc="-created_at"
                      href={sortLink}
                    />
                  </tr>
                </thead>
                <tbody>
                  {page.map((d) => (
                    <tr data-device={d.id}>
                      {write ? (
                        <td>
                          <input type="checkbox" name="device" value={d.id} aria-label={text.selectDevice(d.serial)} />
                        </td>
                      ) : null}
                      <td>
                        <a href={`/portal/devices/${d.id}`}>{d.serial}</a>
                      </td>
                      <td>{d.hostname ?? '–'}</td>
                      <td>{names.unit.get(d.oe_id) ?? d.oe_id}</td>
                      <td>{d.group_ids.map((g) => names.group.get(g) ?? g).join(', ') || '–'}</td>
                      <td>{names.template.get(d.template_id) ?? d.template_id}</td>
                      <td class={d.status === 'stale' ? 'stale' : ''} data-field="last_checkin">
                        <RelativeTime at={d.agent_last_checkin} now={now} />
                        {d.status === 'stale' ? text.staleMark : ''}
                      </td>
                      <td data-field="status">
                        <StatusBadge status={d.status} />
                      </td>
                      <td data-field="convergence">
                        <ConvergenceBadge convergence={d.convergence} />
                      </td>
                      <td data-field="created_at">
                        <RelativeTime at={d.created_at} now={now} />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            <Paging
              first={hasPrevious ? `/portal/devices?${sorted}` : null}
              previous={hasPrevious ? pageLink(page[0]!, 'before') : null}
              next={hasNext ? pageLink(page[page.length - 1]!, 'after') : null}
            />
            {write ? (
              <BulkControls
                names={names}
                merkmale={merkmale}
                deviceActions={bulkActionChoices()}
                total={deviceCount(total)}
              />
            ) : null}
          </form>
        )}
      </Layout>,
    );
  });

  app.get('/devices/:id', async (c) => {
    const session = c.get('session');
    const id = c.req.param('id');
    const db = await portalRead(c, deviceOps.getDevice, { param: { id } });
    const device = await getDevice(db, id, c.get('deps').config.agentPollIntervalSeconds);
    if (!device) throw notFound('device', id);
    const packagesQ = c.req.query('pkg_q')?.trim().slice(0, 200) || undefined;
    const [names, hardware, events, catalog, software, vulnerabilities, actions] = await Promise.all([
      namesOf(db, device.organization_id),
      getHardware(db, id),
      listEvents(db, id, null, 20),
      loadCatalogStates(db, id),
      readInventoryPage(db, id, { q: packagesQ, cursor: c.req.query('pkg_cursor'), limit: 50 }),
      loadDeviceVulnerabilities(c, id),
      loadDeviceActions(c, id, c.req.query('actions_cursor') || undefined),
    ]);
    const outcomes = await loadOutcomes(db, id, catalog ?? []);
    // Disk keys are the operator's and admins' only, as in the API: a viewer's page has no section.
    const diskKeys = canWrite(session) ? await deviceDiskKeys(c, id) : null;
    const explanations = new Map<string, Explanation>();
    for (const item of catalog ?? []) {
      const e = await loadExplanation(db, id, item.merkmal);
      if (typeof e === 'object') explanations.set(item.merkmal, e);
    }
    const write = canWrite(session);
    // An archived device changes no more: its own selections are not offered (its unit's still are).
    const writeDevice = write && !device.archived_at;
    const unitName = names.unit.get(device.oe_id) ?? device.oe_id;
    const text = t().devices.device;
    return render(
      c,
      <Layout title={text.title(device.serial)} session={session} flash={takeFlash(c)}>
        <p>
          <a href="/portal/devices">{text.allDevices}</a>
        </p>
        <h2>{text.details}</h2>
        <div class="table-wrap">
          <table>
            <tbody>
              <tr>
                <th scope="row">{text.rows.serial}</th>
                <td>{device.serial}</td>
              </tr>
              <tr>
                <th scope="row">{text.rows.hostname}</th>
                <td>{device.hostname ?? '–'}</td>
              </tr>
              <tr>
                <th scope="row">{text.rows.orgUnit}</th>
                <td>{unitName}</td>
              </tr>
              <tr>
                <th scope="row">{text.rows.groups}</th>
                <td>{device.group_ids.map((g) => names.group.get(g) ?? g).join(', ') || '–'}</td>
              </tr>
              <tr>
                <th scope="row">{text.rows.template}</th>
                <td>
                  {names.template.get(device.template_id) ?? device.template_id} ({device.backend})
                </td>
              </tr>
              <tr>
                <th scope="row">{text.rows.lastCheckin}</th>
                <td>{formatTime(device.agent_last_checkin)}</td>
              </tr>
              <tr>
                <th scope="row">{text.rows.status}</th>
                <td data-field="status">
                  <StatusBadge status={device.status} />
                </td>
              </tr>
              <tr>
                <th scope="row">{text.rows.convergence}</th>
                <td data-field="convergence">
                  <ConvergenceBadge convergence={device.convergence} />
                </td>
              </tr>
              <tr>
                <th scope="row">{text.rows.created}</th>
                <td>{formatTime(device.created_at)}</td>
              </tr>
            </tbody>
          </table>
        </div>
        {write ? <Lifecycle device={device} /> : null}
        <ActionsSection
          session={session}
          deviceId={device.id}
          managed={!device.archived_at && !device.deprovisioned_at}
          actions={actions}
        />
        <h2>{text.catalog}</h2>
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">{text.columns.merkmal}</th>
                <th scope="col">{text.columns.state}</th>
                <th scope="col">{text.columns.origin}</th>
                <th scope="col">{text.columns.explanation}</th>
                <th scope="col">{text.columns.lastReport}</th>
                <th scope="col">{text.columns.convergence}</th>
                {writeDevice ? <th scope="col">{text.columns.atDevice}</th> : null}
                {write ? <th scope="col">{text.columns.atUnit(unitName)}</th> : null}
              </tr>
            </thead>
            <tbody>
              {(catalog ?? []).map((item) => {
                const e = explanations.get(item.merkmal);
                return (
                  <tr id={`merkmal-${item.merkmal}`} data-merkmal={item.merkmal}>
                    <td>
                      {item.name} <span class="muted">({item.merkmal})</span>
                    </td>
                    <td data-field="state">{stateLabel(item.state)}</td>
                    <td data-field="origin" data-origin={item.origin}>
                      {text.origins[item.origin] ?? item.origin} <span class="muted">({item.origin})</span>
                    </td>
                    <td>
                      <details>
                        <summary>{text.why}</summary>
                        {e ? <Steps e={e} /> : null}
                      </details>
                    </td>
                    <td data-field="reported">
                      <Reported outcome={outcomes.get(item.merkmal)} />
                    </td>
                    <td data-field="convergence">
                      {/* Missing only when the device was deleted between the two reads: nothing reported since. */}
                      <ConvergenceBadge convergence={outcomes.get(item.merkmal)?.convergence ?? 'pending'} />
                    </td>
                    {writeDevice ? (
                      <td>
                        <SelectionButtons
                          session={session}
                          action={`/portal/devices/${id}/catalog/${item.merkmal}`}
                          label={text.atDeviceLabel(item.name)}
                          back={`/portal/devices/${id}`}
                        />
                      </td>
                    ) : null}
                    {write ? (
                      <td>
                        {/* The unit's change is confirmed first, with the number of devices it changes. */}
                        <ChangeButtons
                          scope="org-units"
                          id={device.oe_id}
                          merkmal={item.merkmal}
                          label={text.atUnitLabel(item.name, unitName)}
                          back={`/portal/devices/${id}`}
                        />
                      </td>
                    ) : null}
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
        <SoftwareSection deviceId={id} page={software} q={packagesQ} />
        {diskKeys ? (
          <>
            <h2>{t().deviceDetails.diskKeys.heading}</h2>
            <DiskKeys session={session} keys={diskKeys} />
          </>
        ) : null}
        <h2>{text.hardware}</h2>
        <HardwareTable
          hardware={hardware?.hardware ?? null}
          reportedAt={hardware?.reported_at ?? null}
          agentVersion={device.agent_version}
        />
        <DeviceVulnerabilitiesSection vulnerabilities={vulnerabilities} />
        <h2>{text.events}</h2>
        <EventTable
          events={events.slice(0, 20)}
          sourceName={(_cause, sourceId) => names.unit.get(sourceId) ?? names.group.get(sourceId)}
        />
        <p>
          <a href={`/portal/devices/${device.id}/events`}>{t().deviceDetails.eventsPage.all}</a>
        </p>
      </Layout>,
    );
  });

  app.get('/devices/:id/confirm/:transition', async (c) => {
    const session = c.get('session');
    const { id, transition } = c.req.param();
    if (!transitions.includes(transition as Transition)) throw notFound('page', transition);
    const db = await portalRead(c, transitionOperation[transition as Transition], { param: { id } });
    const device = await getDevice(db, id, c.get('deps').config.agentPollIntervalSeconds);
    if (!device) throw notFound('device', id);
    const { confirm, transitions: texts } = t().devices;
    const text = texts[transition as Transition];
    return render(
      c,
      <Layout title={text.title} session={session}>
        <p>
          {confirm.device} <strong>{device.serial}</strong> ({device.hostname ?? confirm.noHostname}): {text.warning}
        </p>
        <form method="post" action={`/portal/devices/${id}/${transition}`}>
          <CsrfField session={session} />
          <button type="submit" class="danger">
            {text.title}
          </button>{' '}
          <a href={`/portal/devices/${id}`}>{confirm.cancel}</a>
        </form>
      </Layout>,
    );
  });

  for (const transition of transitions) {
    postWrite(app, `/devices/:id/${transition}`, transitionOperation[transition], async (c, write) => {
      const id = c.req.param('id');
      return writeAndRedirect(c, `/portal/devices/${id}`, t().devices.transitions[transition].done, () =>
        write({ param: { id } }, async (tx) => {
          const { audit } = await transitionDevice(tx, transition, id, c.get('deps').config.agentPollIntervalSeconds);
          return { audit, result: null };
        }),
      );
    });
  }

  // Select / deselect / unset at the device (at its org unit: scope_catalog.tsx); back to the page the form was on.
  for (const verb of ['select', 'deselect', 'unset'] as const) {
    postWrite(app, `/devices/:id/catalog/:merkmal/${verb}`, selectionOperations.devices[verb], async (c, write) => {
      const { id, merkmal } = c.req.param();
      const back = safeBack((await formFields(c)).back, `/portal/devices/${id}`);
      const change =
        verb === 'unset'
          ? ({ kind: 'unset' } as const)
          : ({ kind: 'set', state: verb === 'select' ? 'present' : 'absent', optionen: {} } as const);
      return writeAndRedirect(c, back, t().devices.saved[verb](merkmal), () =>
        write({ param: { id, merkmal } }, async (tx, caller) => {
          const { audit } = await changeSelection(tx, 'devices', id, merkmal, change, caller);
          return { audit, result: null };
        }),
      );
    });
  }
  return app;
}
