/**
 * The audit log: who changed what, newest first, a page at a time (first, previous, next),
 * filtered by action, by the kind of target and by target, each target shown by the name it
 * goes by today with a link to its page. Read by the API operation's own declaration (operator and admins).
 */
import { Hono } from 'hono';
import { type AuditAction, auditActions } from '../access/declaration.ts';
import * as auditOps from '../audit/operations.ts';
import {
  type AuditEventRow,
  auditTargetNames,
  auditTargetTypes,
  listAuditEvents,
  recordedTargetNames,
} from '../audit/repo.ts';
import { isUuid } from '../http/uuid.ts';
import { type PortalEnv, portalRead } from './access.ts';
import { render, takeFlash } from './http.tsx';
import { formatTime, t } from './i18n/index.ts';
import { stateLabel } from './labels.ts';
import { Layout } from './layout.tsx';

const PAGE_SIZE = 50;

/** The portal page a target is seen on. */
function targetHref(type: string, id: string): string | null {
  switch (type) {
    case 'device':
      return `/portal/devices/${id}`;
    case 'org_unit':
      return `/portal/org-units/${id}`;
    case 'group':
      return `/portal/groups/${id}`;
    case 'webhook':
      return '/portal/webhooks';
    case 'api_key':
      return '/portal/api-keys';
    case 'iso_build':
      return '/portal/iso-builds';
    case 'enrollment_session':
      return '/portal/enrollment-sessions';
    case 'rollout':
      return `/portal/rollouts/${id}`;
    default:
      return null;
  }
}

/** The name a target went by when the event was written, from its details: for one that is gone. */
function nameFromDetails(details: Record<string, unknown>): string | null {
  for (const key of ['name', 'serial', 'url']) {
    const value = details[key];
    if (typeof value === 'string' && value !== '') return value;
  }
  return null;
}

/** What a catalog event changed: the Merkmal and the state it set (or that it was unset). */
function catalogChange(e: AuditEventRow): string | null {
  if (!e.action.startsWith('catalog.')) return null;
  const merkmal = e.details.merkmal;
  if (typeof merkmal !== 'string') return null;
  const state = e.details.state;
  return t().audit.catalogChange(merkmal, state === 'present' || state === 'absent' ? stateLabel(state) : null);
}

function Target(props: {
  event: AuditEventRow;
  /** Whether the target exists today, and the name it goes by (null: it has none). */
  exists: boolean;
  name: string | null | undefined;
  recorded: string | undefined;
  filterHref: string;
}) {
  const { event: e, name } = props;
  const { audit: text } = t();
  const kind = (text.targetTypes as Record<string, string>)[e.target_type] ?? e.target_type;
  const change = catalogChange(e);
  if (e.target_id === null) return <span>{kind}</span>;
  const shown = name ?? props.recorded ?? nameFromDetails(e.details);
  const href = props.exists ? targetHref(e.target_type, e.target_id) : null;
  return (
    <span data-target={e.target_id}>
      {kind}{' '}
      {href ? <a href={href}>{shown ?? e.target_id.slice(0, 8)}</a> : <span>{shown ?? e.target_id.slice(0, 8)}</span>}
      {!props.exists && e.target_type !== 'organization' ? <span class="muted"> ({text.gone})</span> : null}
      {change ? <span data-field="change">{` · ${change}`}</span> : null}{' '}
      <a class="muted" href={props.filterHref}>
        ({text.onlyTarget})
      </a>
    </span>
  );
}

const whoOf = (e: AuditEventRow, text: ReturnType<typeof t>['audit']) =>
  e.actor.type === 'api_key' ? e.actor.name : e.actor.type === 'operator' ? text.operator : text.system;

/** A whole number from the query, else null. */
function seqOf(value: string | undefined): number | null {
  return value !== undefined && /^[0-9]{1,15}$/.test(value) ? Number(value) : null;
}

export function auditRoutes() {
  const app = new Hono<PortalEnv>();

  app.get('/audit', async (c) => {
    const { audit: text } = t();
    const session = c.get('session');
    const org = session.organizationId!;
    const q = c.req.query();
    const action = auditActions.find((a) => a === q.action) as AuditAction | undefined;
    const targetType = auditTargetTypes.find((k) => k === q.target_type);
    const targetGiven = q.target?.trim() || undefined;
    const target = targetGiven && isUuid(targetGiven) ? targetGiven.toLowerCase() : undefined;
    const before = seqOf(q.before);
    const after = before === null ? seqOf(q.after) : null;
    const db = await portalRead(c, auditOps.listAuditEvents, { param: { id: org } });
    const rows = await listAuditEvents(db, {
      organizationId: org,
      action,
      targetType,
      targetId: target,
      beforeSeq: before,
      afterSeq: after,
      limit: PAGE_SIZE,
    });
    const more = rows.length > PAGE_SIZE;
    // Going back the rows come oldest first: the page is shown newest first all the same.
    const page = after === null ? rows.slice(0, PAGE_SIZE) : rows.slice(0, PAGE_SIZE).reverse();
    const hasNewer = after === null ? before !== null : more;
    const hasOlder = after === null ? more : true;
    const ids = [...new Set([...page.flatMap((e) => (e.target_id ? [e.target_id] : [])), ...(target ? [target] : [])])];
    const names = await auditTargetNames(db, org, ids);
    const recorded = await recordedTargetNames(
      db,
      org,
      ids.filter((id) => !names.has(id)),
    );

    const filters = new URLSearchParams();
    if (action) filters.set('action', action);
    if (targetType) filters.set('target_type', targetType);
    if (target) filters.set('target', target);
    const link = (extra: Record<string, string>) => {
      const params = new URLSearchParams(filters);
      for (const [name, value] of Object.entries(extra)) params.set(name, value);
      return params.size === 0 ? '/portal/audit' : `/portal/audit?${params}`;
    };
    const byTarget = (id: string) => {
      const params = new URLSearchParams(filters);
      params.set('target', id);
      return `/portal/audit?${params}`;
    };
    return render(
      c,
      <Layout title={text.title} session={session} flash={takeFlash(c)}>
        <p class="muted">{text.intro}</p>
        <form method="get" action="/portal/audit" class="filters" aria-label={text.filter}>
          <div>
            <label for="action">{text.action}</label>
            <select id="action" name="action">
              <option value="">{text.allActions}</option>
              {auditActions.map((a) => (
                <option value={a} selected={a === action}>
                  {a}
                </option>
              ))}
            </select>
          </div>
          <div>
            <label for="target_type">{text.targetType}</label>
            <select id="target_type" name="target_type">
              <option value="">{text.allTargetTypes}</option>
              {auditTargetTypes.map((k) => (
                <option value={k} selected={k === targetType}>
                  {text.targetTypes[k]}
                </option>
              ))}
            </select>
          </div>
          <div>
            <label for="target">{text.target}</label>
            <input
              id="target"
              name="target"
              value={targetGiven ?? ''}
              size={38}
              maxlength={36}
              title={text.targetHint}
            />
          </div>
          <div>
            <button type="submit">{text.filter}</button>{' '}
            {filters.size > 0 ? <a href="/portal/audit">{text.reset}</a> : null}
          </div>
        </form>
        {targetGiven && !target ? <p class="flash error">{text.invalidTarget}</p> : null}
        {target ? (
          <p data-filter="target">{text.filteredTarget(names.get(target) ?? recorded.get(target) ?? target)}</p>
        ) : null}
        {page.length === 0 ? (
          <p class="empty">{text.none}</p>
        ) : (
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">{text.time}</th>
                  <th scope="col">{text.who}</th>
                  <th scope="col">{text.action}</th>
                  <th scope="col">{text.target}</th>
                </tr>
              </thead>
              <tbody>
                {page.map((e) => (
                  <tr data-seq={String(e.seq)}>
                    <td>{formatTime(e.created_at)}</td>
                    <td>{whoOf(e, text)}</td>
                    <td>
                      <a href={link({ action: e.action })}>
                        <code>{e.action}</code>
                      </a>
                    </td>
                    <td data-field="target">
                      <Target
                        event={e}
                        exists={e.target_id !== null && names.has(e.target_id)}
                        name={e.target_id ? names.get(e.target_id) : undefined}
                        recorded={e.target_id ? recorded.get(e.target_id) : undefined}
                        filterHref={byTarget(e.target_id ?? '')}
                      />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        <nav class="pager" aria-label={text.pages}>
          {hasNewer ? <a href={link({})}>{text.first}</a> : null}
          {hasNewer && page.length > 0 ? <a href={link({ after: String(page[0]!.seq) })}>{text.previous}</a> : null}
          {hasOlder && page.length > 0 ? (
            <a href={link({ before: String(page[page.length - 1]!.seq) })}>{text.next}</a>
          ) : null}
        </nav>
      </Layout>,
    );
  });
  return app;
}
