/** The device list's `?stale=` and `?q=` filters: rules, bad input, tenants. */
import { describe, expect, it } from 'vitest';
import { createApiKey } from '../support/access.ts';
import { useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { insertDevice } from '../support/devices.ts';

// Poll interval 300 s (testConfig): stale after 15 minutes without a check-in.
const ctx = useTestApp();

async function serials(orgId: string, query: string, token?: string): Promise<string[]> {
  const res = await ctx.request('GET', `/api/v1/organizations/${orgId}/devices?${query}`, { token });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.items.map((d: { serial: string }) => d.serial).sort();
}

async function device(
  orgId: string,
  serial: string,
  fields: { hostname?: string; issued?: string; checkin?: string } = {},
) {
  const d = await insertDevice(ctx.sql, { organizationId: orgId, serial, hostname: fields.hostname ?? null });
  await ctx.sql`update devices set
    agent_secret_issued_at = ${fields.issued ? ctx.sql`now() - ${fields.issued}::interval` : null},
    agent_secret_hash = ${fields.issued ? ctx.sql`sha256(${d.id}::text::bytea)` : null}
    where id = ${d.id}`;
  if (fields.checkin) {
    await ctx.sql`update device_heartbeats set at = now() - ${fields.checkin}::interval where device_id = ${d.id}`;
  }
  return d;
}

describe('?stale=', () => {
  it('lists devices whose agent missed three poll intervals; never-bootstrapped, deprovisioned and archived ones are not stale', async () => {
    const org = await createOrganization(ctx);
    await device(org.id, 'FRESH', { issued: '2 days', checkin: '1 minute' });
    await device(org.id, 'LATE', { issued: '2 days', checkin: '16 minutes' });
    await device(org.id, 'ALMOST', { issued: '2 days', checkin: '14 minutes' });
    await device(org.id, 'SILENT', { issued: '20 minutes' }); // bootstrapped, never checked in
    await device(org.id, 'NEWBORN', { issued: '2 minutes' });
    await device(org.id, 'NOAGENT'); // never bootstrapped
    const gone = await device(org.id, 'GONE', { issued: '2 days', checkin: '1 day' });
    await ctx.sql`update devices set deprovisioned_at = now() where id = ${gone.id}`;
    const archived = await device(org.id, 'ARCHIVED', { issued: '2 days', checkin: '1 day' });
    await ctx.sql`update devices set archived_at = now() where id = ${archived.id}`;

    expect(await serials(org.id, 'stale=true')).toEqual(['LATE', 'SILENT']);
    expect(await serials(org.id, 'stale=false')).toEqual(['ALMOST', 'FRESH', 'GONE', 'NEWBORN', 'NOAGENT']);
    expect(await serials(org.id, '')).toHaveLength(7);
  });

  it('is 400 for anything but true or false', async () => {
    const org = await createOrganization(ctx);
    for (const bad of ['yes', '1', 'TRUE', '']) {
      const res = await ctx.request('GET', `/api/v1/organizations/${org.id}/devices?stale=${bad}`);
      expect(res.status, bad).toBe(400);
      expect(res.body.error).toBe('invalid_request');
    }
  });
});

describe('?q=', () => {
  it('matches a case-insensitive prefix of the serial or the hostname', async () => {
    const org = await createOrganization(ctx);
    await device(org.id, 'PF3XK2QZ', { hostname: 'arbeitsplatz-017' });
    await device(org.id, 'pf9aaaaa', { hostname: 'labor-1' });
    await device(org.id, 'ZZ-ARBEIT', { hostname: 'Arbeitsplatz-018' });
    await device(org.id, 'QQ1', { hostname: 'x-pf3' });
    expect(await serials(org.id, 'q=pf')).toEqual(['PF3XK2QZ', 'pf9aaaaa']);
    expect(await serials(org.id, 'q=PF3X')).toEqual(['PF3XK2QZ']);
    expect(await serials(org.id, 'q=ARBEITSPLATZ')).toEqual(['PF3XK2QZ', 'ZZ-ARBEIT']);
    expect(await serials(org.id, 'q=arbeitsplatz-018')).toEqual(['ZZ-ARBEIT']);
    expect(await serials(org.id, 'q=3')).toEqual([]); // a prefix, not a substring
    expect(await serials(org.id, 'q=labor&stale=false')).toEqual(['pf9aaaaa']);
  });

  it('takes %, _ and backslash literally', async () => {
    const org = await createOrganization(ctx);
    await device(org.id, 'A%B');
    await device(org.id, 'AXB');
    await device(org.id, 'A_C');
    await device(org.id, 'AYC');
    await device(org.id, 'A\\D');
    expect(await serials(org.id, `q=${encodeURIComponent('A%')}`)).toEqual(['A%B']);
    expect(await serials(org.id, `q=${encodeURIComponent('A_')}`)).toEqual(['A_C']);
    expect(await serials(org.id, `q=${encodeURIComponent('A\\')}`)).toEqual(['A\\D']);
    expect(await serials(org.id, `q=${encodeURIComponent('%')}`)).toEqual([]);
  });

  it('is 400 when empty or longer than 100 characters', async () => {
    const org = await createOrganization(ctx);
    for (const bad of ['', 'x'.repeat(101)]) {
      const res = await ctx.request('GET', `/api/v1/organizations/${org.id}/devices?q=${bad}`);
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('invalid_request');
    }
  });

  it("an organization key sees only its own devices; another organization's list is 404", async () => {
    const mine = await createOrganization(ctx);
    const theirs = await createOrganization(ctx);
    await device(mine.id, 'SAME-1', { issued: '1 day' });
    await device(theirs.id, 'SAME-2', { issued: '1 day' });
    const viewer = await createApiKey(ctx, mine.id, 'viewer');
    expect(await serials(mine.id, 'q=same&stale=true', viewer.key)).toEqual(['SAME-1']);
    const res = await ctx.request('GET', `/api/v1/organizations/${theirs.id}/devices?q=same`, { token: viewer.key });
    expect(res.status).toBe(404);
  });
});

describe('the OpenAPI document', () => {
  it('documents stale and q on listDevices and the explain operation', async () => {
    const doc = (await ctx.request('GET', '/api/v1/openapi.json')).body;
    const params = doc.paths['/api/v1/organizations/{id}/devices'].get.parameters.map((p: { name: string }) => p.name);
    expect(params).toEqual(expect.arrayContaining(['stale', 'q', 'oe_id', 'group_id']));
    const explain = doc.paths['/api/v1/devices/{id}/catalog/{merkmal}/explain'].get;
    expect(explain.operationId).toBe('explainDeviceMerkmal');
    expect(explain['x-callers']).toEqual(['operator', 'admin', 'viewer']);
  });
});
