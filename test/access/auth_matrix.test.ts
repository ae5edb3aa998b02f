/**
 * The auth matrix (CONTRACT §2, §12): every operation of the OpenAPI document × every kind
 * of credential, expected answers derived from each operation's declared callers. Refused
 * writes are proven to change nothing by a fingerprint of every table.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, useTestApp } from '../support/app.ts';
import {
  credentialNames,
  databaseFingerprint,
  documentedOperations,
  expectationFor,
  fillPath,
  tenantFixture,
  type TenantFixture,
  tokenOf,
} from '../support/access.ts';

const ctx = useTestApp();

let other: TenantFixture;
beforeAll(async () => {
  other = await tenantFixture(ctx);
});

describe('the auth matrix', () => {
  it('answers every operation with every credential as its declaration says, and refused writes change nothing', async () => {
    const operations = await documentedOperations(ctx);
    expect(operations.length).toBeGreaterThan(50);
    const failures: string[] = [];
    let calls = 0;
    for (const op of operations) {
      const write = op.method !== 'get';
      let fixture = await tenantFixture(ctx);
      let fixtureUsedByAllowedWrite = false;
      const { orgScoped } = fillPath(op, fixture);
      // Refusals first, all on one fixture, with the fingerprint taken around them.
      const order = [...credentialNames].sort(
        (a, b) =>
          Number(expectationFor(op, a, orgScoped) === 'allowed') -
          Number(expectationFor(op, b, orgScoped) === 'allowed'),
      );
      const before = write ? await databaseFingerprint(ctx.sql) : '';
      let checkedRefusals = false;
      let ignoredStatus: number | undefined;
      for (const credential of order) {
        const expectation = expectationFor(op, credential, orgScoped);
        if (expectation === 'allowed' && write && !checkedRefusals) {
          checkedRefusals = true;
          if ((await databaseFingerprint(ctx.sql)) !== before)
            failures.push(`${op.method} ${op.path}: a refused write changed the database`);
        }
        if (expectation === 'allowed' && write && fixtureUsedByAllowedWrite) fixture = await tenantFixture(ctx);
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
      if (write && !checkedRefusals && (await databaseFingerprint(ctx.sql)) !== before) {
        failures.push(`${op.method} ${op.path}: a refused write changed the database`);
      }
    }
    expect(failures).toEqual([]);
    expect(calls).toBe(operations.length * credentialNames.length);
  });

  it('refuses a route that declares no callers, before its handler runs', async () => {
    const { createApp } = await import('../../api/app.ts');
    const { silentLogger } = await import('../../api/log.ts');
    const app = createApp({ sql: ctx.sql, config: ctx.config, log: silentLogger });
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
