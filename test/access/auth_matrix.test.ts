/**
 * The auth matrix: every operation of the OpenAPI document × every kind of credential,
 * the expected answers taken from a table written from the contract (expected_callers.ts),
 * not from the routes' own declarations; the declarations must agree with that table too.
 * Refused writes are proven to change nothing by a fingerprint of every table, on every
 * run (nothing random writes behind a refusal). The portal's forms are held to the same
 * declarations: each names the very declaration object its API twin is defined with.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { apiRouteOf } from '../../api/access/route.ts';
import { portalWrites } from '../../api/portal/access.ts';
import { ADMIN_TOKEN, testApp, useTestApp, writeHeartbeats } from '../support/app.ts';
import { TEMPLATES } from '../support/activation.ts';
import { PortalClient } from '../support/portal_client.ts';
import { EXPECTED_CALLERS, xCallersOf } from './expected_callers.ts';
import {
  credentialNames,
  databaseFingerprint,
  documentedOperations,
  expectationFor,
  fillPath,
  fillPortalPath,
  type Operation,
  tenantFixture,
  type TenantFixture,
  tokenOf,
} from '../support/access.ts';

const ctx = useTestApp();

let other: TenantFixture;
beforeAll(async () => {
  other = await tenantFixture(ctx);
});

const keyOf = (op: Operation) => `${op.method.toUpperCase()} ${op.path}`;

/** The operations of the document, with the callers the contract table names. */
async function contractOperations(): Promise<Operation[]> {
  return (await documentedOperations(ctx)).map((op) => {
    const expected = EXPECTED_CALLERS[keyOf(op)];
    if (expected === undefined) throw new Error(`${keyOf(op)} is missing from test/access/expected_callers.ts`);
    return { ...op, callers: xCallersOf(expected) };
  });
}

describe('the auth matrix', () => {
  it('lists every operation of the document in the contract table, and each declares the callers the table names', async () => {
    const documented = await documentedOperations(ctx);
    const keys = documented.map(keyOf);
    expect(keys.filter((k) => !(k in EXPECTED_CALLERS))).toEqual([]);
    expect(Object.keys(EXPECTED_CALLERS).filter((k) => !keys.includes(k))).toEqual([]);
    const disagreements = documented.flatMap((op) => {
      const expected = xCallersOf(EXPECTED_CALLERS[keyOf(op)]!);
      return JSON.stringify(op.callers) === JSON.stringify(expected)
        ? []
        : [`${keyOf(op)} declares ${op.callers.join(',')}, the contract says ${expected.join(',')}`];
    });
    expect(disagreements).toEqual([]);
  });

  it('answers every operation with every credential as the contract says, and refused writes change nothing', async () => {
    // The heartbeats of an earlier operation's check-ins are written in a batch, on a timer:
    // written before each fingerprint, they cannot land between two and pass for a refused write.
    const fingerprint = async () => {
      await writeHeartbeats(ctx);
      return databaseFingerprint(ctx.sql);
    };
    const operations = await contractOperations();
    expect(operations.length).toBeGreaterThan(50);
    const failures: string[] = [];
    let calls = 0;
    // One fixture until an allowed write uses it: reads and refused writes leave it as it was
    // (the fingerprint proves the latter), so the next operation meets it intact.
    let fixture = await tenantFixture(ctx);
    let fixtureUsedByAllowedWrite = false;
    let fixtures = 1;
    for (const op of operations) {
      const write = op.method !== 'get';
      if (fixtureUsedByAllowedWrite) {
        fixture = await tenantFixture(ctx);
        fixtureUsedByAllowedWrite = false;
        fixtures++;
      }
      const { orgScoped } = fillPath(op, fixture);
      // Refusals first, all on one fixture, with the fingerprint taken around them.
      const order = [...credentialNames].sort(
        (a, b) =>
          Number(expectationFor(op, a, orgScoped) === 'allowed') -
          Number(expectationFor(op, b, orgScoped) === 'allowed'),
      );
      const before = write ? await fingerprint() : '';
      let checkedRefusals = false;
      let ignoredStatus: number | undefined;
      for (const credential of order) {
        const expectation = expectationFor(op, credential, orgScoped);
        if (expectation === 'allowed' && write && !checkedRefusals) {
          checkedRefusals = true;
          if ((await fingerprint()) !== before)
            failures.push(`${op.method} ${op.path}: a refused write changed the database`);
        }
        if (expectation === 'allowed' && write && fixtureUsedByAllowedWrite) {
          fixture = await tenantFixture(ctx);
          fixtureUsedByAllowedWrite = false;
          fixtures++;
        }
        const { url } = fillPath(op, fixture);
        const res = await ctx.request(op.method.toUpperCase(), url, {
          token: tokenOf(credential, fixture, other, ADMIN_TOKEN),
          body: write && op.method !== 'delete' ? {} : undefined,
        });
        calls++;
        const where = `${op.method.toUpperCase()} ${op.path} with ${credential}: ${res.status} ${res.body?.error ?? ''}`;
        if (expectation === 'allowed') {
          if (write) fixtureUsedByAllowedWrite = true;
          if ([401, 403, 404].includes(res.status) || res.status >= 500) failures.push(`${where}, expected to pass`);
        } else if (expectation === 'credential_ignored') {
          ignoredStatus ??= res.status;
          if (res.status !== ignoredStatus || ['unauthorized', 'forbidden'].includes(res.body?.error)) {
            failures.push(`${where}, expected the credential to be ignored (${ignoredStatus})`);
          }
        } else if (res.status !== expectation.status || res.body?.error !== expectation.error) {
          failures.push(`${where}, expected ${expectation.status} ${expectation.error}`);
        }
      }
      if (write && !checkedRefusals && (await fingerprint()) !== before) {
        failures.push(`${op.method} ${op.path}: a refused write changed the database`);
      }
    }
    expect(failures).toEqual([]);
    expect(calls).toBe(operations.length * credentialNames.length);
    console.info(`auth matrix: ${operations.length} operations, ${calls} calls, ${fixtures} tenant fixtures`);
  }, 600_000);

  it('refuses a route that declares no callers, before its handler runs', async () => {
    const app = testApp(ctx.sql, ctx.config);
    let ran = false;
    app.get('/api/v1/undeclared', (c) => {
      ran = true;
      return c.json({ secret: 'data' });
    });
    const res = await app.request('/api/v1/undeclared', { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(res.status).toBe(401);
    expect(ran).toBe(false);
  });
});

describe("the portal's forms", () => {
  /** The portal's own session forms, which make no operation of the API. */
  const sessionForms = ['POST /portal/login', 'POST /portal/logout', 'POST /portal/organization'];

  it('make each write through the declaration object its API twin was defined with', async () => {
    const documented = new Map((await documentedOperations(ctx)).map((op) => [keyOf(op), op]));
    const forms = ctx.app.routes
      .filter((r) => r.method === 'POST' && r.path.startsWith('/portal/'))
      .map((r) => `POST ${r.path}`);
    // Every form of the portal is registered with its operation (or is a session form).
    expect(forms.filter((f) => !sessionForms.includes(f) && !portalWrites.has(f))).toEqual([]);
    expect(portalWrites.size).toBeGreaterThan(20);
    const drifts: string[] = [];
    for (const [form, declaration] of portalWrites) {
      const twin = apiRouteOf(declaration);
      if (twin === undefined) {
        drifts.push(`${form}: its declaration is not the one of any API route`);
        continue;
      }
      const key = `${twin.method.toUpperCase()} /api/v1${twin.path}`;
      const op = documented.get(key);
      if (op === undefined) {
        drifts.push(`${form}: its twin ${key} is not in the OpenAPI document`);
        continue;
      }
      if (declaration.audit === undefined) drifts.push(`${form}: its twin ${key} declares no audit action`);
      // The document, the contract table and the portal all speak of the same callers.
      expect(op.callers, form).toEqual(xCallersOf(EXPECTED_CALLERS[key]!));
    }
    expect(drifts).toEqual([]);
  });

  it("refuse what the API twin refuses: a viewer's session 403, another organization's admin 404, nothing changed", async () => {
    const fixture = await tenantFixture(ctx);
    const viewer = new PortalClient(ctx.app, '10.39.0.1');
    const stranger = new PortalClient(ctx.app, '10.39.0.2');
    expect((await viewer.signIn(fixture.viewerKey)).status).toBe(303);
    expect((await stranger.signIn(other.adminKey)).status).toBe(303);
    const csrf = async (client: PortalClient) => PortalClient.csrf((await client.get('/portal/devices')).text);
    const tokens = new Map([
      [viewer, await csrf(viewer)],
      [stranger, await csrf(stranger)],
    ]);
    // Valid input for every form, so each reaches its authorization (forms check their input first).
    const fields = {
      name: 'x',
      role: 'viewer',
      url: 'https://hooks.example.com/portal',
      'event:device.activated': 'on',
      template_id: TEMPLATES.debianStandard,
      max_devices: '5',
      days: '7',
      source: `template:${TEMPLATES.debianStandard}`,
      device: fixture.deviceId,
    };
    const before = await databaseFingerprint(ctx.sql);
    const failures: string[] = [];
    for (const [form, declaration] of portalWrites) {
      const path = fillPortalPath(form.slice('POST '.length), fixture);
      const allowedToViewer = declaration.access === 'org_viewer';
      for (const [client, expected] of [
        [viewer, allowedToViewer ? undefined : 403],
        [stranger, 404],
      ] as const) {
        if (expected === undefined) continue;
        // An organization's own forms name its organization through the session, so a
        // stranger's session reaches only the forms that name a resource.
        if (client === stranger && !path.slice('/portal/'.length).includes('/')) continue;
        const res = await client.request('POST', path, { ...fields, _csrf: tokens.get(client)! });
        if (res.status !== expected)
          failures.push(`${form} as ${client === viewer ? 'viewer' : 'stranger'}: ${res.status}`);
      }
    }
    expect(failures).toEqual([]);
    expect(await databaseFingerprint(ctx.sql)).toBe(before);
  }, 120_000);
});
