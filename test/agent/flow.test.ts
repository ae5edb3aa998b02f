/**
 * The agent's whole life over HTTP (in-process app): activate → resolve → bootstrap →
 * check-in → report → events, and the check-in's `auftraege` against the catalog listing
 * after changes at every level of the override resolution.
 */
import { describe, expect, it } from 'vitest';
import { activateDevice, resolveDevice } from '../support/activation.ts';
import { useTestApp, writeHeartbeats } from '../support/app.ts';
import { bootstrapAgent, checkin, report } from '../support/agent.ts';
import { createOrganization } from '../support/builders.ts';

const ctx = useTestApp();

async function ok(method: string, path: string, body?: unknown) {
  const res = await ctx.request(method, path, { body });
  expect(res.status, `${method} ${path}: ${JSON.stringify(res.body)}`).toBeLessThan(300);
  return res.body;
}

/** The catalog listing's states, in the check-in's shape (with each Merkmal's Debian role from the seed). */
async function catalogStates(deviceId: string) {
  const res = await ctx.request('GET', `/api/v1/devices/${deviceId}/catalog`);
  expect(res.status).toBe(200);
  const roles = await ctx.sql<{ merkmal: string; ansible_role: string }[]>`
    select merkmal, ansible_role from blueprints where backend = 'debian'`;
  const roleOf = new Map(roles.map((r) => [r.merkmal, r.ansible_role]));
  return res.body.items.map((i: { merkmal: string; state: string; optionen: unknown }) => ({
    merkmal: i.merkmal,
    ansible_role: roleOf.get(i.merkmal),
    state: i.state,
    optionen: i.optionen,
  }));
}

describe('the agent over HTTP', () => {
  it('goes activate → resolve → bootstrap → check-in → report → events, and the secret never shows again', async () => {
    const org = await createOrganization(ctx);
    const activated = await activateDevice(ctx, org.id);
    const blueprint = await resolveDevice(ctx, { code: activated.code, device_id: activated.device_id });
    expect(blueprint.agent.device_id).toBe(activated.device_id);

    const secret = await bootstrapAgent(ctx, blueprint.agent, { cpu: 'Intel Core i5', memory_mb: 16384 });
    const seen: unknown[] = [];

    const first = await checkin(ctx, secret, { agent_version: '1.0.0' });
    expect(first.status).toBe(200);
    expect(first.body.device_id).toBe(activated.device_id);
    expect(first.body.blueprints).toEqual(blueprint.blueprints);
    expect(first.body.auftraege).toEqual(await catalogStates(activated.device_id));
    seen.push(first.body);

    const selected = await ok('POST', `/api/v1/devices/${activated.device_id}/catalog/libreoffice/select`, {
      optionen: { sprache: 'de' },
    });
    seen.push(selected);
    const second = await checkin(ctx, secret);
    expect(second.body.auftraege).toContainEqual({
      merkmal: 'libreoffice',
      ansible_role: 'libreoffice',
      state: 'present',
      optionen: { sprache: 'de' },
    });
    seen.push(second.body);

    const reported = await report(ctx, secret, [
      { merkmal: 'libreoffice', event: 'applied', detail: 'libreoffice 7.4 installed' },
      { merkmal: 'firefox', event: 'applied' },
    ]);
    expect(reported.status).toBe(200);
    expect(reported.body).toEqual({ accepted: 2 });
    seen.push(reported.body);

    const events = await ctx.request('GET', `/api/v1/devices/${activated.device_id}/events`);
    expect(events.status).toBe(200);
    seen.push(events.body);
    const byType = events.body.items.map((e: { merkmal: string; type: string }) => `${e.type}:${e.merkmal}`);
    expect(byType).toEqual(expect.arrayContaining(['selected:libreoffice', 'applied:libreoffice', 'applied:firefox']));
    // Newest first: the agent's reports came after the selection.
    expect(byType.indexOf('selected:libreoffice')).toBe(byType.length - 1);
    expect(
      events.body.items.find(
        (e: { type: string; merkmal: string }) => e.type === 'applied' && e.merkmal === 'libreoffice',
      ).payload,
    ).toEqual({
      detail: 'libreoffice 7.4 installed',
    });

    await writeHeartbeats(ctx);
    const device = await ok('GET', `/api/v1/devices/${activated.device_id}`);
    expect(device.agent_secret_issued_at).not.toBeNull();
    expect(device.agent_last_checkin).not.toBeNull();
    seen.push(device);
    seen.push(await ok('GET', `/api/v1/devices/${activated.device_id}/hardware`));
    seen.push(await ok('GET', `/api/v1/organizations/${org.id}/devices`));

    for (const body of seen) expect(JSON.stringify(body)).not.toContain(secret);
  });

  it("answers the catalog listing's states at check-in after changes at every level", async () => {
    const org = await createOrganization(ctx);
    const top = await ok('POST', `/api/v1/organizations/${org.id}/org-units`, { name: 'Verwaltung' });
    const mid = await ok('POST', `/api/v1/organizations/${org.id}/org-units`, { name: 'Bauamt', parent_id: top.id });
    const leaf = await ok('POST', `/api/v1/organizations/${org.id}/org-units`, {
      name: 'Vermessung',
      parent_id: mid.id,
    });
    const groups = [];
    for (const name of ['GIS', 'Schulung', 'Leitung'])
      groups.push(await ok('POST', `/api/v1/organizations/${org.id}/groups`, { name }));

    const activated = await activateDevice(ctx, org.id);
    const secret = await bootstrapAgent(
      ctx,
      (await resolveDevice(ctx, { code: activated.code, device_id: activated.device_id })).agent,
    );
    const id = activated.device_id;
    await ok('PUT', `/api/v1/devices/${id}/org-unit`, { oe_id: leaf.id });
    for (const g of groups) await ok('PUT', `/api/v1/groups/${g.id}/devices/${id}`);

    const steps: Array<[string, string, unknown?]> = [
      ['POST', `/api/v1/org-units/${top.id}/catalog/libreoffice/select`, { optionen: { edition: 'fresh' } }],
      ['POST', `/api/v1/org-units/${mid.id}/catalog/firefox/deselect`],
      ['POST', `/api/v1/org-units/${leaf.id}/catalog/qgis/select`, { optionen: { plugins: ['alkis'] } }],
      ['POST', `/api/v1/org-units/${org.default_oe_id}/catalog/gastsitzung/select`], // not on the device's chain
      ['POST', `/api/v1/groups/${groups[0].id}/catalog/gastsitzung/select`, { optionen: { dauer_min: 30 } }],
      ['POST', `/api/v1/groups/${groups[1].id}/catalog/qgis/deselect`],
      ['POST', `/api/v1/groups/${groups[2].id}/catalog/qgis/deselect`], // a second group on the same side
      ['POST', `/api/v1/groups/${groups[1].id}/catalog/firefox/select`], // one group against an org unit's deselect
      ['POST', `/api/v1/devices/${id}/catalog/onlyoffice/select`, { optionen: { lizenz: 'A-17' } }],
      ['POST', `/api/v1/devices/${id}/catalog/libreoffice/deselect`],
      ['DELETE', `/api/v1/groups/${groups[2].id}/catalog/qgis`],
      ['DELETE', `/api/v1/devices/${id}/catalog/libreoffice`],
      ['DELETE', `/api/v1/org-units/${mid.id}/catalog/firefox`],
    ];
    const before = (await checkin(ctx, secret)).body.auftraege;
    expect(before).toEqual(await catalogStates(id));
    const history = [JSON.stringify(before)];
    for (const [method, path, body] of steps) {
      await ok(method, path, body);
      const res = await checkin(ctx, secret);
      expect(res.status).toBe(200);
      expect(res.body.auftraege, `after ${method} ${path}`).toEqual(await catalogStates(id));
      history.push(JSON.stringify(res.body.auftraege));
    }
    // The changes did change the answer along the way (the comparison above is not vacuous).
    expect(new Set(history).size).toBeGreaterThan(6);
    const final = (await checkin(ctx, secret)).body.auftraege;
    expect(final).toEqual([
      { merkmal: 'firefox', ansible_role: 'firefox', state: 'present', optionen: {} },
      { merkmal: 'gastsitzung', ansible_role: 'guest_session', state: 'present', optionen: { dauer_min: 30 } },
      { merkmal: 'libreoffice', ansible_role: 'libreoffice', state: 'present', optionen: { edition: 'fresh' } },
      { merkmal: 'onlyoffice', ansible_role: 'onlyoffice', state: 'present', optionen: { lizenz: 'A-17' } },
      { merkmal: 'qgis', ansible_role: 'qgis', state: 'absent', optionen: {} }, // one group's deselect outvotes the leaf unit
    ]);
  });
});
