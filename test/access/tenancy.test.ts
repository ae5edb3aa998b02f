/**
 * Tenant isolation beyond the path (CONTRACT §12): ids in bodies and queries, the
 * organization list, and the answer for another organization's id being exactly the
 * answer for an id that does not exist.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';
import { createApiKey, databaseFingerprint, tenantFixture, type TenantFixture } from '../support/access.ts';
import { countRows } from '../support/db.ts';
import { PortalClient } from '../support/portal_client.ts';

const ctx = useTestApp();

let mine: TenantFixture;
let theirs: TenantFixture;
beforeAll(async () => {
  mine = await tenantFixture(ctx);
  theirs = await tenantFixture(ctx);
});

describe('ids of another organization', () => {
  it('answers exactly as for an id that does not exist, on paths', async () => {
    for (const path of [`/devices/${theirs.deviceId}`, `/groups/${theirs.groupId}`, `/org-units/${theirs.orgUnitId}`]) {
      const foreign = await ctx.request('GET', `/api/v1${path}`, { token: mine.viewerKey });
      const missingId = crypto.randomUUID();
      const missing = await ctx.request('GET', `/api/v1${path.replace(/[0-9a-f-]{36}$/, missingId)}`, {
        token: mine.viewerKey,
      });
      expect(foreign.status).toBe(404);
      expect(missing.status).toBe(404);
      expect(foreign.body.message.replace(/[0-9a-f-]{36}/, 'ID')).toBe(
        missing.body.message.replace(/[0-9a-f-]{36}/, 'ID'),
      );
      expect(Object.keys(foreign.body)).toEqual(Object.keys(missing.body));
    }
  });

  it('is 404 in a body: moving my device into their org unit, or a unit under their parent, changes nothing', async () => {
    const before = await databaseFingerprint(ctx.sql);
    const move = await ctx.request('PUT', `/api/v1/devices/${mine.deviceId}/org-unit`, {
      token: mine.adminKey,
      body: { oe_id: theirs.orgUnitId },
    });
    expect(move.status).toBe(404);
    expect(move.body.error).toBe('not_found');
    const unit = await ctx.request('POST', `/api/v1/organizations/${mine.organizationId}/org-units`, {
      token: mine.adminKey,
      body: { name: 'Außenstelle', parent_id: theirs.orgUnitId },
    });
    expect(unit.status).toBe(404);
    const patch = await ctx.request('PATCH', `/api/v1/org-units/${mine.orgUnitId}`, {
      token: mine.adminKey,
      body: { parent_id: theirs.orgUnitId },
    });
    expect(patch.status).toBe(404);
    expect(await databaseFingerprint(ctx.sql)).toBe(before);
    // The operator, who may see both, is told the real reason.
    const operator = await ctx.request('PUT', `/api/v1/devices/${mine.deviceId}/org-unit`, {
      body: { oe_id: theirs.orgUnitId },
    });
    expect(operator.status).toBe(422);
    expect(operator.body.error).toBe('organization_mismatch');
  });

  it('is 404 in a query: filtering my device list by their org unit or group', async () => {
    for (const query of [`oe_id=${theirs.orgUnitId}`, `group_id=${theirs.groupId}`]) {
      const res = await ctx.request('GET', `/api/v1/organizations/${mine.organizationId}/devices?${query}`, {
        token: mine.viewerKey,
      });
      expect(res.status, query).toBe(404);
      expect(res.body.error).toBe('not_found');
    }
    const own = await ctx.request(
      'GET',
      `/api/v1/organizations/${mine.organizationId}/devices?group_id=${mine.groupId}`,
      { token: mine.viewerKey },
    );
    expect(own.status).toBe(200);
    expect(own.body.items.map((d: { id: string }) => d.id)).toEqual([mine.deviceId]);
  });

  it('is 404 for a membership pairing their device with my group', async () => {
    const res = await ctx.request('PUT', `/api/v1/groups/${mine.groupId}/devices/${theirs.deviceId}`, {
      token: mine.adminKey,
    });
    expect(res.status).toBe(404);
  });
});

describe('organizations', () => {
  it('lists only the key’s own organization', async () => {
    const res = await ctx.request('GET', '/api/v1/organizations?limit=500', { token: mine.viewerKey });
    expect(res.status).toBe(200);
    expect(res.body.items.map((o: { id: string }) => o.id)).toEqual([mine.organizationId]);
    const all = await ctx.request('GET', '/api/v1/organizations?limit=500');
    expect(all.body.items.length).toBeGreaterThanOrEqual(2);
  });

  it('lets only the operator create one', async () => {
    const before = await countRows(ctx.sql, 'organizations');
    const res = await ctx.request('POST', '/api/v1/organizations', { token: mine.adminKey, body: { name: 'Neu' } });
    expect(res.status).toBe(403);
    expect(res.body.error).toBe('forbidden');
    expect(await countRows(ctx.sql, 'organizations')).toBe(before);
  });

  it('keeps the activation code, the ISO download and the keys from a viewer', async () => {
    const viewer = await createApiKey(ctx, mine.organizationId, 'viewer');
    for (const path of [
      `/organizations/${mine.organizationId}/activation-code`,
      `/iso-builds/${mine.isoBuildId}/download`,
      `/organizations/${mine.organizationId}/api-keys`,
      `/organizations/${mine.organizationId}/audit-events`,
    ]) {
      const res = await ctx.request('GET', `/api/v1${path}`, { token: viewer.key });
      expect(res.status, path).toBe(403);
      expect(res.body.error).toBe('forbidden');
    }
  });

  it('in the portal: filtering my device list by their org unit or group answers as an unknown id', async () => {
    const portal = new PortalClient(ctx.app, '198.51.100.24');
    expect((await portal.signIn(mine.viewerKey)).status).toBe(303);
    const elide = (text: string) =>
      text.replaceAll(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, 'ID');
    for (const [name, theirId] of [
      ['oe_id', theirs.orgUnitId],
      ['group_id', theirs.groupId],
    ] as const) {
      const foreign = await portal.get(`/portal/devices?${name}=${theirId}`);
      const missing = await portal.get(`/portal/devices?${name}=${crypto.randomUUID()}`);
      expect(foreign.status, name).toBe(404);
      expect(missing.status, name).toBe(404);
      expect(elide(foreign.text)).toBe(elide(missing.text));
      expect(foreign.text).not.toContain('another organization');
    }
    const own = await portal.get(`/portal/devices?group_id=${mine.groupId}`);
    expect(own.status).toBe(200);
  });
});
