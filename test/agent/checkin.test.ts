import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { TEMPLATES } from '../support/activation.ts';
import { ADMIN_TOKEN, request, testApp, useTestApp } from '../support/app.ts';
import { checkin, enrollAgent, lastCheckinOf, unknownSecret } from '../support/agent.ts';

const ctx = useTestApp({ roleRepositoryUrl: 'https://roles.test/fleet.git', agentPollIntervalSeconds: 120 });

const standardBlueprints = [
  { merkmal: 'basis', ansible_role: 'base' },
  { merkmal: 'desktop', ansible_role: 'desktop' },
  { merkmal: 'firefox', ansible_role: 'firefox' },
  { merkmal: 'provisioning-agent', ansible_role: 'provisioning_agent' },
];

const defaultAuftraege = [
  { merkmal: 'firefox', ansible_role: 'firefox', state: 'present', optionen: {} },
  { merkmal: 'gastsitzung', ansible_role: 'guest_session', state: 'absent', optionen: {} },
  { merkmal: 'libreoffice', ansible_role: 'libreoffice', state: 'absent', optionen: {} },
  { merkmal: 'onlyoffice', ansible_role: 'onlyoffice', state: 'absent', optionen: {} },
  { merkmal: 'qgis', ansible_role: 'qgis', state: 'absent', optionen: {} },
];

async function lastCheckin(deviceId: string): Promise<Date | null> {
  return lastCheckinOf(ctx, deviceId);
}

async function storedHardware(deviceId: string) {
  const [row] = await ctx.sql`select hardware, reported_at from device_hardware where device_id = ${deviceId}`;
  return row ?? null;
}

describe('POST /api/v1/agent/checkin', () => {
  it('answers the contract response: blueprints, repository, poll interval and the full order state', async () => {
    const agent = await enrollAgent(ctx);
    const res = await checkin(ctx, agent.secret);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      device_id: agent.device_id,
      blueprints: standardBlueprints,
      repository_url: 'https://roles.test/fleet.git',
      poll_interval_seconds: 120,
      auftraege: defaultAuftraege,
      inventory_refresh_hours: 6,
      disk_key_rotation: null,
      actions: [],
    });
    // The same blueprints the Runtime Blueprint gave the installer.
    expect(res.body.blueprints).toEqual(agent.blueprint.blueprints);
    expect(JSON.stringify(res.body)).not.toContain(agent.secret);
  });

  it("resolves the blueprints for the device's assigned backend", async () => {
    const agent = await enrollAgent(ctx, { templateId: TEMPLATES.ubuntuStandard });
    const res = await checkin(ctx, agent.secret);
    expect(res.status).toBe(200);
    expect(res.body.blueprints).toEqual(agent.blueprint.blueprints);
    const [device] = await ctx.sql`select backend from device_templates where device_id = ${agent.device_id}`;
    expect(device!.backend).toBe('ubuntu');
  });

  it('sets agent_last_checkin on every check-in', async () => {
    const agent = await enrollAgent(ctx);
    expect(await lastCheckin(agent.device_id)).toBeNull();
    await checkin(ctx, agent.secret);
    const first = await lastCheckin(agent.device_id);
    expect(first).toBeInstanceOf(Date);
    await new Promise((r) => setTimeout(r, 5));
    await checkin(ctx, agent.secret);
    const second = await lastCheckin(agent.device_id);
    expect(second!.getTime()).toBeGreaterThan(first!.getTime());
    const device = await ctx.request('GET', `/api/v1/devices/${agent.device_id}`);
    expect(device.body.agent_last_checkin).toBe(second!.toISOString());
  });

  it.each([
    ['no body and no Content-Type', {}],
    ['an empty body with a JSON Content-Type', { rawBody: '', headers: { 'content-type': 'application/json' } }],
    ['whitespace only with a JSON Content-Type', { rawBody: '  \n', headers: { 'content-type': 'application/json' } }],
    ['{}', { body: {} }],
    ['only agent_version', { body: { agent_version: '1.4.2' } }],
  ])('accepts %s', async (_case, options) => {
    const agent = await enrollAgent(ctx);
    const res = await ctx.request('POST', '/api/v1/agent/checkin', { token: agent.secret, ...options });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.auftraege).toEqual(defaultAuftraege);
    expect(await lastCheckin(agent.device_id)).not.toBeNull();
  });

  it('replaces the stored hardware when sent and keeps it when not', async () => {
    const agent = await enrollAgent(ctx);
    await checkin(ctx, agent.secret, { hardware: { cpu: 'i5', disks: [{ size_gb: 256 }] } });
    expect((await storedHardware(agent.device_id))!.hardware).toEqual({ cpu: 'i5', disks: [{ size_gb: 256 }] });
    await checkin(ctx, agent.secret, { hardware: { cpu: 'i7' }, agent_version: '2.0' });
    const replaced = await storedHardware(agent.device_id);
    expect(replaced!.hardware).toEqual({ cpu: 'i7' });
    await checkin(ctx, agent.secret);
    expect(await storedHardware(agent.device_id)).toEqual(replaced);

    const hw = await ctx.request('GET', `/api/v1/devices/${agent.device_id}/hardware`);
    expect(hw.body).toEqual({
      device_id: agent.device_id,
      hardware: { cpu: 'i7' },
      reported_at: replaced!.reported_at.toISOString(),
    });
  });

  it("keeps the agent version as the device's agent_version, writing the device row only when it changed", async () => {
    const agent = await enrollAgent(ctx);
    // xmin moves with every write of the row: the same xmin is no write at all.
    const row = async () => {
      const [r] = await ctx.sql`select agent_version, xmin::text as xmin from devices where id = ${agent.device_id}`;
      return r!;
    };
    const deviceVersion = async () =>
      (await ctx.request('GET', `/api/v1/devices/${agent.device_id}`)).body.agent_version as string | null;
    expect(await deviceVersion()).toBeNull();

    await checkin(ctx, agent.secret, { hardware: { cpu: 'i5' }, agent_version: '1.0.0' });
    const first = await row();
    expect(first.agent_version).toBe('1.0.0');
    expect(await deviceVersion()).toBe('1.0.0');

    // The same version, with and without hardware, and no version at all: the row is not written.
    for (const body of [{ agent_version: '1.0.0' }, { hardware: { cpu: 'i7' }, agent_version: '1.0.0' }, {}]) {
      expect((await checkin(ctx, agent.secret, body)).status).toBe(200);
      expect(await row()).toEqual(first);
    }
    expect((await storedHardware(agent.device_id))!.hardware).toEqual({ cpu: 'i7' });

    // A changed version without hardware is written by itself.
    await checkin(ctx, agent.secret, { agent_version: '1.1.0' });
    const second = await row();
    expect(second.agent_version).toBe('1.1.0');
    expect(second.xmin).not.toBe(first.xmin);
    expect(await deviceVersion()).toBe('1.1.0');
    await checkin(ctx, agent.secret, { hardware: { cpu: 'i9' }, agent_version: '1.2.0' });
    expect((await row()).agent_version).toBe('1.2.0');
  });

  it('takes both the agent version and the host name of one hardware report', async () => {
    const agent = await enrollAgent(ctx);
    await checkin(ctx, agent.secret, { hardware: { hostname: 'beide-001' }, agent_version: '2.0.0' });
    const [r] = await ctx.sql`select hostname, agent_version from devices where id = ${agent.device_id}`;
    expect(r).toEqual({ hostname: 'beide-001', agent_version: '2.0.0' });
  });

  it("takes the device's host name from the hardware report, keeps it when absent or malformed, never from a hardware-less check-in", async () => {
    const agent = await enrollAgent(ctx);
    const hostname = async () =>
      (await ctx.sql`select hostname from devices where id = ${agent.device_id}`)[0]!.hostname as string | null;
    expect(await hostname()).toBeNull();
    await checkin(ctx, agent.secret, { hardware: { cpu: 'i5', hostname: 'arbeitsplatz-017' } });
    expect(await hostname()).toBe('arbeitsplatz-017');
    const device = await ctx.request('GET', `/api/v1/devices/${agent.device_id}`);
    expect(device.body.hostname).toBe('arbeitsplatz-017');
    for (const hardware of [
      { cpu: 'i5' },
      { hostname: '-bad name' },
      { hostname: 42 },
      { hostname: 'x'.repeat(254) },
    ]) {
      expect((await checkin(ctx, agent.secret, { hardware })).status).toBe(200);
      expect(await hostname(), JSON.stringify(hardware)).toBe('arbeitsplatz-017');
    }
    await checkin(ctx, agent.secret, { hardware: { hostname: 'raum-2.schule.example' } });
    expect(await hostname()).toBe('raum-2.schule.example');
    await checkin(ctx, agent.secret, {});
    expect(await hostname()).toBe('raum-2.schule.example');

    // A deprovisioned device's report changes nothing (its check-in is refused).
    await ctx.request('POST', `/api/v1/devices/${agent.device_id}/deprovision`);
    expect((await checkin(ctx, agent.secret, { hardware: { hostname: 'spaeter' } })).status).toBe(403);
    expect(await hostname()).toBe('raum-2.schule.example');
  });

  it('accepts hardware of exactly 64 KiB and rejects one byte more with 400, writing nothing', async () => {
    const agent = await enrollAgent(ctx);
    const overhead = JSON.stringify({ blob: '' }).length;
    const fits = { blob: 'x'.repeat(64 * 1024 - overhead) };
    expect((await checkin(ctx, agent.secret, { hardware: fits })).status).toBe(200);
    const stored = await storedHardware(agent.device_id);
    const heartbeat = await lastCheckin(agent.device_id);

    const res = await checkin(ctx, agent.secret, { hardware: { blob: 'x'.repeat(64 * 1024 - overhead + 1) } });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request');
    expect(await storedHardware(agent.device_id)).toEqual(stored);
    expect(await lastCheckin(agent.device_id)).toEqual(heartbeat);
  });

  it.each([
    ['hardware that is an array', { body: { hardware: [1] } }],
    ['hardware that is a string', { body: { hardware: 'x' } }],
    ['an unknown field', { body: { agent_secret_hash: 'aa' } }],
    ['a JSON array body', { body: [] }],
    ['malformed JSON', { rawBody: '{"hardware":', headers: { 'content-type': 'application/json' } }],
  ])('rejects %s with 400 invalid_request and writes nothing', async (_case, options) => {
    const agent = await enrollAgent(ctx);
    const res = await ctx.request('POST', '/api/v1/agent/checkin', { token: agent.secret, ...options });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request');
    expect(await lastCheckin(agent.device_id)).toBeNull();
    expect(await storedHardware(agent.device_id)).toBeNull();
  });

  // The answers of the body's checks, pinned (a body without any Content-Type needs raw HTTP:
  // a web Request calls a string body text/plain, test/http/body_over_node.test.ts).
  it.each([
    [
      'a JSON body sent as text/plain',
      { rawBody: '{}', headers: { 'content-type': 'text/plain' } },
      'the request body must be application/json',
    ],
    [
      'a media type that only starts like JSON',
      { rawBody: '{}', headers: { 'content-type': 'application/jsonx' } },
      'the request body must be application/json',
    ],
    [
      'an empty Content-Type',
      { rawBody: '', headers: { 'content-type': '' } },
      'the request body must be application/json',
    ],
    [
      'malformed JSON',
      { rawBody: '{"hardware":', headers: { 'content-type': 'application/json' } },
      'the request body is not valid JSON',
    ],
    [
      'malformed JSON with a charset',
      { rawBody: 'nope', headers: { 'content-type': 'application/json; charset=utf-8' } },
      'the request body is not valid JSON',
    ],
  ])('answers %s with 400 invalid_request and its message', async (_case, options, message) => {
    const agent = await enrollAgent(ctx);
    const res = await ctx.request('POST', '/api/v1/agent/checkin', { token: agent.secret, ...options });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'invalid_request', message });
    expect(await lastCheckin(agent.device_id)).toBeNull();
  });

  it.each([
    ['application/json; charset=utf-8', '{"agent_version":"1.0"}'],
    ['application/merge-patch+json', '{}'],
    ['APPLICATION/JSON', '{}'],
  ])('accepts a body sent as %s', async (contentType, rawBody) => {
    const agent = await enrollAgent(ctx);
    const res = await ctx.request('POST', '/api/v1/agent/checkin', {
      token: agent.secret,
      rawBody,
      headers: { 'content-type': contentType },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  });

  it('rejects an If-None-Match longer than 1,000 characters with 400 naming the header, and writes nothing', async () => {
    const agent = await enrollAgent(ctx);
    const tooLong = `"${'a'.repeat(999)}"`; // 1,001 characters
    const res = await ctx.request('POST', '/api/v1/agent/checkin', {
      token: agent.secret,
      headers: { 'if-none-match': tooLong },
      body: { hardware: { cpu: 'i9' } },
    });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request');
    expect(res.body.details).toEqual([{ path: ['if-none-match'], message: expect.any(String) }]);
    expect(await lastCheckin(agent.device_id)).toBeNull();
    expect(await storedHardware(agent.device_id)).toBeNull();
    // One character less is a tag like any other: it matches nothing, so the full answer.
    const fits = await ctx.request('POST', '/api/v1/agent/checkin', {
      token: agent.secret,
      headers: { 'if-none-match': tooLong.slice(1) },
    });
    expect(fits.status).toBe(200);
  });
});

describe('agent authentication of check-in', () => {
  const malformed: Array<[string, Record<string, string>]> = [
    ['no Authorization header', {}],
    ['a non-bearer scheme', { authorization: 'Basic YWdlbnQ6eA==' }],
    ['an empty bearer', { authorization: 'Bearer ' }],
    ['a bearer of the wrong shape', { authorization: 'Bearer not-a-secret' }],
    ['the admin token', { authorization: `Bearer ${ADMIN_TOKEN}` }],
    ['a well-formed unknown secret', { authorization: `Bearer ${unknownSecret()}` }],
  ];

  it.each(malformed)(
    'answers 401 invalid_agent_secret to %s, with the same body every time',
    async (_case, headers) => {
      const agent = await enrollAgent(ctx);
      const res = await ctx.request('POST', '/api/v1/agent/checkin', {
        token: null,
        headers,
        body: { hardware: { cpu: 'x' } },
      });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: 'invalid_agent_secret', message: expect.any(String) });
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
      const reference = await checkin(ctx, unknownSecret());
      expect(res.body).toEqual(reference.body);
      expect(await lastCheckin(agent.device_id)).toBeNull();
      expect(await storedHardware(agent.device_id)).toBeNull();
    },
  );

  it('answers 401 for a secret that differs from a real one in a single character', async () => {
    const agent = await enrollAgent(ctx);
    const last = agent.secret.at(-1) === 'A' ? 'B' : 'A';
    const res = await checkin(ctx, agent.secret.slice(0, -1) + last);
    expect(res.status).toBe(401);
    expect(res.body.error).toBe('invalid_agent_secret');
    expect(await lastCheckin(agent.device_id)).toBeNull();
  });

  it('answers 403 device_deprovisioned after deprovision and 403 device_archived after archive, writing nothing', async () => {
    const agent = await enrollAgent(ctx);
    await checkin(ctx, agent.secret);
    const heartbeat = await lastCheckin(agent.device_id);

    await ctx.request('POST', `/api/v1/devices/${agent.device_id}/deprovision`);
    const deprovisioned = await checkin(ctx, agent.secret, { hardware: { cpu: 'x' } });
    expect(deprovisioned.status).toBe(403);
    expect(deprovisioned.body.error).toBe('device_deprovisioned');

    await ctx.request('POST', `/api/v1/devices/${agent.device_id}/archive`);
    const archived = await checkin(ctx, agent.secret, { hardware: { cpu: 'x' } });
    expect(archived.status).toBe(403);
    expect(archived.body.error).toBe('device_archived');

    expect(await lastCheckin(agent.device_id)).toEqual(heartbeat);
    expect(await storedHardware(agent.device_id)).toBeNull();
  });

  it('does not take the admin token on agent routes, nor the agent secret on admin routes', async () => {
    const agent = await enrollAgent(ctx);
    const adminAsAgent = await checkin(ctx, ADMIN_TOKEN);
    expect(adminAsAgent.body.error).toBe('invalid_agent_secret');
    const agentAsAdmin = await ctx.request('GET', `/api/v1/devices/${agent.device_id}`, { token: agent.secret });
    expect(agentAsAdmin.status).toBe(401);
    expect(agentAsAdmin.body.error).toBe('unauthorized');
  });
});

describe('check-in cost', () => {
  it('takes one SQL statement once the blueprints are cached', async () => {
    const agent = await enrollAgent(ctx);
    let statements = 0;
    const counted = postgres(ctx.db.url, { max: 2, onnotice: () => {}, debug: () => void statements++ });
    try {
      const app = testApp(counted, ctx.config);
      expect((await request(app, 'POST', '/api/v1/agent/checkin', { token: agent.secret })).status).toBe(200); // warms the cache
      statements = 0;
      const res = await request(app, 'POST', '/api/v1/agent/checkin', {
        token: agent.secret,
        body: { hardware: { cpu: 'i5' } },
      });
      expect(res.status).toBe(200);
      expect(statements).toBe(1);
    } finally {
      await counted.end();
    }
  });

  it('an unchanged agent version costs no statement; a changed one without hardware costs one write', async () => {
    const agent = await enrollAgent(ctx);
    let statements = 0;
    const counted = postgres(ctx.db.url, { max: 2, onnotice: () => {}, debug: () => void statements++ });
    try {
      const app = testApp(counted, ctx.config);
      const send = (body: Record<string, unknown>) =>
        request(app, 'POST', '/api/v1/agent/checkin', { token: agent.secret, body });
      expect((await send({ agent_version: '1.0' })).status).toBe(200); // warms the cache, keeps 1.0
      statements = 0;
      expect((await send({ agent_version: '1.0' })).status).toBe(200);
      expect(statements).toBe(1); // the read alone
      statements = 0;
      expect((await send({ agent_version: '1.1' })).status).toBe(200);
      expect(statements).toBe(2); // the read and the version's write
      statements = 0;
      expect((await send({ hardware: { cpu: 'i5' }, agent_version: '1.2' })).status).toBe(200);
      expect(statements).toBe(1); // written in the hardware's statement
      const [row] = await ctx.sql`select agent_version from devices where id = ${agent.device_id}`;
      expect(row!.agent_version).toBe('1.2');
    } finally {
      await counted.end();
    }
  });
});
