/** The audit log (CONTRACT §13): one event per successful write, with its actor; nothing for a failure; no secrets. */
import { describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';
import { createApiKey } from '../support/access.ts';
import { TEMPLATES } from '../support/activation.ts';
import { enrollAgent } from '../support/agent.ts';
import { activationCodeOf } from '../support/builders.ts';
import { countRows } from '../support/db.ts';

const ctx = useTestApp();

async function auditOf(organizationId: string, query = '') {
  const res = await ctx.request('GET', `/api/v1/organizations/${organizationId}/audit-events${query}`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.items as Array<{
    action: string;
    actor: Record<string, unknown>;
    target_type: string;
    target_id: string | null;
    details: Record<string, unknown>;
    request_id: string;
  }>;
}

describe('the audit log', () => {
  it('records each action of §13 once, with the actor that made it, and no secret anywhere', async () => {
    const wlan = { ssid: 'Schulnetz-Geheim', psk: 'wlan-passphrase-very-secret' };
    const created = await ctx.request('POST', '/api/v1/organizations', { body: { name: 'Audit GmbH' } });
    const org = created.body.id as string;
    const admin = await createApiKey(ctx, org, 'admin', { name: 'portal' });
    const spare = await createApiKey(ctx, org, 'viewer', { name: 'spare', token: admin.key });
    const agent = await enrollAgent(ctx, { organizationId: org });
    const code = await activationCodeOf(ctx, org);
    const call = async (method: string, path: string, token: string, body?: unknown) => {
      const res = await ctx.request(method, `/api/v1${path}`, { token, body });
      expect(res.status, `${method} ${path} ${JSON.stringify(res.body)}`).toBeLessThan(300);
      return res.body;
    };
    const key = admin.key;
    await call('PATCH', `/organizations/${org}`, key, { telefon: '+49 30 1234' });
    await call('POST', `/organizations/${org}/activation-code/rotate`, key);
    const session = await call('POST', `/organizations/${org}/enrollment-sessions`, key, {
      template_id: TEMPLATES.debianStandard,
      expires_at: '2099-01-01T00:00:00Z',
      max_devices: 3,
    });
    await call('POST', `/enrollment-sessions/${session.id}/revoke`, key);
    const unit = await call('POST', `/organizations/${org}/org-units`, key, { name: 'Schule' });
    await call('PATCH', `/org-units/${unit.id}`, key, { name: 'Grundschule' });
    const group = await call('POST', `/organizations/${org}/groups`, key, { name: 'Lehrer' });
    await call('PATCH', `/groups/${group.id}`, key, { name: 'Lehrkräfte' });
    await call('PUT', `/groups/${group.id}/devices/${agent.device_id}`, key);
    await call('DELETE', `/groups/${group.id}/devices/${agent.device_id}`, key);
    await call('PUT', `/devices/${agent.device_id}/org-unit`, key, { oe_id: unit.id });
    await call('POST', `/devices/${agent.device_id}/catalog/libreoffice/select`, key, { optionen: { sprache: 'de' } });
    await call('POST', `/devices/${agent.device_id}/catalog/libreoffice/deselect`, key);
    await call('DELETE', `/devices/${agent.device_id}/catalog/libreoffice`, key);
    await call('POST', `/organizations/${org}/iso-builds`, key, { wlan });
    await call('POST', `/devices/${agent.device_id}/deprovision`, key);
    await call('POST', `/devices/${agent.device_id}/reprovision`, key);
    await call('PUT', `/devices/${agent.device_id}/org-unit`, ctx.config.adminToken, {
      oe_id: created.body.default_oe_id,
    });
    await call('DELETE', `/org-units/${unit.id}`, key);
    await call('DELETE', `/groups/${group.id}`, key);
    await call('POST', `/devices/${agent.device_id}/archive`, key);
    await call('POST', `/api-keys/${spare.id}/revoke`, key);

    const events = await auditOf(org, '?limit=500');
    const actions = events.map((e) => e.action).reverse();
    expect(actions).toEqual([
      'organization.create',
      'api_key.create',
      'api_key.create',
      // The test's own reads of the code (the agent's enrollment, then the line above), as the operator.
      'activation_code.read',
      'activation_code.read',
      'organization.update',
      'activation_code.rotate',
      'enrollment_session.create',
      'enrollment_session.revoke',
      'org_unit.create',
      'org_unit.update',
      'group.create',
      'group.update',
      'group.add_device',
      'group.remove_device',
      'device.move',
      'catalog.select',
      'catalog.deselect',
      'catalog.unset',
      'iso_build.create',
      'device.deprovision',
      'device.reprovision',
      'device.move',
      'org_unit.delete',
      'group.delete',
      'device.archive',
      'api_key.revoke',
    ]);
    const portal = { type: 'api_key', api_key_id: admin.id, name: 'portal' };
    expect(events.at(-1)!.actor).toEqual({ type: 'operator' }); // organization.create
    expect(events.at(-2)!.actor).toEqual({ type: 'operator' }); // the first key, made by the operator
    const moves = events.filter((e) => e.action === 'device.move');
    expect(moves.map((e) => e.actor)).toEqual([{ type: 'operator' }, portal]);
    const reads = events.filter((e) => e.action === 'activation_code.read');
    expect(reads.map((e) => [e.actor, e.target_type, e.target_id])).toEqual([
      [{ type: 'operator' }, 'organization', org],
      [{ type: 'operator' }, 'organization', org],
    ]);
    for (const e of events.slice(0, -3).filter((e) => e !== moves[0] && !reads.includes(e))) {
      expect(e.actor, e.action).toEqual(portal);
    }
    expect(events.find((e) => e.action === 'catalog.select')).toMatchObject({
      target_type: 'device',
      target_id: agent.device_id,
      details: { merkmal: 'libreoffice', state: 'present', optionen: { sprache: 'de' } },
    });
    expect(new Set(events.map((e) => e.request_id)).size).toBe(events.length);

    // The selection events name the same actor.
    const [selection] = await ctx.sql<{ payload: { actor: unknown } }[]>`
      select payload from device_merkmal_events where device_id = ${agent.device_id} and type = 'selected'`;
    expect(selection!.payload.actor).toEqual(portal);

    const [dump] = await ctx.sql<{ text: string }[]>`select string_agg(t::text, ' ') as text from audit_events t`;
    for (const secret of [code, admin.key, spare.key, agent.secret, wlan.ssid, wlan.psk]) {
      expect(dump!.text).not.toContain(secret);
    }
  });

  it('records nothing for a write that failed, was refused or only read', async () => {
    const org = (await ctx.request('POST', '/api/v1/organizations', { body: { name: 'Fehler AG' } })).body;
    const viewer = await createApiKey(ctx, org.id, 'viewer');
    const before = await countRows(ctx.sql, 'audit_events');
    expect(
      (await ctx.request('PATCH', `/api/v1/organizations/${org.id}`, { body: { kontakt_email: 'no mail' } })).status,
    ).toBe(400);
    expect((await ctx.request('DELETE', `/api/v1/org-units/${org.default_oe_id}`)).status).toBe(409);
    expect(
      (await ctx.request('PATCH', `/api/v1/organizations/${org.id}`, { token: viewer.key, body: { name: 'x' } }))
        .status,
    ).toBe(403);
    expect((await ctx.request('POST', `/api/v1/devices/${crypto.randomUUID()}/archive`)).status).toBe(404);
    expect((await ctx.request('GET', `/api/v1/organizations/${org.id}`)).status).toBe(200);
    expect(await countRows(ctx.sql, 'audit_events')).toBe(before);
  });

  it('filters by action and target_id and pages newest first', async () => {
    const org = (await ctx.request('POST', '/api/v1/organizations', { body: { name: 'Filter eG' } })).body;
    const groups = [];
    for (const name of ['a', 'b', 'c']) {
      groups.push((await ctx.request('POST', `/api/v1/organizations/${org.id}/groups`, { body: { name } })).body.id);
    }
    await ctx.request('PATCH', `/api/v1/groups/${groups[1]}`, { body: { name: 'bb' } });
    const created = await auditOf(org.id, '?action=group.create');
    expect(created.map((e) => e.target_id)).toEqual([...groups].reverse());
    const aboutB = await auditOf(org.id, `?target_id=${groups[1]}`);
    expect(aboutB.map((e) => e.action)).toEqual(['group.update', 'group.create']);

    const page1 = await ctx.request('GET', `/api/v1/organizations/${org.id}/audit-events?limit=2`);
    const page2 = await ctx.request(
      'GET',
      `/api/v1/organizations/${org.id}/audit-events?limit=2&cursor=${page1.body.next_cursor}`,
    );
    const page3 = await ctx.request(
      'GET',
      `/api/v1/organizations/${org.id}/audit-events?limit=2&cursor=${page2.body.next_cursor}`,
    );
    const all = [...page1.body.items, ...page2.body.items, ...page3.body.items].map(
      (e: { action: string }) => e.action,
    );
    expect(all).toEqual(['group.update', 'group.create', 'group.create', 'group.create', 'organization.create']);
    expect(page3.body.next_cursor).toBeNull();
    expect((await ctx.request('GET', `/api/v1/organizations/${org.id}/audit-events?target_id=nope`)).status).toBe(400);
    expect((await ctx.request('GET', `/api/v1/organizations/${org.id}/audit-events?cursor=forged`)).status).toBe(400);
  });

  it('filters by target_type, with action and target_id and across pages', async () => {
    const org = (await ctx.request('POST', '/api/v1/organizations', { body: { name: 'Typen eG' } })).body;
    const groups = [];
    for (const name of ['a', 'b', 'c']) {
      groups.push((await ctx.request('POST', `/api/v1/organizations/${org.id}/groups`, { body: { name } })).body.id);
    }
    const unit = await ctx.request('POST', `/api/v1/organizations/${org.id}/org-units`, { body: { name: 'Physik' } });
    expect(unit.status).toBe(201);
    await ctx.request('PATCH', `/api/v1/groups/${groups[0]}`, { body: { name: 'aa' } });

    const ofGroups = await auditOf(org.id, '?target_type=group');
    expect(ofGroups.map((e) => [e.action, e.target_id])).toEqual([
      ['group.update', groups[0]],
      ['group.create', groups[2]],
      ['group.create', groups[1]],
      ['group.create', groups[0]],
    ]);
    expect((await auditOf(org.id, '?target_type=org_unit')).map((e) => e.target_id)).toEqual([unit.body.id]);
    expect((await auditOf(org.id, '?target_type=organization')).map((e) => e.action)).toEqual(['organization.create']);
    expect(await auditOf(org.id, '?target_type=webhook')).toEqual([]);
    // With the other filters: all must hold.
    expect((await auditOf(org.id, '?target_type=group&action=group.update')).map((e) => e.target_id)).toEqual([
      groups[0],
    ]);
    expect(await auditOf(org.id, '?target_type=org_unit&action=group.create')).toEqual([]);
    expect(await auditOf(org.id, `?target_type=org_unit&target_id=${groups[1]}`)).toEqual([]);
    expect((await auditOf(org.id, `?target_type=group&target_id=${groups[1]}`)).map((e) => e.action)).toEqual([
      'group.create',
    ]);
    // Paging keeps the filter: the cursor is only where to go on.
    const page1 = await ctx.request('GET', `/api/v1/organizations/${org.id}/audit-events?target_type=group&limit=3`);
    const page2 = await ctx.request(
      'GET',
      `/api/v1/organizations/${org.id}/audit-events?target_type=group&limit=3&cursor=${page1.body.next_cursor}`,
    );
    expect([...page1.body.items, ...page2.body.items].map((e: { target_id: string }) => e.target_id)).toEqual(
      ofGroups.map((e) => e.target_id),
    );
    expect(page2.body.next_cursor).toBeNull();
    // Another organization's events are never in the answer.
    const other = (await ctx.request('POST', '/api/v1/organizations', { body: { name: 'Andere eG' } })).body;
    await ctx.request('POST', `/api/v1/organizations/${other.id}/groups`, { body: { name: 'fremd' } });
    expect(await auditOf(org.id, '?target_type=group')).toHaveLength(4);
    // An unknown kind is a bad request, named in the details.
    const bad = await ctx.request('GET', `/api/v1/organizations/${org.id}/audit-events?target_type=nope`);
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe('invalid_request');
    expect(JSON.stringify(bad.body.details)).toContain('target_type');
  });
});
