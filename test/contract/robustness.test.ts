/**
 * Black-box robustness against the conventions of api/README.md: odd but well-formed input is a 4xx with the
 * API's error body, never a 500; every collection endpoint pages the same way; ids are
 * UUIDs in any letter case; the bearer scheme is case-insensitive.
 */
import { Buffer } from 'node:buffer';
import { describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { activateDevice, createEnrollmentSession, resolveDevice, TEMPLATES } from '../support/activation.ts';
import { checkin, enrollAgent, report } from '../support/agent.ts';
import { countRows } from '../support/db.ts';
import { addToGroup, insertDevice, insertGroup, insertOrgUnit } from '../support/devices.ts';

const ctx = useTestApp();

const cursorOf = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

function expectError(res: { status: number; body: any }, status: number, code: string) {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.body.error).toBe(code);
  expect(typeof res.body.message).toBe('string');
}

/** Every collection endpoint of the contract, over one organization with one of everything. */
async function collectionPaths() {
  const org = await createOrganization(ctx);
  const device = await insertDevice(ctx.sql, { organizationId: org.id });
  const group = await insertGroup(ctx.sql, org.id);
  await addToGroup(ctx.sql, group, device.id);
  return [
    '/api/v1/organizations',
    '/api/v1/templates',
    `/api/v1/organizations/${org.id}/devices`,
    `/api/v1/organizations/${org.id}/enrollment-sessions`,
    `/api/v1/organizations/${org.id}/org-units`,
    `/api/v1/organizations/${org.id}/groups`,
    `/api/v1/organizations/${org.id}/iso-builds`,
    `/api/v1/groups/${group}/devices`,
    `/api/v1/devices/${device.id}/events`,
  ];
}

describe('collections', () => {
  it('answer { items, next_cursor } and take limit 1 and 500', async () => {
    for (const path of await collectionPaths()) {
      for (const limit of [1, 500]) {
        const res = await ctx.request('GET', `${path}?limit=${limit}`);
        expect(res.status, path).toBe(200);
        // Both device lists (an organization's, a group's) can be walked back too (their prev_cursor).
        const keys = /\/(organizations|groups)\/[^/]+\/devices$/.test(path)
          ? ['items', 'next_cursor', 'prev_cursor']
          : ['items', 'next_cursor'];
        expect(Object.keys(res.body).sort(), path).toEqual(keys);
        expect(Array.isArray(res.body.items)).toBe(true);
      }
    }
  });

  it('reject a limit out of range or not a number with 400 on every collection', async () => {
    for (const path of await collectionPaths()) {
      for (const query of [
        'limit=0',
        'limit=501',
        'limit=-1',
        'limit=1.5',
        'limit=',
        'limit=abc',
        'limit=1e400',
        'limit=1&limit=2',
        'cursor=a&cursor=b',
      ]) {
        expectError(await ctx.request('GET', `${path}?${query}`), 400, 'invalid_request');
      }
    }
  });

  it('reject forged cursors with 400, never 500 (bad id, out-of-range or loose time, wrong shape, over-long)', async () => {
    const forged = {
      'id of dashes': cursorOf(['2026-01-01T00:00:00.000Z', '-'.repeat(36)]),
      'id not hex': cursorOf(['2026-01-01T00:00:00.000Z', 'zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz']),
      'time far in the past': cursorOf(['-200000-01-01T00:00:00.000Z', crypto.randomUUID()]),
      'time far in the future': cursorOf(['+200000-01-01T00:00:00.000Z', crypto.randomUUID()]),
      'time of year 0': cursorOf(['0000-01-01T00:00:00.000Z', crypto.randomUUID()]),
      'time not ISO': cursorOf(['2', crypto.randomUUID()]),
      'time as a number': cursorOf([1, crypto.randomUUID()]),
      'an object': cursorOf({ created_at: '2026-01-01T00:00:00.000Z' }),
      null: cursorOf(null),
      'over-long': 'A'.repeat(10_000),
    };
    for (const path of await collectionPaths()) {
      for (const [what, cursor] of Object.entries(forged)) {
        const res = await ctx.request('GET', `${path}?cursor=${cursor}`);
        expect(res.status, `${path}: ${what}`).toBe(400);
        expect(res.body.error).toBe('invalid_request');
      }
    }
  });

  it('still accept their own next_cursor', async () => {
    const org = await createOrganization(ctx);
    await insertOrgUnit(ctx.sql, org.id, 'A');
    const first = await ctx.request('GET', `/api/v1/organizations/${org.id}/org-units?limit=1`);
    expect(first.body.next_cursor).toEqual(expect.any(String));
    const second = await ctx.request(
      'GET',
      `/api/v1/organizations/${org.id}/org-units?limit=1&cursor=${first.body.next_cursor}`,
    );
    expect(second.status).toBe(200);
    expect(second.body.items[0].name).toBe('A');
    expect(second.body.next_cursor).toBeNull();
  });
});

describe('NUL characters (valid JSON that PostgreSQL cannot store)', () => {
  it('are 400 invalid_request in admin bodies, and nothing is written', async () => {
    const org = await createOrganization(ctx);
    const before = await Promise.all(['organizations', 'org_units', 'groups'].map((t) => countRows(ctx.sql, t)));
    expectError(
      await ctx.request('POST', '/api/v1/organizations', { body: { name: 'Stadt\u0000' } }),
      400,
      'invalid_request',
    );
    expectError(
      await ctx.request('POST', '/api/v1/organizations', { body: { name: 'Stadt', kontakt_name: 'a\u0000b' } }),
      400,
      'invalid_request',
    );
    expectError(
      await ctx.request('PATCH', `/api/v1/organizations/${org.id}`, { body: { notizen: 'a\u0000b' } }),
      400,
      'invalid_request',
    );
    expectError(
      await ctx.request('POST', `/api/v1/organizations/${org.id}/org-units`, { body: { name: 'a\u0000b' } }),
      400,
      'invalid_request',
    );
    expectError(
      await ctx.request('POST', `/api/v1/organizations/${org.id}/groups`, { body: { name: 'a\u0000b' } }),
      400,
      'invalid_request',
    );
    const after = await Promise.all(['organizations', 'org_units', 'groups'].map((t) => countRows(ctx.sql, t)));
    expect(after).toEqual(before);
    expect((await ctx.request('GET', `/api/v1/organizations/${org.id}`)).body.notizen).toBeNull();
  });

  it('are 400 in JSON objects: activation hardware, selection optionen, check-in hardware, report detail', async () => {
    const org = await createOrganization(ctx);
    const code = (await ctx.request('GET', `/api/v1/organizations/${org.id}/activation-code`)).body.code;
    const devices = await countRows(ctx.sql, 'devices');
    for (const hardware of [{ cpu: 'a\u0000b' }, { 'c\u0000pu': 1 }]) {
      expectError(
        await ctx.request('POST', '/api/v1/activate', { token: null, body: { code, serial: 'NUL-1', hardware } }),
        400,
        'invalid_request',
      );
    }
    expect(await countRows(ctx.sql, 'devices')).toBe(devices);

    const agent = await enrollAgent(ctx, { organizationId: org.id });
    expectError(
      await ctx.request('POST', `/api/v1/devices/${agent.device_id}/catalog/qgis/select`, {
        body: { optionen: { sprache: 'de\u0000' } },
      }),
      400,
      'invalid_request',
    );
    expectError(
      await ctx.request('POST', `/api/v1/devices/${agent.device_id}/catalog/qg%00is/select`),
      400,
      'invalid_request',
    );
    expectError(await checkin(ctx, agent.secret, { hardware: { cpu: 'a\u0000b' } }), 400, 'invalid_request');
    expectError(
      await report(ctx, agent.secret, [{ merkmal: 'firefox', event: 'applied', detail: 'exit\u0000' }]),
      400,
      'invalid_request',
    );
    expectError(
      await report(ctx, agent.secret, [{ merkmal: 'fire\u0000fox', event: 'applied' }]),
      400,
      'invalid_request',
    );
    const [written] = await ctx.sql<{ events: number; selections: number }[]>`
      select (select count(*)::int from device_merkmal_events where device_id = ${agent.device_id}) as events,
             (select count(*)::int from device_merkmale where device_id = ${agent.device_id}) as selections`;
    expect(written).toEqual({ events: 0, selections: 0 });
  });
});

describe('UUIDs in upper case', () => {
  it('name the same resources when organizations, org units and groups are combined', async () => {
    const org = await createOrganization(ctx);
    const ORG = org.id.toUpperCase();
    const unit = await insertOrgUnit(ctx.sql, org.id, 'Schule');
    const group = await insertGroup(ctx.sql, org.id);
    const device = await insertDevice(ctx.sql, { organizationId: org.id, oeId: unit });
    await addToGroup(ctx.sql, group, device.id);

    const child = await ctx.request('POST', `/api/v1/organizations/${ORG}/org-units`, {
      body: { name: 'Klasse', parent_id: unit.toUpperCase() },
    });
    expect(child.status, JSON.stringify(child.body)).toBe(201);
    expect(child.body).toMatchObject({ organization_id: org.id, parent_id: unit });

    for (const query of [`oe_id=${unit.toUpperCase()}`, `group_id=${group.toUpperCase()}`]) {
      const list = await ctx.request('GET', `/api/v1/organizations/${ORG}/devices?${query}`);
      expect(list.status, JSON.stringify(list.body)).toBe(200);
      expect(list.body.items.map((d: { id: string }) => d.id)).toEqual([device.id]);
    }

    const self = await ctx.request('PATCH', `/api/v1/org-units/${unit}`, { body: { parent_id: unit.toUpperCase() } });
    expectError(self, 409, 'org_unit_cycle');
    expect(self.body.message).toContain('the unit itself');
  });

  it('come back in lower case from the installer and agent handshake', async () => {
    const org = await createOrganization(ctx);
    const activated = await activateDevice(ctx, org.id);
    const blueprint = await resolveDevice(ctx, { code: activated.code, device_id: activated.device_id.toUpperCase() });
    expect(blueprint.device_id).toBe(activated.device_id);
    const res = await ctx.request('POST', '/api/v1/agent/bootstrap', {
      token: null,
      body: { device_id: activated.device_id.toUpperCase(), bootstrap_token: blueprint.agent.bootstrap_token },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.device_id).toBe(activated.device_id);
  });
});

describe('enrollment session expiry', () => {
  it('refuses an expires_at past the year 9999 in UTC (offset -14:00) with 400, writing nothing', async () => {
    const org = await createOrganization(ctx);
    const res = await ctx.request('POST', `/api/v1/organizations/${org.id}/enrollment-sessions`, {
      body: { template_id: TEMPLATES.debianStandard, max_devices: 1, expires_at: '9999-12-31T23:59:59.999-14:00' },
    });
    expectError(res, 400, 'invalid_request');
    const list = await ctx.request('GET', `/api/v1/organizations/${org.id}/enrollment-sessions`);
    expect(list.status).toBe(200);
    expect(list.body.items).toEqual([]);
  });

  it('accepts the last instant of 9999 and shows it as ISO 8601 with milliseconds', async () => {
    const org = await createOrganization(ctx);
    const session = await createEnrollmentSession(ctx, org.id, { expires_at: '9999-12-31T23:59:59.999Z' });
    expect(session.expires_at).toBe('9999-12-31T23:59:59.999Z');
    expect((await ctx.request('GET', `/api/v1/enrollment-sessions/${session.id}`)).body.expires_at).toBe(
      '9999-12-31T23:59:59.999Z',
    );
  });
});

describe('bearer scheme', () => {
  it('is case-insensitive for the admin token and the agent secret', async () => {
    const agent = await enrollAgent(ctx);
    for (const scheme of ['bearer', 'BEARER', 'Bearer']) {
      const admin = await ctx.request('GET', `/api/v1/devices/${agent.device_id}`, {
        token: null,
        headers: { authorization: `${scheme} ${ctx.config.adminToken}` },
      });
      expect(admin.status, scheme).toBe(200);
      const res = await ctx.request('POST', '/api/v1/agent/checkin', {
        token: null,
        headers: { authorization: `${scheme} ${agent.secret}` },
      });
      expect(res.status, scheme).toBe(200);
    }
    expectError(
      await ctx.request('GET', '/api/v1/organizations', {
        token: null,
        headers: { authorization: `Token ${ctx.config.adminToken}` },
      }),
      401,
      'unauthorized',
    );
  });
});

describe('bodies and path ids of every shape', () => {
  it('answer 400 invalid_request to a JSON body that is not an object, on every endpoint that takes one', async () => {
    const org = await createOrganization(ctx);
    const unit = await insertOrgUnit(ctx.sql, org.id, 'A');
    const group = await insertGroup(ctx.sql, org.id);
    const device = await insertDevice(ctx.sql, { organizationId: org.id });
    const agent = await enrollAgent(ctx);
    const admin = undefined; // the default: the admin token
    const endpoints: Array<[string, string, string | null | undefined]> = [
      ['POST', '/api/v1/organizations', admin],
      ['PATCH', `/api/v1/organizations/${org.id}`, admin],
      ['POST', `/api/v1/organizations/${org.id}/enrollment-sessions`, admin],
      ['POST', `/api/v1/organizations/${org.id}/org-units`, admin],
      ['PATCH', `/api/v1/org-units/${unit}`, admin],
      ['POST', `/api/v1/organizations/${org.id}/groups`, admin],
      ['PATCH', `/api/v1/groups/${group}`, admin],
      ['PUT', `/api/v1/devices/${device.id}/org-unit`, admin],
      ['POST', `/api/v1/organizations/${org.id}/iso-builds`, admin],
      ['POST', `/api/v1/devices/${device.id}/catalog/libreoffice/select`, admin],
      ['POST', `/api/v1/org-units/${unit}/catalog/libreoffice/deselect`, admin],
      ['POST', '/api/v1/activate', null],
      ['POST', `/api/v1/templates/${TEMPLATES.debianStandard}/resolve`, null],
      ['POST', '/api/v1/agent/bootstrap', null],
      ['POST', '/api/v1/agent/checkin', agent.secret],
      ['POST', '/api/v1/agent/report', agent.secret],
    ];
    for (const [method, path, token] of endpoints) {
      for (const raw of ['null', '[]', '[{}]', '"x"', '42', 'true']) {
        const res = await ctx.request(method, path, {
          token,
          rawBody: raw,
          headers: { 'content-type': 'application/json' },
        });
        expect(res.status, `${method} ${path} ${raw}: ${JSON.stringify(res.body)}`).toBe(400);
        expect(res.body.error).toBe('invalid_request');
      }
    }
    expect(await countRows(ctx.sql, 'iso_builds')).toBe(0);
  });

  it('answer 404 not_found to a path id that is not a UUID, on every endpoint with one', async () => {
    const org = await createOrganization(ctx);
    const uuid = crypto.randomUUID();
    const paths: Array<[string, string, unknown]> = [
      ['GET', '/api/v1/organizations/X', undefined],
      ['PATCH', '/api/v1/organizations/X', {}],
      ['GET', '/api/v1/organizations/X/activation-code', undefined],
      ['POST', '/api/v1/organizations/X/activation-code/rotate', undefined],
      ['GET', '/api/v1/organizations/X/devices', undefined],
      ['GET', '/api/v1/organizations/X/enrollment-sessions', undefined],
      [
        'POST',
        '/api/v1/organizations/X/enrollment-sessions',
        { template_id: TEMPLATES.debianStandard, max_devices: 1, expires_at: '2099-01-01T00:00:00Z' },
      ],
      ['GET', '/api/v1/organizations/X/org-units', undefined],
      ['POST', '/api/v1/organizations/X/org-units', { name: 'A' }],
      ['GET', '/api/v1/organizations/X/groups', undefined],
      ['POST', '/api/v1/organizations/X/groups', { name: 'A' }],
      ['GET', '/api/v1/organizations/X/iso-builds', undefined],
      ['POST', '/api/v1/organizations/X/iso-builds', undefined],
      ['GET', '/api/v1/templates/X', undefined],
      ['GET', '/api/v1/enrollment-sessions/X', undefined],
      ['POST', '/api/v1/enrollment-sessions/X/revoke', undefined],
      ['GET', '/api/v1/devices/X', undefined],
      ['GET', '/api/v1/devices/X/hardware', undefined],
      ['GET', '/api/v1/devices/X/events', undefined],
      ['GET', '/api/v1/devices/X/catalog', undefined],
      ['POST', '/api/v1/devices/X/deprovision', undefined],
      ['POST', '/api/v1/devices/X/reprovision', undefined],
      ['POST', '/api/v1/devices/X/archive', undefined],
      ['PUT', '/api/v1/devices/X/org-unit', { oe_id: org.default_oe_id }],
      ['POST', '/api/v1/devices/X/catalog/libreoffice/select', undefined],
      ['DELETE', '/api/v1/devices/X/catalog/libreoffice', undefined],
      ['GET', '/api/v1/org-units/X', undefined],
      ['PATCH', '/api/v1/org-units/X', {}],
      ['DELETE', '/api/v1/org-units/X', undefined],
      ['GET', '/api/v1/org-units/X/catalog', undefined],
      ['POST', '/api/v1/org-units/X/catalog/libreoffice/deselect', undefined],
      ['GET', '/api/v1/groups/X', undefined],
      ['PATCH', '/api/v1/groups/X', {}],
      ['DELETE', '/api/v1/groups/X', undefined],
      ['GET', '/api/v1/groups/X/devices', undefined],
      ['PUT', `/api/v1/groups/X/devices/${uuid}`, undefined],
      ['DELETE', `/api/v1/groups/${uuid}/devices/X`, undefined],
      ['GET', '/api/v1/groups/X/catalog', undefined],
      ['GET', '/api/v1/iso-builds/X', undefined],
      ['GET', '/api/v1/iso-builds/X/download', undefined],
      ['POST', '/api/v1/templates/X/resolve', { code: 'AAAAA-AAAAA-AAAAA-AAAAA', device_id: uuid }],
    ];
    for (const bad of ['nope', '123', `{${uuid}}`, uuid.replace(/-/g, ''), `${uuid}0`, `${uuid.slice(0, 35)}g`]) {
      for (const [method, path, body] of paths) {
        const res = await ctx.request(method, path.replace('X', encodeURIComponent(bad)), {
          body,
          token: path.endsWith('/resolve') ? null : undefined,
        });
        expect(res.status, `${method} ${path} with ${bad}: ${JSON.stringify(res.body)}`).toBe(404);
        expect(res.body.error).toBe('not_found');
      }
    }
  });
});
