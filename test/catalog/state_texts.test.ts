/**
 * The texts of a device's groups and own overrides on its row (migration 20261125100000),
 * which the check-in reads and stamps its ETag with: triggers keep them equal to
 * `group_members` and `device_merkmale` through every kind of write, one statement at a
 * time, and through concurrent writes of one device in two transactions.
 */
import type postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { waitForLockWaiter } from '../support/agent.ts';
import { addToGroup, type InsertedDevice as Device, insertDevice, insertGroup } from '../support/devices.ts';

const ctx = useTestApp();

async function textsOf(deviceId: string): Promise<{ groups: string; overrides: unknown }> {
  const [row] = await ctx.sql<{ group_ids_text: string; own_overrides_text: string }[]>`
    select group_ids_text, own_overrides_text from devices where id = ${deviceId}`;
  return { groups: row!.group_ids_text, overrides: JSON.parse(row!.own_overrides_text) };
}

const joined = (ids: string[]) => [...ids].sort().join(',');

describe("the texts of a device's groups and overrides", () => {
  it('follow every kind of write of memberships and overrides, for the devices written only', async () => {
    const org = (await createOrganization(ctx)).id;
    const sql = ctx.sql;
    const [device, other, bystander] = [
      await insertDevice(sql, { organizationId: org }),
      await insertDevice(sql, { organizationId: org }),
      await insertDevice(sql, { organizationId: org }),
    ];
    const [g1, g2, g3] = [await insertGroup(sql, org), await insertGroup(sql, org), await insertGroup(sql, org)];
    await addToGroup(sql, g3, bystander.id);
    await sql`insert into device_merkmale (device_id, merkmal, state) values (${bystander.id}, 'qgis', 'present')`;
    const bystanderBefore = await textsOf(bystander.id);
    expect(await textsOf(device.id)).toEqual({ groups: '', overrides: [] });

    await sql`insert into group_members (group_id, device_id, organization_id)
      values (${g2}, ${device.id}, ${org}), (${g1}, ${device.id}, ${org}), (${g1}, ${other.id}, ${org})`;
    expect((await textsOf(device.id)).groups).toBe(joined([g1, g2]));
    expect((await textsOf(other.id)).groups).toBe(g1);

    await sql`insert into group_members (group_id, device_id, organization_id) values (${g1}, ${device.id}, ${org})
      on conflict do nothing`;
    expect((await textsOf(device.id)).groups).toBe(joined([g1, g2]));

    // A membership moved to another device: both devices change.
    await sql`update group_members set device_id = ${other.id} where group_id = ${g2} and device_id = ${device.id}`;
    expect((await textsOf(device.id)).groups).toBe(g1);
    expect((await textsOf(other.id)).groups).toBe(joined([g1, g2]));

    await sql`delete from group_members where group_id = ${g1} and device_id = ${device.id}`;
    expect((await textsOf(device.id)).groups).toBe('');

    await sql`insert into device_merkmale (device_id, merkmal, state, optionen)
      values (${device.id}, 'qgis', 'absent', '{}'), (${device.id}, 'firefox', 'present', '{"grund": "kiosk"}')`;
    expect((await textsOf(device.id)).overrides).toEqual([
      { merkmal: 'firefox', state: 'present', optionen: { grund: 'kiosk' } },
      { merkmal: 'qgis', state: 'absent', optionen: {} },
    ]);
    await sql`update device_merkmale set state = 'absent', optionen = '{"a": 1}' where device_id = ${device.id} and merkmal = 'firefox'`;
    expect((await textsOf(device.id)).overrides).toEqual([
      { merkmal: 'firefox', state: 'absent', optionen: { a: 1 } },
      { merkmal: 'qgis', state: 'absent', optionen: {} },
    ]);
    await sql`delete from device_merkmale where device_id = ${device.id} and merkmal = 'qgis'`;
    expect((await textsOf(device.id)).overrides).toEqual([{ merkmal: 'firefox', state: 'absent', optionen: { a: 1 } }]);

    // A group deleted: its memberships go by the cascade, and the texts with them.
    await sql`delete from groups where id = ${g2}`;
    expect((await textsOf(other.id)).groups).toBe(g1);

    expect(await textsOf(bystander.id)).toEqual(bystanderBefore);
    expect(bystanderBefore).toEqual({ groups: g3, overrides: [{ merkmal: 'qgis', state: 'present', optionen: {} }] });
  });

  // Each transaction writes one table only: a second trigger in the same statement would
  // refresh the texts again and hide a lost update of the first.
  it.each([
    [
      'a group',
      (tx: postgres.ReservedSql, d: Device, group: string) =>
        tx`insert into group_members (group_id, device_id, organization_id) values (${group}, ${d.id}, ${d.organization_id})`,
    ],
    [
      'an override',
      (tx: postgres.ReservedSql, d: Device, merkmal: string) =>
        tx`insert into device_merkmale (device_id, merkmal, state) values (${d.id}, ${merkmal}, 'present')`,
    ],
  ] as const)('hold both of two concurrent transactions that each add %s to one device', async (kind, add) => {
    const org = (await createOrganization(ctx)).id;
    const device = await insertDevice(ctx.sql, { organizationId: org });
    const [a, b] =
      kind === 'a group' ? [await insertGroup(ctx.sql, org), await insertGroup(ctx.sql, org)] : ['qgis', 'firefox'];
    const first = await ctx.sql.reserve();
    const second = await ctx.sql.reserve();
    try {
      await first`begin`;
      await add(first, device, a!);
      await second`begin`;
      // The second writes its row, then its trigger waits for the device's row: the first holds it.
      const secondAdd = add(second, device, b!).execute(); // sent now, awaited below
      await waitForLockWaiter(
        ctx.sql,
        kind === 'a group' ? 'insert into group_members' : 'insert into device_merkmale',
      );
      await first`commit`;
      await secondAdd;
      await second`commit`;
    } finally {
      first.release();
      second.release();
    }
    const texts = await textsOf(device.id);
    if (kind === 'a group') expect(texts.groups).toBe(joined([a!, b!]));
    else
      expect(texts.overrides).toEqual([
        { merkmal: 'firefox', state: 'present', optionen: {} },
        { merkmal: 'qgis', state: 'present', optionen: {} },
      ]);
  });
});
