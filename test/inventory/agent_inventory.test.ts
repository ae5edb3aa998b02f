import { Buffer } from 'node:buffer';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';
import { checkin, enrollAgent, unknownSecret } from '../support/agent.ts';
import { countRows } from '../support/db.ts';
import { inventory, packages, pkg, putInventory } from '../support/inventory.ts';

const ctx = useTestApp();

async function storedHash(deviceId: string): Promise<string | null> {
  const [row] = await ctx.sql<{ h: Buffer | null }[]>`select inventory_hash as h from devices where id = ${deviceId}`;
  return row!.h === null ? null : Buffer.from(row!.h).toString('hex');
}

async function matchJobs(organizationId: string) {
  return ctx.sql<{ key: string; payload: Record<string, unknown> }[]>`
    select j.key, j.payload from graphile_worker._private_jobs j
    join graphile_worker._private_tasks t on t.id = j.task_id
    where t.identifier = 'vulnerability_match' and j.payload ->> 'organization_id' = ${organizationId}
    order by j.id`;
}

async function inventoryRow(deviceId: string) {
  const [row] = await ctx.sql`
    select di.package_set_id::text as set_id, di.release, di.kernel, di.security_pending_count, di.reboot_required,
           di.pending, di.luks, ps.packages_count
    from device_inventories di join package_sets ps on ps.id = di.package_set_id where di.device_id = ${deviceId}`;
  return row;
}

/** Everything an inventory may write: nothing of these moves when a PUT is refused. */
async function inventoryFootprint() {
  return {
    sets: await countRows(ctx.sql, 'package_sets'),
    packages: await countRows(ctx.sql, 'package_set_packages'),
    inventories: await countRows(ctx.sql, 'device_inventories'),
    hashes: Number((await ctx.sql`select count(*) from devices where inventory_hash is not null`)[0]!.count),
    jobs: Number(
      (await ctx.sql`select count(*) from graphile_worker.jobs where task_identifier = 'vulnerability_match'`)[0]!
        .count,
    ),
  };
}

describe('the inventory protocol: check-in asks, PUT /api/v1/agent/inventory stores', () => {
  it('asks for an inventory it does not hold, stores it, and asks no more: wanted → sent → 304', async () => {
    const agent = await enrollAgent(ctx);
    const inv = inventory({
      pending: [
        { name: 'libssl3', installed: '3.0.15-1~deb12u1', candidate: '3.0.15-1~deb12u2', security: true },
        { name: 'base-files', installed: '12.4+deb12u8', candidate: '12.4+deb12u9', security: false },
      ],
      reboot_required: true,
      luks: [{ device_path: '/dev/nvme0n1p3', luks_uuid: '6d0c1c0e-3c1a-4c5e-9d2f-0a1b2c3d4e5f', keyslots: [0, 1] }],
    });

    // An agent that sends no hash is never asked.
    const plain = await checkin(ctx, agent.secret);
    expect(plain.status).toBe(200);
    expect(plain.body.inventory).toBeUndefined();
    expect(plain.body.inventory_refresh_hours).toBe(6);

    const asked = await checkin(ctx, agent.secret, { inventory_hash: inv.hash });
    expect(asked.status).toBe(200);
    expect(asked.body.inventory).toBe('wanted');
    const askedTag = asked.headers.get('etag')!;
    expect(askedTag).not.toBe(plain.headers.get('etag'));
    // Still wanted: a 200 even with the tag of that very answer.
    const again = await ctx.request('POST', '/api/v1/agent/checkin', {
      token: agent.secret,
      body: { inventory_hash: inv.hash },
      headers: { 'if-none-match': askedTag },
    });
    expect(again.status).toBe(200);
    expect(again.body.inventory).toBe('wanted');

    const put = await putInventory(ctx, agent.secret, inv);
    expect(put.status, JSON.stringify(put.body)).toBe(204);
    expect(await storedHash(agent.device_id)).toBe(inv.hash);
    expect(await inventoryRow(agent.device_id)).toMatchObject({
      release: 'bookworm',
      kernel: '6.1.0-28-amd64',
      security_pending_count: 1,
      reboot_required: true,
      packages_count: 2,
      // Kept by name.
      pending: [
        { name: 'base-files', installed: '12.4+deb12u8', candidate: '12.4+deb12u9', security: false },
        { name: 'libssl3', installed: '3.0.15-1~deb12u1', candidate: '3.0.15-1~deb12u2', security: true },
      ],
      luks: inv.luks,
    });

    // Not wanted any more: the answer changed once (no `inventory`), then 304s.
    const after = await ctx.request('POST', '/api/v1/agent/checkin', {
      token: agent.secret,
      body: { inventory_hash: inv.hash },
      headers: { 'if-none-match': askedTag },
    });
    expect(after.status).toBe(200);
    expect(after.body.inventory).toBeUndefined();
    expect(after.headers.get('etag')).toBe(plain.headers.get('etag'));
    const unchanged = await ctx.request('POST', '/api/v1/agent/checkin', {
      token: agent.secret,
      body: { inventory_hash: inv.hash },
      headers: { 'if-none-match': after.headers.get('etag')! },
    });
    expect(unchanged.status).toBe(304);

    // Another inventory on the device: asked again.
    const changed = inventory({ kernel: '6.1.0-29-amd64' });
    const askedAgain = await ctx.request('POST', '/api/v1/agent/checkin', {
      token: agent.secret,
      body: { inventory_hash: changed.hash },
      headers: { 'if-none-match': after.headers.get('etag')! },
    });
    expect(askedAgain.status).toBe(200);
    expect(askedAgain.body.inventory).toBe('wanted');
  });

  it('accepts a gzip-compressed body, and arrays in any order (the hash is of the sorted form)', async () => {
    const agent = await enrollAgent(ctx);
    const inv = inventory({
      packages: [pkg('zsh'), pkg('bash'), pkg('libc6', '2.36-9', 'glibc', 'i386'), pkg('libc6', '2.36-9', 'glibc')],
    });
    const res = await putInventory(
      ctx,
      agent.secret,
      { ...inv, packages: [...inv.packages].reverse() },
      { gzip: true },
    );
    expect(res.status, JSON.stringify(res.body)).toBe(204);
    expect(await storedHash(agent.device_id)).toBe(inv.hash);
    expect((await inventoryRow(agent.device_id))!.packages_count).toBe(4);
  });

  it('lets two devices with the same package list share one set, also when they send it at once', async () => {
    const { organization_id } = await enrollAgent(ctx);
    const a = await enrollAgent(ctx, { organizationId: organization_id });
    const b = await enrollAgent(ctx, { organizationId: organization_id });
    const list = packages(300, `shared-${crypto.randomUUID().slice(0, 8)}`);
    const setsBefore = await countRows(ctx.sql, 'package_sets');
    const [ra, rb] = await Promise.all([
      putInventory(ctx, a.secret, inventory({ packages: list, kernel: '6.1.0-28-amd64' })),
      putInventory(ctx, b.secret, inventory({ packages: [...list].reverse(), kernel: '6.1.0-31-amd64' })),
    ]);
    expect([ra.status, rb.status]).toEqual([204, 204]);
    expect(await countRows(ctx.sql, 'package_sets')).toBe(setsBefore + 1);
    const [sa, sb] = [await inventoryRow(a.device_id), await inventoryRow(b.device_id)];
    expect(sa!.set_id).toBe(sb!.set_id);
    expect(
      Number((await ctx.sql`select count(*) from package_set_packages where set_id = ${sa!.set_id}`)[0]!.count),
    ).toBe(300);
    // One match job for the organization.
    expect(await matchJobs(organization_id)).toEqual([
      { key: `vulnerability_match:${organization_id}`, payload: { organization_id } },
    ]);
  });

  it('queues a match when the set or the release changes, not when only the kernel or pending updates do', async () => {
    const agent = await enrollAgent(ctx);
    const org = agent.organization_id;
    const queuedAt = async () =>
      (
        await ctx.sql<{ run_at: Date; revision: number }[]>`
          select j.run_at, j.revision from graphile_worker._private_jobs j where j.key = ${`vulnerability_match:${org}`}`
      )[0];
    expect(await putInventory(ctx, agent.secret, inventory())).toMatchObject({ status: 204 });
    const first = (await inventoryRow(agent.device_id))!.set_id;
    expect(await matchJobs(org)).toEqual([{ key: `vulnerability_match:${org}`, payload: { organization_id: org } }]);
    const queued = await queuedAt();

    expect(
      await putInventory(ctx, agent.secret, inventory({ kernel: '6.1.0-40-amd64', reboot_required: true })),
    ).toMatchObject({ status: 204 });
    expect(await queuedAt()).toEqual(queued);

    // A new set, then a new release: the waiting job stays the organization's one job, queued again.
    const newer = [pkg('bash', '5.2.15-2+b8'), pkg('libssl3', '3.0.15-1~deb12u2', 'openssl')];
    expect(await putInventory(ctx, agent.secret, inventory({ packages: newer }))).toMatchObject({ status: 204 });
    const second = (await inventoryRow(agent.device_id))!.set_id;
    expect(second).not.toBe(first);
    expect((await queuedAt())!.revision).toBe(queued!.revision + 1);

    const ubuntu = { id: 'ubuntu', version_id: '24.04', codename: 'noble' };
    expect(await putInventory(ctx, agent.secret, inventory({ packages: newer, os: ubuntu }))).toMatchObject({
      status: 204,
    });
    expect((await queuedAt())!.revision).toBe(queued!.revision + 2);
    // The device's own row holds its set and release too (the scoped counts read it).
    const [own] = await ctx.sql`
      select inventory_set_id::text as set_id, inventory_release as release from devices where id = ${agent.device_id}`;
    expect(own).toEqual({ set_id: second, release: '24.04' });
    expect(await matchJobs(org)).toEqual([{ key: `vulnerability_match:${org}`, payload: { organization_id: org } }]);
  });

  it("keeps one waiting match job per organization for a wave of uploads, another organization's apart", async () => {
    const a = await enrollAgent(ctx);
    const b = await enrollAgent(ctx, { organizationId: a.organization_id });
    const other = await enrollAgent(ctx);
    const results = await Promise.all([
      putInventory(ctx, a.secret, inventory({ packages: packages(20, `wave-a-${crypto.randomUUID().slice(0, 8)}`) })),
      putInventory(ctx, b.secret, inventory({ packages: packages(20, `wave-b-${crypto.randomUUID().slice(0, 8)}`) })),
      putInventory(
        ctx,
        other.secret,
        inventory({ packages: packages(20, `wave-c-${crypto.randomUUID().slice(0, 8)}`) }),
      ),
    ]);
    expect(results.map((r) => r.status)).toEqual([204, 204, 204]);
    expect((await matchJobs(a.organization_id)).map((j) => j.key)).toEqual([
      `vulnerability_match:${a.organization_id}`,
    ]);
    expect((await matchJobs(other.organization_id)).map((j) => j.key)).toEqual([
      `vulnerability_match:${other.organization_id}`,
    ]);
  });

  it('answers 422 inventory_hash_mismatch for a hash that is not the body’s, storing nothing', async () => {
    const agent = await enrollAgent(ctx);
    const inv = inventory();
    const before = await inventoryFootprint();
    const res = await putInventory(ctx, agent.secret, { ...inv, kernel: '6.1.0-99-amd64' });
    expect(res.status).toBe(422);
    expect(res.body.error).toBe('inventory_hash_mismatch');
    expect(await inventoryFootprint()).toEqual(before);
  });

  it('answers 413 payload_too_large beyond 20,000 packages and beyond 16 MiB uncompressed (a gzip bomb too)', async () => {
    const agent = await enrollAgent(ctx);
    const before = await inventoryFootprint();
    const many = await putInventory(ctx, agent.secret, inventory({ packages: packages(20_001) }), { gzip: true });
    expect(many.status).toBe(413);
    expect(many.body.error).toBe('payload_too_large');

    // 17 MiB of spaces inflate from a few KiB.
    const bomb = gzipSync(
      Buffer.concat([Buffer.from(JSON.stringify(inventory())), Buffer.alloc(17 * 1024 * 1024, 0x20)]),
    );
    expect(bomb.byteLength).toBeLessThan(100_000);
    const inflated = await putInventory(ctx, agent.secret, null, { raw: bomb });
    expect(inflated.status).toBe(413);
    expect(inflated.body.error).toBe('payload_too_large');

    const plainHuge = await putInventory(ctx, agent.secret, ' '.repeat(16 * 1024 * 1024 + 1));
    expect(plainHuge.status).toBe(413);
    expect(await inventoryFootprint()).toEqual(before);
  });

  it('accepts exactly 20,000 packages', async () => {
    const agent = await enrollAgent(ctx);
    const res = await putInventory(
      ctx,
      agent.secret,
      inventory({ packages: packages(20_000, `max-${crypto.randomUUID().slice(0, 8)}`) }),
      { gzip: true },
    );
    expect(res.status, JSON.stringify(res.body)).toBe(204);
    expect((await inventoryRow(agent.device_id))!.packages_count).toBe(20_000);
  });

  it.each([
    ['not JSON', '{"os":'],
    ['an unknown field', { ...inventory(), extra: 1 }],
    ['a missing field', (({ kernel: _k, ...rest }) => rest)(inventory())],
    ['a hash in capitals', { ...inventory(), hash: inventory().hash.toUpperCase() }],
    ['a package without source', { ...inventory(), packages: [{ name: 'bash', version: '1', arch: 'amd64' }] }],
    ['a package listed twice', inventory({ packages: [pkg('bash'), pkg('bash')] })],
    ['a control character', inventory({ kernel: '6.1\n' })],
    [
      'pending security as text',
      { ...inventory(), pending: [{ name: 'a', installed: '1', candidate: '2', security: 'yes' }] },
    ],
    ['an array', []],
  ])('answers 400 invalid_request for %s, storing nothing', async (_case, body) => {
    const agent = await enrollAgent(ctx);
    const before = await inventoryFootprint();
    const res = await putInventory(ctx, agent.secret, body);
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.error).toBe('invalid_request');
    expect(await inventoryFootprint()).toEqual(before);
  });

  it('answers 400 for a body that is not gzip though it says so, or another encoding', async () => {
    const agent = await enrollAgent(ctx);
    const broken = await putInventory(ctx, agent.secret, null, { raw: new TextEncoder().encode('{"not":"gzip"}') });
    expect(broken.status).toBe(400);
    const brotli = await putInventory(ctx, agent.secret, inventory(), { headers: { 'content-encoding': 'br' } });
    expect(brotli.status).toBe(400);
  });

  it('answers 401 for a bad secret and 403 for a deprovisioned or archived device, storing nothing', async () => {
    const agent = await enrollAgent(ctx);
    const before = await inventoryFootprint();
    for (const secret of [null, 'short', unknownSecret()]) {
      const res = await putInventory(ctx, secret, inventory());
      expect(res.status).toBe(401);
      expect(res.body.error).toBe('invalid_agent_secret');
    }
    await ctx.request('POST', `/api/v1/devices/${agent.device_id}/deprovision`);
    const deprovisioned = await putInventory(ctx, agent.secret, inventory());
    expect(deprovisioned.status).toBe(403);
    expect(deprovisioned.body.error).toBe('device_deprovisioned');

    const other = await enrollAgent(ctx);
    await ctx.request('POST', `/api/v1/devices/${other.device_id}/archive`);
    const archived = await putInventory(ctx, other.secret, inventory());
    expect(archived.status).toBe(403);
    expect(archived.body.error).toBe('device_archived');
    expect(await inventoryFootprint()).toEqual(before);
  });

  it('refuses a malformed inventory_hash at check-in with 400', async () => {
    const agent = await enrollAgent(ctx);
    for (const inventory_hash of ['abc', 'A'.repeat(64), 'g'.repeat(64), 1]) {
      const res = await checkin(ctx, agent.secret, { inventory_hash });
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('invalid_request');
    }
  });
});
