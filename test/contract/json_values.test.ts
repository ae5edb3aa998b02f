/**
 * Free-form JSON objects (selection `optionen`, agent report `detail`, `hardware` of
 * activate, bootstrap and check-in) against api/README.md, Conventions: nesting that would overflow the
 * stack and lone UTF-16 surrogates that PostgreSQL refuses are 400 `invalid_request` with
 * the offending path, never a 500, and nothing is written. Bodies are sent as raw JSON text:
 * the test's own JSON.stringify would overflow on 10,000 levels, and it is the only way to
 * send a lone surrogate escape.
 */
import { describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH } from '../../api/http/json_value.ts';
import { useTestApp, type TestResponse, writeHeartbeats } from '../support/app.ts';
import { activateDevice, newSerial, resolveDevice } from '../support/activation.ts';
import { activationCodeOf, createOrganization } from '../support/builders.ts';
import { bootstrapAgent, enrollAgent } from '../support/agent.ts';
import { insertGroup, insertOrgUnit } from '../support/devices.ts';

const ctx = useTestApp();

/** `levels` arrays nested in each other, as JSON text: `[[[]]]` is 3 levels. */
const arrays = (levels: number) => '['.repeat(levels) + ']'.repeat(levels);

/** An object whose deepest point is `levels` containers down, counting the object itself. */
const objectOfDepth = (levels: number) => `{"a":${arrays(levels - 1)}}`;

interface Endpoint {
  name: string;
  /** The body field that carries the free-form value. */
  field: 'optionen' | 'detail' | 'hardware';
  /** Sends a body in which `object` (JSON text of an object) is the free-form value. */
  send(object: string): Promise<TestResponse>;
}

/** One organization with a device, an org unit, a group, an agent, and a resolved device waiting for its bootstrap. */
async function setUp() {
  const org = await createOrganization(ctx);
  const agent = await enrollAgent(ctx, { organizationId: org.id });
  const unit = await insertOrgUnit(ctx.sql, org.id, 'Schule');
  const group = await insertGroup(ctx.sql, org.id);
  const waiting = await activateDevice(ctx, org.id);
  const blueprint = await resolveDevice(ctx, { code: waiting.code, device_id: waiting.device_id });
  const code = await activationCodeOf(ctx, org.id);
  const raw = (method: string, path: string, body: string, token?: string | null) =>
    ctx.request(method, path, { token, rawBody: body, headers: { 'content-type': 'application/json' } });
  const endpoints: Endpoint[] = [
    {
      name: 'device selection',
      field: 'optionen',
      send: (o) => raw('POST', `/api/v1/devices/${agent.device_id}/catalog/libreoffice/select`, `{"optionen":${o}}`),
    },
    {
      name: 'org-unit selection',
      field: 'optionen',
      send: (o) => raw('POST', `/api/v1/org-units/${unit}/catalog/qgis/select`, `{"optionen":${o}}`),
    },
    {
      name: 'group selection',
      field: 'optionen',
      send: (o) => raw('POST', `/api/v1/groups/${group}/catalog/onlyoffice/select`, `{"optionen":${o}}`),
    },
    {
      name: 'report',
      field: 'detail',
      send: (o) =>
        raw(
          'POST',
          '/api/v1/agent/report',
          `{"entries":[{"merkmal":"firefox","event":"applied"},{"merkmal":"qgis","event":"applied","detail":${o}}]}`,
          agent.secret,
        ),
    },
    {
      name: 'check-in',
      field: 'hardware',
      send: (o) => raw('POST', '/api/v1/agent/checkin', `{"agent_version":"1.0","hardware":${o}}`, agent.secret),
    },
    {
      name: 'bootstrap',
      field: 'hardware',
      send: (o) =>
        raw(
          'POST',
          '/api/v1/agent/bootstrap',
          `{"device_id":"${waiting.device_id}","bootstrap_token":"${blueprint.agent.bootstrap_token}","hardware":${o}}`,
          null,
        ),
    },
    {
      name: 'activation',
      field: 'hardware',
      send: (o) =>
        raw('POST', '/api/v1/activate', `{"code":"${code}","serial":"${newSerial()}","hardware":${o}}`, null),
    },
  ];
  return { org, agent, waiting, blueprint, endpoints };
}

/** Everything a rejected request could have written (pending heartbeats written first). */
async function snapshot() {
  await writeHeartbeats(ctx);
  const [row] = await ctx.sql`
    select (select count(*)::int from devices) as devices,
           (select count(*)::int from device_hardware) as hardware,
           (select count(*)::int from device_merkmale) as device_overrides,
           (select count(*)::int from org_unit_merkmale) as org_unit_overrides,
           (select count(*)::int from group_merkmale) as group_overrides,
           (select count(*)::int from device_merkmal_events) as events,
           (select count(*)::int from bootstrap_tokens) as bootstrap_tokens,
           (select count(*)::int from devices where agent_secret_hash is not null) as agent_secrets,
           (select max(at) from device_heartbeats) as last_checkin`;
  return row;
}

function expectInvalid(res: TestResponse, what: string, message: RegExp) {
  expect(res.status, `${what}: ${JSON.stringify(res.body)}`).toBe(400);
  expect(res.body.error, what).toBe('invalid_request');
  expect(res.body.message, what).toMatch(message);
}

describe('deeply nested JSON objects', () => {
  it('are 400 invalid_request at 10,000 levels (about 20 KB) on every endpoint, and nothing is written', async () => {
    const { endpoints } = await setUp();
    const before = await snapshot();
    for (const endpoint of endpoints) {
      const res = await endpoint.send(objectOfDepth(10_000));
      expectInvalid(res, endpoint.name, new RegExp(`deeper than ${MAX_JSON_DEPTH} levels`));
      // The path leads to where the limit was passed, below the field that carries the object.
      const path: string[] = res.body.details[0].path;
      expect(path.slice(-MAX_JSON_DEPTH - 1), endpoint.name).toEqual([
        endpoint.field,
        'a',
        ...Array.from({ length: MAX_JSON_DEPTH - 1 }, () => '0'),
      ]);
    }
    expect(await snapshot()).toEqual(before);
  });

  it(`are 400 one level past the limit (${MAX_JSON_DEPTH + 1}), and nothing is written`, async () => {
    const { endpoints } = await setUp();
    const before = await snapshot();
    for (const endpoint of endpoints) {
      expectInvalid(await endpoint.send(objectOfDepth(MAX_JSON_DEPTH + 1)), endpoint.name, /deeper than/);
    }
    expect(await snapshot()).toEqual(before);
  });

  it(`are accepted at ${MAX_JSON_DEPTH} levels on every endpoint and come back unchanged`, async () => {
    const { agent, waiting, endpoints } = await setUp();
    const deepest = objectOfDepth(MAX_JSON_DEPTH);
    for (const endpoint of endpoints) {
      const res = await endpoint.send(deepest);
      expect(res.status, `${endpoint.name}: ${JSON.stringify(res.body)}`).toBeLessThan(300);
    }
    const value = JSON.parse(deepest);
    const catalog = await ctx.request('GET', `/api/v1/devices/${agent.device_id}/catalog`);
    expect(catalog.body.items.find((i: { merkmal: string }) => i.merkmal === 'libreoffice').optionen).toEqual(value);
    const events = await ctx.request('GET', `/api/v1/devices/${agent.device_id}/events?limit=500`);
    expect(
      events.body.items.find((e: { merkmal: string; type: string }) => e.merkmal === 'qgis' && e.type === 'applied')
        .payload,
    ).toEqual({ detail: value });
    for (const id of [agent.device_id, waiting.device_id]) {
      expect((await ctx.request('GET', `/api/v1/devices/${id}/hardware`)).body.hardware).toEqual(value);
    }
  });

  it(`count an agent report's detail on its own: a bare array of ${MAX_JSON_DEPTH} levels is accepted, ${MAX_JSON_DEPTH + 1} is not`, async () => {
    const agent = await enrollAgent(ctx);
    const send = (detail: string) =>
      ctx.request('POST', '/api/v1/agent/report', {
        token: agent.secret,
        rawBody: `{"entries":[{"merkmal":"firefox","event":"applied","detail":${detail}}]}`,
        headers: { 'content-type': 'application/json' },
      });
    expect((await send(arrays(MAX_JSON_DEPTH))).status).toBe(200);
    expectInvalid(await send(arrays(MAX_JSON_DEPTH + 1)), 'detail', /entries\.0\.detail(\.0)+: .*deeper than/);
  });
});

describe('lone UTF-16 surrogates', () => {
  const cases: Array<[string, string, string[]]> = [
    ['a high surrogate in a value', '{"a":"\\ud800"}', ['a']],
    ['a low surrogate in a value', '{"a":"x\\udc00y"}', ['a']],
    ['a reversed pair in a value', '{"a":"\\udc00\\ud800"}', ['a']],
    ['a surrogate in a nested array', '{"a":[1,{"b":["ok","\\udfff"]}]}', ['a', '1', 'b', '1']],
    ['a surrogate in a key', '{"\\ud800":1}', []],
    ['a surrogate in a nested key', '{"a":{"b\\udbff":true}}', ['a']],
  ];

  it.each(cases)(
    'are 400 invalid_request with the path: %s, on every endpoint, and nothing is written',
    async (_what, object, path) => {
      const { endpoints } = await setUp();
      const before = await snapshot();
      for (const endpoint of endpoints) {
        const res = await endpoint.send(object);
        expectInvalid(res, endpoint.name, /lone UTF-16 surrogate/);
        // A bad key is not echoed: the path names the object that holds it.
        expect(res.body.details[0].path.slice(-path.length - 1), endpoint.name).toEqual([endpoint.field, ...path]);
      }
      expect(await snapshot()).toEqual(before);
    },
  );

  it("are 400 in a report entry's merkmal too (the entries reach PostgreSQL as jsonb), and nothing is written", async () => {
    const agent = await enrollAgent(ctx);
    const before = await snapshot();
    const res = await ctx.request('POST', '/api/v1/agent/report', {
      token: agent.secret,
      rawBody: '{"entries":[{"merkmal":"firefox","event":"applied"},{"merkmal":"fire\\ud800fox","event":"applied"}]}',
      headers: { 'content-type': 'application/json' },
    });
    expectInvalid(res, 'report merkmal', /entries\.1\.merkmal: .*lone UTF-16 surrogate/);
    expect(await snapshot()).toEqual(before);
  });

  it('leave the bootstrap token unused: the same token bootstraps afterwards', async () => {
    const { waiting, blueprint, endpoints } = await setUp();
    const bootstrap = endpoints.find((e) => e.name === 'bootstrap')!;
    expectInvalid(await bootstrap.send('{"a":"\\ud800"}'), 'bootstrap', /surrogate/);
    expectInvalid(await bootstrap.send(objectOfDepth(10_000)), 'bootstrap', /deeper than/);
    await bootstrapAgent(ctx, { device_id: waiting.device_id, bootstrap_token: blueprint.agent.bootstrap_token });
  });

  it('are fine in proper pairs (characters outside the BMP), which come back unchanged', async () => {
    const { agent, endpoints } = await setUp();
    const object = '{"emoji 🚀":"\\ud83d\\ude80 und 𝄞"}';
    for (const endpoint of endpoints) {
      const res = await endpoint.send(object);
      expect(res.status, `${endpoint.name}: ${JSON.stringify(res.body)}`).toBeLessThan(300);
    }
    const hardware = await ctx.request('GET', `/api/v1/devices/${agent.device_id}/hardware`);
    expect(hardware.body.hardware).toEqual({ 'emoji 🚀': '🚀 und 𝄞' });
  });
});

describe('hardware size', () => {
  it('keeps its 64 KiB cap, measured as UTF-8 JSON', async () => {
    const { endpoints } = await setUp();
    const before = await snapshot();
    const big = JSON.stringify({ blob: 'ä'.repeat(33 * 1024) }); // 66 KiB as UTF-8
    for (const endpoint of endpoints.filter((e) => e.field === 'hardware')) {
      expectInvalid(await endpoint.send(big), endpoint.name, /at most 65536 bytes/);
    }
    expect(await snapshot()).toEqual(before);
  });
});
