/**
 * The Security page at /portal/security: the organization's CVEs as the API lists them
 * (the same service function), the most urgent first, then those on the most devices, each
 * count a link to the device list filtered to that CVE; filters by urgency, fix, CVE prefix
 * and unimportant ones; paging. Also what other pages show of it: the device list's CVE
 * filter note and the overview's security figures.
 */
import { Hono } from 'hono';
import type { DeviceFilter } from '../devices/organize_repo.ts';
import * as deviceOps from '../devices/operations.ts';
import { URGENCIES, type Urgency } from '../vulnerabilities/feed_parse.ts';
import {
  MATCH_STATUSES,
  type MatchStatus,
  type OrganizationVulnerabilityFilter,
  pageOrganizationVulnerabilities,
  securityDataState,
} from '../vulnerabilities/repo.ts';
import { type PortalEnv, portalRead } from './access.ts';
import { oneOf } from './device_filter.ts';
import { render, takeFlash } from './http.tsx';
import { formatNumber, formatTime, t } from './i18n/index.ts';
import { Layout } from './layout.tsx';

const PAGE_SIZE = 50;
/** How many earlier pages a list remembers for its "previous" link. */
const TRAIL_MAX = 100;
/** A CVE prefix as the API's `q` takes it. */
const CVE_PREFIX = /^[A-Za-z0-9-]{1,30}$/;

export function UrgencyBadge(props: { urgency: Urgency }) {
  return (
    <span class={`badge urgency-${props.urgency}`} data-urgency={props.urgency}>
      {t().security.urgencies[props.urgency]}
    </span>
  );
}

export function MatchStatusLabel(props: { status: MatchStatus }) {
  return <span data-status={props.status}>{t().security.statuses[props.status]}</span>;
}

/** The device list showing the devices affected by a CVE (in a row of this status). */
export function devicesAffectedBy(cve: string, status?: MatchStatus): string {
  const query = new URLSearchParams({ cve });
  if (status !== undefined) query.set('cve_status', status);
  return `/portal/devices?${query}`;
}

/** The device list's note while it is filtered to a CVE: which, and the way back to Security. */
export function CveFilterNote(props: { filter: DeviceFilter; without: string }) {
  const { cve, cve_status: status } = props.filter;
  if (cve === undefined) return null;
  const text = t().security.deviceFilter;
  return (
    <p data-filter="cve">
      {text.before} <strong>{cve}</strong>
      {status === 'fixed_available' ? ` ${text.fixAvailable}` : status === 'no_fix' ? ` ${text.noFix}` : ''}.{' '}
      <a href={props.without}>{text.without}</a> ·{' '}
      <a href={`/portal/security?${new URLSearchParams({ q: cve, include_unimportant: 'true' })}`}>{text.back}</a>
    </p>
  );
}

/** The CVE filter as hidden fields of the device list's filter form, so filtering again keeps it. */
export function CveFilterFields(props: { filter: DeviceFilter }) {
  const { cve, cve_status: status } = props.filter;
  if (cve === undefined) return null;
  return (
    <>
      <input type="hidden" name="cve" value={cve} />
      {status === undefined ? null : <input type="hidden" name="cve_status" value={status} />}
    </>
  );
}

/** The overview's security figures (fleet status `updates`), each a link to the devices it counts. */
export function SecurityFigures(props: {
  updates: { security_pending: number; reboot_required: number; vulnerable_high: number };
}) {
  const text = t().security.overview;
  const figures = [
    ['security_pending', props.updates.security_pending, text.securityPending, '/portal/devices?security_updates=true'],
    ['reboot_required', props.updates.reboot_required, text.rebootRequired, '/portal/devices?reboot_required=true'],
    ['vulnerable_high', props.updates.vulnerable_high, text.vulnerableHigh, '/portal/security?urgency=critical,high'],
  ] as const;
  return (
    <section data-section="security">
      <h2>{text.heading}</h2>
      <ul class="figures" aria-label={text.heading}>
        {figures.map(([key, n, label, href]) => (
          <li data-figure={key}>
            <span class="figure">
              {n === 0 ? (
                <span>{formatNumber(n)}</span>
              ) : (
                <a href={href} aria-label={text.figureLabel(formatNumber(n), label)}>
                  {formatNumber(n)}
                </a>
              )}
            </span>
            {label}
          </li>
        ))}
      </ul>
      <p>
        <a href="/portal/security">{text.toSecurity}</a>
      </p>
    </section>
  );
}

/** The page's filter from its query: what is not a valid value is no filter. */
function filterOf(q: Record<string, string | undefined>): OrganizationVulnerabilityFilter {
  const urgency = (q.urgency ?? '')
    .split(',')
    .map((u) => oneOf(URGENCIES, u))
    .filter((u): u is Urgency => u !== undefined);
  const prefix = q.q?.trim();
  return {
    urgency: urgency.length > 0 ? [...new Set(urgency)] : undefined,
    status: oneOf(MATCH_STATUSES, q.status),
    q: prefix && CVE_PREFIX.test(prefix) ? prefix.toUpperCase() : undefined,
    include_unimportant: q.include_unimportant === 'true' ? true : undefined,
  };
}

function paramsOf(filter: OrganizationVulnerabilityFilter): URLSearchParams {
  const params = new URLSearchParams();
  if (filter.urgency) params.set('urgency', filter.urgency.join(','));
  if (filter.status) params.set('status', filter.status);
  if (filter.q) params.set('q', filter.q);
  if (filter.include_unimportant) params.set('include_unimportant', 'true');
  return params;
}

export function securityRoutes() {
  const app = new Hono<PortalEnv>();

  app.get('/security', async (c) => {
    const session = c.get('session');
    const org = session.organizationId!;
    const query = c.req.query();
    const filter = filterOf(query);
    const db = await portalRead(c, deviceOps.listOrganizationVulnerabilities, { param: { id: org } });
    const selectedUrgency = filter.urgency?.join(',') ?? '';
    // Worst first: one urgency at a time, each most devices first (the list's own order), paged across them.
    const urgencies = (filter.urgency ?? URGENCIES).filter(
      (u) => u !== 'unimportant' || filter.include_unimportant === true || filter.urgency !== undefined,
    );
    const at = oneOf(urgencies, query.at) ?? urgencies[0]!;
    const cursor = query.cursor || undefined;
    // The earlier pages' starts ("urgency~cursor"), the last one the previous page's.
    const trail = query.trail ? query.trail.split('.').slice(-TRAIL_MAX) : [];
    const rows: Awaited<ReturnType<typeof pageOrganizationVulnerabilities>>['items'] = [];
    let next: { at: Urgency; cursor: string } | null = null;
    let position = urgencies.indexOf(at);
    let pageCursor = cursor;
    while (position < urgencies.length && rows.length < PAGE_SIZE) {
      const urgency = urgencies[position]!;
      const page = await pageOrganizationVulnerabilities(
        db,
        org,
        { ...filter, urgency: [urgency] },
        { units: null, groupId: undefined },
        pageCursor,
        PAGE_SIZE - rows.length,
      );
      rows.push(...page.items);
      pageCursor = undefined;
      if (page.next_cursor !== null) {
        next = { at: urgency, cursor: page.next_cursor };
        break;
      }
      position += 1;
    }
    // The page full at an urgency's end: the next page starts at the next urgency that has a CVE.
    while (next === null && rows.length === PAGE_SIZE && position < urgencies.length) {
      const urgency = urgencies[position]!;
      const probe = await pageOrganizationVulnerabilities(
        db,
        org,
        { ...filter, urgency: [urgency] },
        { units: null, groupId: undefined },
        undefined,
        1,
      );
      if (probe.items.length > 0) next = { at: urgency, cursor: '' };
      position += 1;
    }
    const filtered = paramsOf(filter);
    const here = `${at}~${cursor ?? ''}`;
    const link = (page: { at: string; cursor: string }, pageTrail: string[]) => {
      const params = new URLSearchParams(filtered);
      if (page.at !== urgencies[0] || page.cursor !== '') {
        params.set('at', page.at);
        if (page.cursor !== '') params.set('cursor', page.cursor);
      }
      if (pageTrail.length > 0) params.set('trail', pageTrail.join('.'));
      const q = params.toString();
      return q === '' ? '/portal/security' : `/portal/security?${q}`;
    };
    const isFirst = at === urgencies[0] && cursor === undefined;
    const previous = trail.length > 0 ? trail[trail.length - 1]!.split('~') : null;
    const state = rows.length === 0 && filtered.size === 0 && isFirst ? await securityDataState(db, org) : null;
    const text = t().security;
    const paging = t().devices.list.paging;
    return render(
      c,
      <Layout title={text.title} session={session} flash={takeFlash(c)}>
        <p class="muted">{text.intro}</p>
        <form method="get" action="/portal/security" class="filters" aria-label={text.filters.label}>
          <div>
            <label for="q">{text.filters.search}</label>
            <input id="q" name="q" type="search" value={filter.q ?? ''} maxlength={30} placeholder="CVE-2024-" />
          </div>
          <div>
            <label for="urgency">{text.filters.urgency}</label>
            <select id="urgency" name="urgency">
              <option value="">{text.filters.any}</option>
              {selectedUrgency.includes(',') ? (
                <option value={selectedUrgency} selected>
                  {filter.urgency!.map((u) => text.urgencies[u]).join(', ')}
                </option>
              ) : null}
              {URGENCIES.map((u) => (
                <option value={u} selected={u === selectedUrgency}>
                  {text.urgencies[u]}
                </option>
              ))}
            </select>
          </div>
          <div>
            <label for="status">{text.filters.status}</label>
            <select id="status" name="status">
              <option value="">{text.filters.any}</option>
              {MATCH_STATUSES.map((s) => (
                <option value={s} selected={s === filter.status}>
                  {text.statuses[s]}
                </option>
              ))}
            </select>
          </div>
          <div>
            <label for="include_unimportant">{text.filters.includeUnimportant}</label>
            <input
              id="include_unimportant"
              name="include_unimportant"
              type="checkbox"
              value="true"
              checked={filter.include_unimportant === true}
            />
          </div>
          <div>
            <button type="submit">{text.filters.apply}</button>
          </div>
        </form>
        {rows.length === 0 ? (
          filtered.size > 0 || !isFirst ? (
            <p class="empty" data-empty="filtered">
              {text.noneMatch} <a href="/portal/security">{text.filters.reset}</a>
            </p>
          ) : (
            <div
              class="empty"
              data-empty={!state?.feedRead ? 'no-feed' : state.inventories === 0 ? 'no-inventory' : 'clean'}
            >
              {state?.feedRead ? null : <p>{text.empty.noFeed}</p>}
              {state?.inventories === 0 ? <p>{text.empty.noInventory}</p> : null}
              {state?.feedRead && state.inventories > 0 ? <p>{text.empty.clean}</p> : null}
              <p>
                <a href="/portal/devices">{text.toDevices}</a>
              </p>
            </div>
          )
        ) : (
          <>
            <p data-field="shown">{text.shown(formatNumber(rows.length))}</p>
            <div class="table-wrap">
              <table class="vulnerabilities">
                <thead>
                  <tr>
                    <th scope="col">{text.columns.cve}</th>
                    <th scope="col">{text.columns.urgency}</th>
                    <th scope="col">{text.columns.sources}</th>
                    <th scope="col" class="number">
                      {text.columns.affected}
                    </th>
                    <th scope="col" class="number">
                      {text.columns.fixAvailable}
                    </th>
                    <th scope="col">{text.columns.firstSeen}</th>
                  </tr>
                </thead>
                <tbody>
                  {rows.map((v) => (
                    <tr data-cve={v.cve}>
                      <td class="mono">{v.cve}</td>
                      <td data-field="urgency">
                        <UrgencyBadge urgency={v.urgency} />
                      </td>
                      <td data-field="sources">{v.sources.join(', ')}</td>
                      <td class="number" data-field="affected">
                        <a
                          href={devicesAffectedBy(v.cve)}
                          aria-label={text.affectedLabel(v.cve, formatNumber(v.devices_affected))}
                        >
                          {formatNumber(v.devices_affected)}
                        </a>
                      </td>
                      <td class="number" data-field="fix_available">
                        {v.devices_fix_available === 0 ? (
                          formatNumber(0)
                        ) : (
                          <a
                            href={devicesAffectedBy(v.cve, 'fixed_available')}
                            aria-label={text.fixLabel(v.cve, formatNumber(v.devices_fix_available))}
                          >
                            {formatNumber(v.devices_fix_available)}
                          </a>
                        )}
                      </td>
                      <td>{formatTime(v.first_seen_at)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          </>
        )}
        {isFirst && next === null ? null : (
          <nav class="paging" aria-label={paging.label}>
            {isFirst ? null : <a href={link({ at: urgencies[0]!, cursor: '' }, [])}>{paging.first}</a>}
            {previous ? (
              <a href={link({ at: previous[0]!, cursor: previous[1] ?? '' }, trail.slice(0, -1))} rel="prev">
                {paging.previous}
              </a>
            ) : null}
            {next ? (
              <a href={link(next, [...trail, here])} rel="next">
                {paging.next}
              </a>
            ) : null}
          </nav>
        )}
      </Layout>,
    );
  });
  return app;
}
