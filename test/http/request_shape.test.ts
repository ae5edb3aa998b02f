/**
 * Nothing beyond what a route declares: an unknown query parameter is 400 naming it, on
 * every operation of the document; a body sent to a call that takes none (malformed JSON
 * included) is 400; a refused request writes nothing.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import {
  databaseFingerprint,
  documentedOperations,
  fillPath,
  type Operation,
  type TenantFixture,
  tenantFixture,
} from '../support/access.ts';
import { useTestApp } from '../support/app.ts';

const ctx = useTestApp();
let fixture: TenantFixture;
let operations: Operation[];

beforeAll(async () => {
  fixture = await tenantFixture(ctx);
  operations = await documentedOperations(ctx);
});

function expectUnknownParameters(res: { status: number; body: any }, names: string[], where: string) {
  expect(res.status, `${where}: ${JSON.stringify(res.body)}`).toBe(400);
  expect(res.body.error).toBe('invalid_request');
  expect(res.body.details.map((d: { path: string[] }) => d.path.join('.')).sort()).toEqual([...names].sort());
  for (const name of names) expect(res.body.message).toContain(name);
}

describe('unknown query parameters', () => {
  it('are refused with 400 naming them on every documented operation, and nothing is written', async () => {
    expect(operations.length).toBeGreaterThan(50);
    const before = await databaseFingerprint(ctx.sql);
    for (const op of operations) {
      const { url } = fillPath(op, fixture);
      const res = await ctx.request(op.method.toUpperCase(), `${url}?fleet_unknown=1&other_unknown=`, {
        // The operator passes every role and tenant check, so the request reaches the shape check.
        token: op.callers.includes('agent') ? fixture.agentSecret : undefined,
      });
      expectUnknownParameters(res, ['fleet_unknown', 'other_unknown'], `${op.method.toUpperCase()} ${op.path}`);
    }
    expect(await databaseFingerprint(ctx.sql)).toBe(before);
  });

  it('a misspelt device filter never answers with the unfiltered fleet; the documented ones still work', async () => {
    const list = `/api/v1/organizations/${fixture.organizationId}/devices`;
    expectUnknownParameters(await ctx.request('GET', `${list}?serial=PF-0007`), ['serial'], 'serial');
    const filtered = await ctx.request('GET', `${list}?q=PF-0007&limit=5&stale=false`);
    expect(filtered.status, JSON.stringify(filtered.body)).toBe(200);
    expect(filtered.body.items).toEqual([]);
  });

  it('an empty query string is no parameter', async () => {
    const res = await ctx.request('GET', `/api/v1/devices/${fixture.deviceId}?`);
    expect(res.status).toBe(200);
  });
});

describe('a body sent to a call that takes none', () => {
  const deprovision = () => `/api/v1/devices/${fixture.deviceId}/deprovision`;

  it.each([
    ['malformed JSON', '{"name":"x"}{"name":"y"}'],
    ['an object with a field', '{"name":"x"}'],
    ['a JSON array', '[]'],
    ['text', 'deprovision please'],
  ])('is refused with 400 (%s), and nothing is written', async (_, rawBody) => {
    const before = await databaseFingerprint(ctx.sql);
    const res = await ctx.request('POST', deprovision(), { rawBody, headers: { 'content-type': 'application/json' } });
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.error).toBe('invalid_request');
    expect(res.body.message).toContain('takes no body');
    expect(await databaseFingerprint(ctx.sql)).toBe(before);
  });

  it('with unknown fields on a key revoke and a code rotation: 400, the key and code unchanged', async () => {
    const before = await databaseFingerprint(ctx.sql);
    const revoke = await ctx.request('POST', `/api/v1/api-keys/${fixture.spareKeyId}/revoke`, { body: { now: true } });
    expect(revoke.status, JSON.stringify(revoke.body)).toBe(400);
    const rotate = await ctx.request('POST', `/api/v1/organizations/${fixture.organizationId}/activation-code/rotate`, {
      body: { code: 'mine' },
    });
    expect(rotate.status, JSON.stringify(rotate.body)).toBe(400);
    expect(await databaseFingerprint(ctx.sql)).toBe(before);
  });

  it('an empty body, or an empty JSON object, is no body: the call is made', async () => {
    const empty = await ctx.request('POST', deprovision(), { rawBody: '' });
    expect(empty.status, JSON.stringify(empty.body)).toBe(200);
    const object = await ctx.request('POST', deprovision(), { body: {} });
    expect(object.status, JSON.stringify(object.body)).toBe(200);
  });
});
