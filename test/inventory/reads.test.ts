import { describe, expect, it } from 'vitest';
import { createApiKey } from '../support/access.ts';
import { enrollAgent } from '../support/agent.ts';
import { useTestApp } from '../support/app.ts';
import { inventory, pkg, putInventory } from '../support/inventory.ts';

const ctx = useTestApp();

const pending = [
  { name: 'libssl3', installed: '3.0.15-1~deb12u1', candidate: '3.0.15-1~deb12u2', security: true },
  { name: 'base-files', installed: '12.4+deb12u8', candidate: '12.4+deb12u9', security: false },
];

describe('GET /api/v1/devices/{id}/inventory and /packages', () => {
  it('answers 404 no_inventory before the first inventory, then the inventory, to viewers too', async () => {
    const agent = await enrollAgent(ctx);
    const viewer = await createApiKey(ctx, agent.organization_id, 'viewer');
    for (const path of ['inventory', 'packages']) {
      const before = await ctx.request('GET', `/api/v1/devices/${agent.device_id}/${path}`, { token: viewer.key });
      expect(before.status).toBe(404);
      expect(before.body.error).toBe('no_inventory');
      expect(before.body.message).toContain('next check-in');
    }
    const inv = inventory({ pending, reboot_required: true, kernel: '6.1.0-28-amd64' });
    expect((await putInventory(ctx, agent.secret, inv)).status).toBe(204);
    const res = await ctx.request('GET', `/api/v1/devices/${agent.device_id}/inventory`, { token: viewer.key });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      os: { id: 'debian', version_id: '12', codename: 'bookworm' },
      kernel: '6.1.0-28-amd64',
      packages_count: 2,
      pending: [pending[1], pending[0]],
      security_pending_count: 1,
      reboot_required: true,
      inventory_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
  });

  it("answers 404 not_found for an unknown device and for another organization's device", async () => {
    const agent = await enrollAgent(ctx);
    expect((await putInventory(ctx, agent.secret, inventory())).status).toBe(204);
    const other = await enrollAgent(ctx);
    const otherAdmin = await createApiKey(ctx, other.organization_id, 'admin');
    for (const path of ['inventory', 'packages']) {
      const foreign = await ctx.request('GET', `/api/v1/devices/${agent.device_id}/${path}`, { token: otherAdmin.key });
      expect(foreign.status).toBe(404);
      expect(foreign.body.error).toBe('not_found');
      const unknown = await ctx.request('GET', `/api/v1/devices/${crypto.randomUUID()}/${path}`);
      expect(unknown.status).toBe(404);
      expect(unknown.body.error).toBe('not_found');
    }
  });

  it('lists packages by name then architecture, with a name prefix and pages', async () => {
    const agent = await enrollAgent(ctx);
    const list = [
      pkg('zsh'),
      pkg('libc6', '2.36-9', 'glibc', 'i386'),
      pkg('libc6', '2.36-9', 'glibc', 'amd64'),
      pkg('libc-bin', '2.36-9', 'glibc'),
      pkg('lib_x'),
      pkg('bash'),
    ];
    expect((await putInventory(ctx, agent.secret, inventory({ packages: list }))).status).toBe(204);
    const all = await ctx.request('GET', `/api/v1/devices/${agent.device_id}/packages`);
    expect(all.status).toBe(200);
    expect(all.body.items.map((p: { name: string; arch: string }) => `${p.name}:${p.arch}`)).toEqual([
      'bash:amd64',
      'lib_x:amd64',
      'libc-bin:amd64',
      'libc6:amd64',
      'libc6:i386',
      'zsh:amd64',
    ]);
    expect(all.body.next_cursor).toBeNull();
    expect(all.body.items[3]).toEqual(pkg('libc6', '2.36-9', 'glibc', 'amd64'));

    const prefixed = await ctx.request('GET', `/api/v1/devices/${agent.device_id}/packages?q=libc`);
    expect(prefixed.body.items.map((p: { name: string }) => p.name)).toEqual(['libc-bin', 'libc6', 'libc6']);
    // `_` is literal, not a wildcard.
    const literal = await ctx.request('GET', `/api/v1/devices/${agent.device_id}/packages?q=lib_`);
    expect(literal.body.items.map((p: { name: string }) => p.name)).toEqual(['lib_x']);

    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { status: number; body: { items: { name: string; arch: string }[]; next_cursor: string | null } } =
        await ctx.request(
          'GET',
          `/api/v1/devices/${agent.device_id}/packages?limit=4${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        );
      expect(page.status).toBe(200);
      seen.push(...page.body.items.map((p) => `${p.name}:${p.arch}`));
      cursor = page.body.next_cursor;
    } while (cursor !== null);
    expect(seen).toEqual(all.body.items.map((p: { name: string; arch: string }) => `${p.name}:${p.arch}`));

    for (const query of ['cursor=bm90LWEtY3Vyc29y', 'limit=0', 'limit=501', 'q=', 'sort=name']) {
      const bad = await ctx.request('GET', `/api/v1/devices/${agent.device_id}/packages?${query}`);
      expect(bad.status, query).toBe(400);
      expect(bad.body.error).toBe('invalid_request');
    }
  });
});

describe('the device list filters of the inventory', () => {
  it('filters by an installed package, pending security updates and a needed reboot, combined', async () => {
    const first = await enrollAgent(ctx);
    const org = first.organization_id;
    const a = first;
    const b = await enrollAgent(ctx, { organizationId: org });
    const c = await enrollAgent(ctx, { organizationId: org });
    const none = await enrollAgent(ctx, { organizationId: org });
    // Another organization's device with the same package: never listed here.
    const foreign = await enrollAgent(ctx);
    const firefox = [pkg('bash'), pkg('firefox-esr', '128.5.0esr-1~deb12u1')];
    expect(
      (await putInventory(ctx, a.secret, inventory({ packages: firefox, pending, reboot_required: true }))).status,
    ).toBe(204);
    expect((await putInventory(ctx, b.secret, inventory({ packages: firefox, pending: [pending[1]!] }))).status).toBe(
      204,
    );
    expect(
      (await putInventory(ctx, c.secret, inventory({ packages: [pkg('bash')], reboot_required: true }))).status,
    ).toBe(204);
    expect((await putInventory(ctx, foreign.secret, inventory({ packages: firefox, pending }))).status).toBe(204);

    const listed = async (query: string) => {
      const res = await ctx.request('GET', `/api/v1/organizations/${org}/devices?${query}`);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body.items.map((d: { id: string }) => d.id).sort();
    };
    expect(await listed('package=firefox-esr')).toEqual([a.device_id, b.device_id].sort());
    expect(await listed('package=bash')).toEqual([a.device_id, b.device_id, c.device_id].sort());
    expect(await listed('package=firefox')).toEqual([]);
    expect(await listed('security_updates=true')).toEqual([a.device_id]);
    expect(await listed('reboot_required=true')).toEqual([a.device_id, c.device_id].sort());
    expect(await listed('package=bash&reboot_required=true&security_updates=true')).toEqual([a.device_id]);
    expect((await listed('')).length).toBe(4);
    expect(await listed('')).toContain(none.device_id);

    for (const query of ['security_updates=false', 'reboot_required=yes', 'package=']) {
      const bad = await ctx.request('GET', `/api/v1/organizations/${org}/devices?${query}`);
      expect(bad.status, query).toBe(400);
    }
  });
});
