/**
 * The catalog of an org unit and of a group: per catalog Merkmal the override set there and
 * how its devices stand, and its select, deselect and unset. A change first shows how many
 * devices it changes, then goes out all at once (the selection the API makes) or in rings
 * (a rollout). A Merkmal a rollout holds at the scope links that rollout instead.
 */
import type { Context } from 'hono';
import { Hono } from 'hono';
import { selectionOperations } from '../catalog/operations.ts';
import { listOverrides, requireCatalogMerkmal } from '../catalog/repo.ts';
import { changeSelection } from '../catalog/service.ts';
import type { Db } from '../db/client.ts';
import { type FleetStatus, readFleetStatus } from '../devices/fleet_status.ts';
import { requireGroup } from '../groups/repo.ts';
import { ApiError } from '../http/errors.ts';
import { requireOrgUnit } from '../org_units/repo.ts';
import { countDevicesAltered } from '../rollouts/service.ts';
import { type PortalEnv, portalRead, postWrite } from './access.ts';
import { formFields, redirectWith, render, safeBack, takeFlash } from './http.tsx';
import { formatNumber, t } from './i18n/index.ts';
import { stateLabel } from './labels.ts';
import { CsrfField, Layout } from './layout.tsx';
import {
  actionLabel,
  heldMerkmale,
  InRingsForm,
  isRolloutInProgress,
  type RolloutAction,
  rolloutInProgressPage,
} from './rollouts.tsx';
import type { PortalSession } from './session.ts';
import { refusalText } from './refusals.ts';

type Scope = 'org-units' | 'groups';
const actions: RolloutAction[] = ['select', 'deselect', 'unset'];
const rolloutScope = { 'org-units': 'org_unit', groups: 'group' } as const;

/** The select, deselect and unset of a Merkmal at a scope: each leads to its confirmation (a GET, nothing changes yet). */
export function ChangeButtons(props: { scope: Scope; id: string; merkmal: string; label: string; back: string }) {
  return (
    <span>
      {actions.map((action) => (
        <form
          class="inline"
          method="get"
          action={`/portal/${props.scope}/${props.id}/catalog/${encodeURIComponent(props.merkmal)}/${action}`}
        >
          <input type="hidden" name="back" value={props.back} />
          <button type="submit" class="secondary" aria-label={`${props.label}: ${actionLabel(action)}`}>
            {actionLabel(action)}
          </button>{' '}
        </form>
      ))}
    </span>
  );
}

/** What a scope's catalog section shows: its Merkmale with their figures, the overrides set there, the rollouts under way. */
export async function loadScopeCatalog(db: Db, organizationId: string, scope: Scope, id: string, poll: number) {
  const [status, overrides, held] = await Promise.all([
    readFleetStatus(db, organizationId, scope === 'org-units' ? { oe_id: id } : { group_id: id }, poll),
    listOverrides(db, scope, id),
    heldMerkmale(db, organizationId, poll),
  ]);
  return { status, overrides: new Map(overrides.map((o) => [o.merkmal, o.state])), held };
}

/** The catalog section of an org unit's or a group's page; its select, deselect and unset only for a session that may write. */
export function ScopeCatalog(props: {
  scope: Scope;
  id: string;
  name: string;
  catalog: Awaited<ReturnType<typeof loadScopeCatalog>>;
  controls: boolean;
}) {
  const { scope, id, catalog } = props;
  const back = `/portal/${scope}/${id}`;
  const text = t().scopeCatalog;
  return (
    <>
      <h2>{text.heading}</h2>
      <p class="muted">{text.intro}</p>
      <div class="table-wrap">
        <table>
          <thead>
            <tr>
              <th scope="col">{text.merkmal}</th>
              <th scope="col">{text.here}</th>
              <th scope="col" class="number">
                {text.present}
              </th>
              <th scope="col" class="number">
                {text.converged}
              </th>
              <th scope="col" class="number">
                {text.pending}
              </th>
              <th scope="col" class="number">
                {text.failed}
              </th>
              {props.controls ? <th scope="col">{text.change}</th> : null}
            </tr>
          </thead>
          <tbody>
            {catalog.status.merkmale.map((m: FleetStatus['merkmale'][number]) => {
              const held = catalog.held.get(`${id} ${m.merkmal}`);
              const state = catalog.overrides.get(m.merkmal);
              return (
                <tr data-merkmal={m.merkmal}>
                  <td>
                    {m.name} <span class="muted">({m.merkmal})</span>
                  </td>
                  <td data-field="override">{state ? stateLabel(state) : text.none}</td>
                  <td class="number">{formatNumber(m.present)}</td>
                  <td class="number">{formatNumber(m.converged)}</td>
                  <td class="number">{formatNumber(m.pending)}</td>
                  <td class="number">{formatNumber(m.failed)}</td>
                  {props.controls ? (
                    <td>
                      {held ? (
                        <a href={`/portal/rollouts/${held}`} data-rollout={held}>
                          {text.held}
                        </a>
                      ) : (
                        <ChangeButtons
                          scope={scope}
                          id={id}
                          merkmal={m.merkmal}
                          label={`${m.name} ${text.shortScope[scope](props.name)}`}
                          back={back}
                        />
                      )}
                    </td>
                  ) : null}
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
    </>
  );
}

async function scopeName(db: Db, scope: Scope, id: string) {
  return scope === 'org-units' ? requireOrgUnit(db, id) : requireGroup(db, id);
}

/** The confirmation of a change at a scope: how many devices it changes; all at once or in rings. */
async function confirmPage(c: Context<PortalEnv>, scope: Scope, action: RolloutAction) {
  const session: PortalSession = c.get('session');
  const id = c.req.param('id')!.toLowerCase();
  const merkmal = c.req.param('merkmal')!;
  const db = await portalRead(c, selectionOperations[scope][action], { param: { id, merkmal } });
  const owner = await scopeName(db, scope, id);
  // A Merkmal that cannot be selected is refused here already, with the selection's reason.
  await requireCatalogMerkmal(db, merkmal, null);
  const org = owner.organization_id;
  const poll = c.get('deps').config.agentPollIntervalSeconds;
  const [count, held] = await Promise.all([
    countDevicesAltered(db, org, rolloutScope[scope], id, merkmal, action, {}),
    heldMerkmale(db, org, poll),
  ]);
  const heldBy = held.get(`${id} ${merkmal}`);
  const back = safeBack(c.req.query('back'), `/portal/${scope}/${id}`);
  const here = `/portal/${scope}/${id}/catalog/${merkmal}/${action}`;
  const text = t().scopeCatalog;
  const scopeText = text.scopeName[scope](owner.name);
  return render(
    c,
    <Layout title={text.title(merkmal, actionLabel(action))} session={session} flash={takeFlash(c)}>
      <p>{text.what[action](merkmal, scopeText)}</p>
      <p class="figure-line" data-field="count" data-count={String(count)}>
        <strong>{text.count(count, formatNumber(count))}</strong>
      </p>
      {heldBy ? (
        <p class="flash error">
          {text.heldText} <a href={`/portal/rollouts/${heldBy}`}>{text.toRollout}</a>
        </p>
      ) : (
        <div class="choices">
          <section>
            <h2>{text.allHeading}</h2>
            <p>{text.allText}</p>
            <form method="post" action={here}>
              <CsrfField session={session} />
              <input type="hidden" name="back" value={back} />
              <button type="submit">{text.allButton}</button>
            </form>
          </section>
          <section>
            <h2>{text.ringsHeading}</h2>
            <p>{text.ringsText}</p>
            <InRingsForm
              session={session}
              scope={rolloutScope[scope]}
              scopeId={id}
              merkmal={merkmal}
              action={action}
              from={here}
              button={text.ringsButton}
            />
          </section>
        </div>
      )}
      <p>
        <a href={back}>{text.cancel}</a>
      </p>
    </Layout>,
  );
}

export function scopeCatalogRoutes() {
  const app = new Hono<PortalEnv>();
  for (const scope of ['org-units', 'groups'] as const) {
    for (const action of actions) {
      app.get(`/${scope}/:id/catalog/:merkmal/${action}`, (c) => confirmPage(c, scope, action));

      // All at once: the selection the API makes, back to the page the change started on.
      postWrite(
        app,
        `/${scope}/:id/catalog/:merkmal/${action}`,
        selectionOperations[scope][action],
        async (c, write) => {
          const id = c.req.param('id').toLowerCase();
          const merkmal = c.req.param('merkmal');
          const back = safeBack((await formFields(c)).back, `/portal/${scope}/${id}`);
          const change =
            action === 'unset'
              ? ({ kind: 'unset' } as const)
              : ({ kind: 'set', state: action === 'select' ? 'present' : 'absent', optionen: {} } as const);
          try {
            await write({ param: { id, merkmal } }, async (tx, caller) => {
              const { audit } = await changeSelection(tx, scope, id, merkmal, change, caller);
              return { audit, result: null };
            });
          } catch (err) {
            if (isRolloutInProgress(err)) return rolloutInProgressPage(c, err, back);
            if (err instanceof ApiError && [400, 409, 413, 422].includes(err.status)) {
              return redirectWith(c, back, { kind: 'error', text: refusalText(err) });
            }
            throw err;
          }
          return redirectWith(c, back, { kind: 'ok', text: t().scopeCatalog.saved(merkmal, actionLabel(action)) });
        },
      );
    }
  }
  return app;
}
