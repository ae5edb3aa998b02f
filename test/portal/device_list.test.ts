/**
 * The portal's device list over HTTP in-process: its total equals the API's count for the
 * filter; in each order of the column headers, paging forward and back through 250
 * devices (ties in every key, devices that never checked in) visits each exactly once, in
 * the API's order; last check-in reads as a relative time with the exact time beside it.
 */
import { describe, expect, it } from 'vitest';
import { DEVICE_SORTS, decodeDeviceCursor, type DeviceSort } from '../../api/devices/organize_repo.ts';
import { relativeTime } from '../../api/portal/relative_time.tsx';
import { createApiKey } from '../support/access.ts';
import { useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { insertOrgUnit } from '../support/devices.ts';
import { PortalClient } from '../support/portal_client.ts';

const ctx = useTestApp();

const DEVICES = 250;
const PAGE = 50;

async function signedIn(key: string) {
  const b = new PortalClient(ctx.app, `10.43.0.${Math.floor(Math.random() * 250) + 1}`);
  expect((await b.signIn(key)).status).toBe(303);
  return b;
}

/**
 * 250 devices in two units: serials in another order than creation, creation times and
 * check-ins in groups of equal values (ties go by id), a fifth never checked in.
 */
async function fleet() {
  const org = await createOrganization(ctx);
  const unit = await insertOrgUnit(ctx.sql, org.id, 'Gymnasium');
  const other = await insertOrgUnit(ctx.sql, org.id, 'Realschule');
  await ctx.sql`
    insert into devices (organization_id, serial, hostname, oe_id, agent_secret_hash, agent_secret_issued_at, created_at)
    select ${org.id}, format('PL-%s', lpad(((n * 37) % ${DEVICES})::text, 4, '0')), format('pc-%s', n),
           case when n % 3 = 0 then ${other}::uuid else ${unit}::uuid end,
           sha256(convert_to(${org.id}::text || n::text, 'UTF8')), now() - interval '2 days',
           date_trunc('second', now()) - make_interval(mins => n / 4)
    from generate_series(1, ${DEVICES}) n`;
  await ctx.sql`
    update device_heartbeats h set at = date_trunc('minute', now()) - make_interval(mins => (abs(hashtext(d.id::text)) % 40))
    from devices d where d.id = h.device_id and d.organization_id = ${org.id} and abs(hashtext(d.serial)) % 5 <> 0`;
  const admin = await signedIn((await createApiKey(ctx, org.id, 'admin')).key);
  return { org, unit, other, admin };
}

/** The devices of a list page, in its order. */
function idsOf(html: string): string[] {
  return [...html.matchAll(/<tr data-device="([0-9a-f-]{36})"/g)].map((m) => m[1]!);
}

/** The href of the page's link with this rel (or text), unescaped; null without one. */
function linkOf(html: string, rel: 'next' | 'prev' | 'first'): string | null {
  const m =
    rel === 'first'
      ? /<a href="([^"]+)">« Erste Seite<\/a>/.exec(html)
      : new RegExp(`<a href="([^"]+)" rel="${rel}">`).exec(html);
  return m ? m[1]!.replaceAll('&amp;', '&') : null;
}

function totalOf(html: string): number {
  const m = /data-field="total"><strong>([\d.]+) Geräte?<\/strong>/.exec(html);
  expect(m, 'the total').not.toBeNull();
  return Number(m![1]!.replaceAll('.', ''));
}

/** Every device of the API's list for this query, in its order (its own paging). */
async function apiList(orgId: string, query: string): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  do {
    const res: { status: number; body: any } = await ctx.request(
      'GET',
      `/api/v1/organizations/${orgId}/devices?limit=100${query ? `&${query}` : ''}${cursor ? `&cursor=${cursor}` : ''}`,
    );
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    ids.push(...(res.body.items as { id: string }[]).map((d) => d.id));
    cursor = res.body.next_cursor;
  } while (cursor);
  return ids;
}

describe('the device list: total, sorting and paging', () => {
  it('pages forward and back through 250 devices in each order, each device exactly once, in the API order', async () => {
    const f = await fleet();
    for (const sort of DEVICE_SORTS) {
      const expected = await apiList(f.org.id, `sort=${sort}`);
      expect(expected).toHaveLength(DEVICES);
      // Forward: the header's link chooses the order; then "next" until there is none.
      const pages: string[][] = [];
      let path: string | null = `/portal/devices?sort=${encodeURIComponent(sort)}`;
      let last = '';
      while (path !== null) {
        const page = await f.admin.get(path);
        expect(page.status, path).toBe(200);
        expect(totalOf(page.text)).toBe(DEVICES);
        pages.push(idsOf(page.text));
        expect(pages.at(-1)!.length, `${sort} page ${pages.length}`).toBe(PAGE);
        // The first page has no way back; every later one leads to the first and the previous.
        expect(linkOf(page.text, 'prev') === null, `${sort} page ${pages.length}`).toBe(pages.length === 1);
        expect(linkOf(page.text, 'first') === null).toBe(pages.length === 1);
        last = path;
        path = linkOf(page.text, 'next');
      }
      expect(pages.flat(), sort).toEqual(expected);
      // Back from the last page: "previous" until there is none, each page as it was going forward.
      const back: string[][] = [];
      path = last;
      while (path !== null) {
        const page = await f.admin.get(path);
        expect(page.status, path).toBe(200);
        back.push(idsOf(page.text));
        path = linkOf(page.text, 'prev');
      }
      expect(back.reverse(), sort).toEqual(pages);
      expect(new Set(back.flat()).size).toBe(DEVICES);
      // The first page's link leads where the header's did.
      const third = await f.admin.get(last);
      const first = await f.admin.get(linkOf(third.text, 'first')!);
      expect(idsOf(first.text)).toEqual(pages[0]);
    }
  }, 120_000);

  it('a previous page short of a whole one is the first page, whole', async () => {
    const f = await fleet();
    const expected = await apiList(f.org.id, 'sort=serial');
    // A page that starts at the 11th device: its way back leads to the full first page.
    const firstPage = await f.admin.get('/portal/devices?sort=serial');
    const next = linkOf(firstPage.text, 'next')!;
    const cursor = new URL(next, 'http://x').searchParams.get('cursor')!;
    const [, , id] = JSON.parse(Buffer.from(cursor, 'base64url').toString()) as [string, string, string];
    expect(id).toBe(expected[PAGE - 1]);
    const serialOf = async (deviceId: string) =>
      (await ctx.sql<{ serial: string }[]>`select serial from devices where id = ${deviceId}`)[0]!.serial;
    const tenth = expected[9]!;
    const forged = Buffer.from(JSON.stringify(['serial', await serialOf(tenth), tenth])).toString('base64url');
    const shifted = await f.admin.get(`/portal/devices?sort=serial&cursor=${forged}`);
    expect(idsOf(shifted.text)).toEqual(expected.slice(10, 10 + PAGE));
    const back = await f.admin.get(linkOf(shifted.text, 'prev')!);
    expect(idsOf(back.text)).toEqual(expected.slice(0, PAGE));
    expect(linkOf(back.text, 'prev')).toBeNull();
  });

  it("the total equals the API's count for each filter", async () => {
    const f = await fleet();
    await ctx.sql`update devices set agent_secret_hash = null, agent_secret_issued_at = null
      where organization_id = ${f.org.id} and serial like 'PL-00%'`;
    // Active and stale ones deprovisioned and archived (the totals of active and stale read
    // the heartbeats' rows, which follow the device), and another organization's active devices.
    await ctx.sql`update devices set deprovisioned_at = now() where organization_id = ${f.org.id} and serial like 'PL-01%'`;
    await ctx.sql`update devices set archived_at = now() where organization_id = ${f.org.id} and serial like 'PL-02%'`;
    const stranger = await createOrganization(ctx);
    await ctx.sql`
      insert into devices (organization_id, serial, oe_id, agent_secret_hash, agent_secret_issued_at)
      select ${stranger.id}, format('PL-%s', n), (select id from org_units where organization_id = ${stranger.id} limit 1),
             sha256(convert_to(n::text, 'UTF8')), now() - interval '2 days'
      from generate_series(1, 30) n`;
    await ctx.sql`update device_heartbeats set at = now() - make_interval(mins => 20 * (random() < 0.5)::int)
      where organization_id = ${stranger.id}`;
    for (const query of [
      '',
      `oe_id=${f.other}`,
      'status=active',
      'status=stale',
      'status=enrolled',
      'status=deprovisioned',
      'stale=true',
      'status=active&stale=true',
      'status=stale&stale=true',
      'q=pl-01',
      // A search's total counts serials and hostnames in their ranges: both match (once
      // each), hostnames alone, archived ones not, LIKE's wildcards literally; a last
      // character before the surrogates, and the last one of all (no range: the filter's count).
      'q=p',
      'q=pc-1',
      'q=PL-02',
      'q=pl_0',
      'q=%25',
      'q=%C3%BC',
      'q=p%ED%9F%BF',
      'q=p%F4%8F%BF%BF',
      `oe_id=${f.unit}&status=active&sort=-last_checkin`,
      'status=active&sort=-last_checkin',
      'convergence=pending',
      'convergence=converged&sort=-last_checkin',
    ]) {
      const page = await f.admin.get(`/portal/devices${query ? `?${query}` : ''}`);
      expect(page.status, query).toBe(200);
      // The portal's own default order is creation, the API's the serial.
      const api = await apiList(
        f.org.id,
        query.includes('sort=') ? query : [query, 'sort=created_at'].filter(Boolean).join('&'),
      );
      expect(totalOf(page.text), query).toBe(api.length);
      expect(idsOf(page.text), query).toEqual(api.slice(0, PAGE));
    }
  }, 60_000);

  it('sorts by a click on a column header: links that choose the order and then reverse it', async () => {
    const f = await fleet();
    const page = await f.admin.get(`/portal/devices?oe_id=${f.unit}`);
    const header = (sort: string) =>
      new RegExp(`<a href="([^"]+)" data-sort="${sort.replace('-', '\\-')}"`)
        .exec(page.text)?.[1]
        ?.replaceAll('&amp;', '&');
    // Creation order is the current one: its header reverses it; check-in starts with the latest.
    expect(header('-created_at')).toBe(`/portal/devices?oe_id=${f.unit}&sort=-created_at`);
    expect(header('-last_checkin')).toBe(`/portal/devices?oe_id=${f.unit}&sort=-last_checkin`);
    expect(header('serial')).toBe(`/portal/devices?oe_id=${f.unit}&sort=serial`);
    expect(page.text).toMatch(/<th scope="col" aria-sort="ascending"><a [^>]*>Angelegt ▲/);
    const latest = await f.admin.get(header('-last_checkin')!);
    expect(latest.text).toMatch(
      /aria-sort="descending"><a href="[^"]*sort=last_checkin" data-sort="last_checkin">Letzter Check-in ▼/,
    );
  });

  it('shows the last check-in as a relative time with the exact time on hover', async () => {
    const f = await fleet();
    const [device] = await ctx.sql<{ id: string }[]>`
      update device_heartbeats set at = now() - interval '3 minutes 10 seconds'
      where device_id = (select id from devices where organization_id = ${f.org.id} and serial = 'PL-0037')
      returning device_id as id`;
    const page = await f.admin.get('/portal/devices?q=PL-0037');
    const row = page.text.slice(page.text.indexOf(`data-device="${device!.id}"`));
    expect(row).toMatch(
      /data-field="last_checkin"><time datetime="\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z" title="\d\d\.\d\d\.\d{4}, \d\d:\d\d:\d\d UTC">vor 3 Minuten<\/time>/,
    );
  });

  it('words a time ago in German, in its largest whole unit', () => {
    const now = new Date('2026-11-26T12:00:00Z');
    const ago = (ms: number) => relativeTime(new Date(now.getTime() - ms), now);
    expect(ago(20_000)).toBe('gerade eben');
    expect(ago(-20_000)).toBe('gerade eben');
    expect(ago(-3_600_000)).toBe('in der Zukunft');
    expect(ago(60_000)).toBe('vor 1 Minute');
    expect(ago(3 * 60_000 + 59_000)).toBe('vor 3 Minuten');
    expect(ago(2 * 3_600_000)).toBe('vor 2 Stunden');
    expect(ago(24 * 3_600_000)).toBe('vor 1 Tag');
    expect(ago(3 * 24 * 3_600_000)).toBe('vor 3 Tagen');
    expect(ago(65 * 24 * 3_600_000)).toBe('vor 2 Monaten');
    expect(ago(800 * 24 * 3_600_000)).toBe('vor 2 Jahren');
  });

  it('a cursor walking back is read by the portal as by the API (its prev_cursor)', async () => {
    const f = await fleet();
    const sort: DeviceSort = 'serial';
    const back = Buffer.from(JSON.stringify([sort, 'PL-0100', crypto.randomUUID(), 'before'])).toString('base64url');
    expect(decodeDeviceCursor(sort, back)?.before).toBe(true);
    const res = await ctx.request('GET', `/api/v1/organizations/${f.org.id}/devices?cursor=${back}`);
    expect(res.status).toBe(200);
    expect((await f.admin.get(`/portal/devices?sort=serial&cursor=${back}`)).status).toBe(200);
  });
});
