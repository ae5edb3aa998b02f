/**
 * A device's events, all of them: newest first, 50 a page, with the first, newer and older
 * page. The device page shows the newest and links here.
 */
import { Hono } from 'hono';
import { listEvents, listNewerEvents } from '../devices/lifecycle_repo.ts';
import * as deviceOps from '../devices/operations.ts';
import { getDevice } from '../devices/repo.ts';
import { listGroups } from '../groups/repo.ts';
import { ApiError, notFound } from '../http/errors.ts';
import { listOrgUnits } from '../org_units/repo.ts';
import { type PortalEnv, portalRead } from './access.ts';
import { EventTable } from './device_details.tsx';
import { render, takeFlash } from './http.tsx';
import { t } from './i18n/index.ts';
import { Layout } from './layout.tsx';
import { portalWorded } from './refusals.ts';

/** Events on one page. */
const EVENTS_PER_PAGE = 50;

/** A page link's position: an event's seq, in the form the page writes it. */
function seqOf(value: string | undefined): number | null {
  if (value === undefined) return null;
  if (!/^[1-9][0-9]{0,15}$/.test(value) || !Number.isSafeInteger(Number(value))) {
    throw portalWorded(new ApiError('invalid_request', t().deviceDetails.eventsPage.badPosition));
  }
  return Number(value);
}

export function deviceEventRoutes() {
  const app = new Hono<PortalEnv>();

  app.get('/devices/:id/events', async (c) => {
    const session = c.get('session');
    const id = c.req.param('id');
    const db = await portalRead(c, deviceOps.listDeviceEvents, { param: { id } });
    const query = c.req.query();
    const before = seqOf(query.before);
    const after = seqOf(query.after);
    const device = await getDevice(db, id, c.get('deps').config.agentPollIntervalSeconds);
    if (!device) throw notFound('device', id);
    const [units, groups, fetched] = await Promise.all([
      listOrgUnits(db, device.organization_id, null, 10_000),
      listGroups(db, device.organization_id, null, 10_000),
      after !== null && before === null
        ? listNewerEvents(db, device.id, after, EVENTS_PER_PAGE)
        : listEvents(db, device.id, before, EVENTS_PER_PAGE),
    ]);
    // One more row than the page says whether there is a page beyond it in the direction read.
    const newer = after !== null && before === null;
    const more = fetched.length > EVENTS_PER_PAGE;
    const events = newer
      ? fetched.slice(fetched.length - Math.min(fetched.length, EVENTS_PER_PAGE))
      : fetched.slice(0, EVENTS_PER_PAGE);
    const hasNewer = newer ? more : before !== null;
    const hasOlder = newer ? true : more;
    const names = new Map([...units, ...groups].map((x) => [x.id, x.name]));
    const base = `/portal/devices/${device.id}/events`;
    const text = t().deviceDetails.eventsPage;
    const first = events[0];
    const last = events[events.length - 1];
    return render(
      c,
      <Layout title={text.title(device.serial)} session={session} flash={takeFlash(c)}>
        <p>
          <a href={`/portal/devices/${device.id}`}>{text.back}</a>
        </p>
        <p class="muted">{text.intro(EVENTS_PER_PAGE)}</p>
        <EventTable events={events} sourceName={(_cause, sourceId) => names.get(sourceId)} />
        {hasNewer || hasOlder ? (
          <nav class="paging" aria-label={text.paging}>
            {hasNewer ? <a href={base}>{text.newest}</a> : null}
            {hasNewer && first ? (
              <a href={`${base}?after=${first.seq}`} rel="prev">
                {text.newer}
              </a>
            ) : null}
            {hasOlder && last ? (
              <a href={`${base}?before=${last.seq}`} rel="next">
                {text.older}
              </a>
            ) : null}
          </nav>
        ) : null}
      </Layout>,
    );
  });

  return app;
}
