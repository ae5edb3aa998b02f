/**
 * The sweep of package sets no device refers to any more (task sweep_package_sets): what
 * goes with a set (its packages, its matches), what stays (a set a device, an archived one
 * too, still runs; a set an upload holds), and an upload of a list whose set was swept.
 */
import { describe, expect, it } from 'vitest';
import { deleteUnusedPackageSets } from '../../api/inventory/repo.ts';
import { refreshFeed } from '../../api/vulnerabilities/feeds.ts';
import { matchOutdated } from '../../api/vulnerabilities/matching.ts';
import { sweepPackageSets } from '../../jobs/tasks/sweep_package_sets.ts';
import { enrollAgent } from '../support/agent.ts';
import { useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { insertDevice } from '../support/devices.ts';
import { inventory, packages, pkg, putInventory } from '../support/inventory.ts';
import { BOOKWORM, DEBIAN_SAMPLE, insertInventory, insertPackageSet } from '../support/vulnerabilities.ts';

const ctx = useTestApp();

async function setsLeft(ids: number[]) {
  const rows = await ctx.sql<{ id: number; packages: number; matched: number }[]>`
    select p.id,
           (select count(*)::int from package_set_packages k where k.set_id = p.id) as packages,
           (select count(*)::int from vulnerability_matched_sets m where m.package_set_id = p.id) as matched
      from package_sets p where p.id = any(${ids}::bigint[]) order by p.id`;
  return rows;
}

async function setOf(deviceId: string): Promise<number> {
  const [row] = await ctx.sql<
    { id: number }[]
  >`select package_set_id as id from device_inventories where device_id = ${deviceId}`;
  return row!.id;
}

describe('sweep_package_sets', () => {
  it('deletes the sets no device runs, with their packages and matches, and keeps those devices run', async () => {
    const org = (await createOrganization(ctx)).id;
    const curl = [{ name: 'curl', version: '7.88.1-10+deb12u3' }];
    const [left, moved, gone, kept, archived] = [
      await insertPackageSet(ctx.sql, [...curl, { name: 'sweep-left', version: '1.0-1' }]),
      await insertPackageSet(ctx.sql, [...curl, { name: 'sweep-moved', version: '1.0-1' }]),
      await insertPackageSet(ctx.sql, [...curl, { name: 'sweep-gone', version: '1.0-1' }]),
      await insertPackageSet(ctx.sql, [...curl, { name: 'sweep-kept', version: '1.0-1' }]),
      await insertPackageSet(ctx.sql, [...curl, { name: 'sweep-archived', version: '1.0-1' }]),
    ];
    const mover = await insertDevice(ctx.sql, { organizationId: org });
    const deleted = await insertDevice(ctx.sql, { organizationId: org });
    const stays = await insertDevice(ctx.sql, { organizationId: org });
    const asleep = await insertDevice(ctx.sql, { organizationId: org, archived: true });
    await insertInventory(ctx.sql, mover, left, BOOKWORM);
    await insertInventory(ctx.sql, deleted, gone, BOOKWORM);
    await insertInventory(ctx.sql, stays, kept, BOOKWORM);
    await insertInventory(ctx.sql, asleep, archived, BOOKWORM);
    expect((await refreshFeed(ctx.sql, 'debian', DEBIAN_SAMPLE)).outcome).toBe('changed');
    await matchOutdated(ctx.sql);
    // The mover's old set is left behind; the deleted device's set is left by no one.
    await insertInventory(ctx.sql, mover, moved, BOOKWORM);
    await matchOutdated(ctx.sql);
    await ctx.sql`delete from devices where id = ${deleted.id}`;
    expect((await setsLeft([left, gone])).map((s) => [s.packages, s.matched])).toEqual([
      [2, 1],
      [2, 1],
    ]);

    expect(await sweepPackageSets(ctx.sql)).toBe(2);
    expect((await setsLeft([left, moved, gone, kept, archived])).map((s) => s.id)).toEqual([moved, kept, archived]);
    const [orphans] = await ctx.sql<{ packages: number; matched: number }[]>`
      select (select count(*)::int from package_set_packages where set_id = any(${[left, gone]}::bigint[])) as packages,
             (select count(*)::int from vulnerability_matched_sets where package_set_id = any(${[left, gone]}::bigint[])) as matched`;
    expect(orphans).toEqual({ packages: 0, matched: 0 });
    // The devices' reads are untouched; a second sweep finds nothing.
    const res = await ctx.request('GET', `/api/v1/devices/${mover.id}/vulnerabilities`);
    expect(res.status).toBe(200);
    expect(res.body.items.map((r: { cve: string }) => r.cve)).toContain('CVE-2023-38545');
    expect(await sweepPackageSets(ctx.sql)).toBe(0);
  });

  it('skips a set an upload holds until it is done, and deletes in batches', async () => {
    const held = await insertPackageSet(ctx.sql, [{ name: 'sweep-held', version: '1.0-1' }]);
    const loose = [];
    for (let i = 0; i < 5; i++)
      loose.push(await insertPackageSet(ctx.sql, [{ name: `sweep-loose-${i}`, version: '1.0-1' }]));
    const upload = await ctx.sql.reserve();
    try {
      await upload`begin`;
      // What an upload does when it finds an existing set: hold it until its inventory row is written.
      await upload`select id from package_sets where id = ${held} for key share`;
      expect(await deleteUnusedPackageSets(ctx.sql, 2)).toBe(5);
      expect((await setsLeft([held, ...loose])).map((s) => s.id)).toEqual([held]);
    } finally {
      await upload`rollback`;
      upload.release();
    }
    expect(await deleteUnusedPackageSets(ctx.sql)).toBe(1);
    expect(await setsLeft([held])).toEqual([]);
  });

  it('lets an upload reuse a set its device left, and create it anew once it was swept', async () => {
    const a = await enrollAgent(ctx);
    const b = await enrollAgent(ctx, { organizationId: a.organization_id });
    const list = packages(30, `sweep-${crypto.randomUUID().slice(0, 8)}`);
    expect((await putInventory(ctx, a.secret, inventory({ packages: list }))).status).toBe(204);
    const first = await setOf(a.device_id);
    expect((await putInventory(ctx, a.secret, inventory({ packages: [...list, pkg('extra')] }))).status).toBe(204);
    // b sends the list a left: the same set, which the sweep then keeps.
    expect((await putInventory(ctx, b.secret, inventory({ packages: list }))).status).toBe(204);
    expect(await setOf(b.device_id)).toBe(first);
    await sweepPackageSets(ctx.sql);
    expect((await setsLeft([first])).map((s) => s.packages)).toEqual([30]);
    // b moves on too: the set is swept, and a third upload of the list creates it anew.
    expect((await putInventory(ctx, b.secret, inventory({ packages: [...list, pkg('other')] }))).status).toBe(204);
    await sweepPackageSets(ctx.sql);
    expect(await setsLeft([first])).toEqual([]);
    expect((await putInventory(ctx, a.secret, inventory({ packages: list }))).status).toBe(204);
    const again = await setOf(a.device_id);
    expect(again).not.toBe(first);
    expect((await setsLeft([again])).map((s) => s.packages)).toEqual([30]);
  });
});
