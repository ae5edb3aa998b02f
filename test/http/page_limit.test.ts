/** `?limit=` (api/README.md, Collections): 1–500 in plain decimal digits; anything else is a 400. */
import { describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';

const ctx = useTestApp();

describe('?limit=', () => {
  it.each(['0x10', '1e2', '+5', '-5', ' 5', '5 ', '5.0', '', 'Infinity', '0b11', '0', '501', '99999999999999999999'])(
    'refuses %j with 400 invalid_request',
    async (limit) => {
      const res = await ctx.request('GET', `/api/v1/organizations?limit=${encodeURIComponent(limit)}`);
      expect([res.status, res.body.error]).toEqual([400, 'invalid_request']);
    },
  );

  it('takes decimal digits, leading zeros included, and defaults to 100', async () => {
    await createOrganization(ctx);
    await createOrganization(ctx);
    const one = await ctx.request('GET', '/api/v1/organizations?limit=1');
    expect([one.status, one.body.items.length, typeof one.body.next_cursor]).toEqual([200, 1, 'string']);
    expect((await ctx.request('GET', '/api/v1/organizations?limit=007')).status).toBe(200);
    expect((await ctx.request('GET', '/api/v1/organizations?limit=500')).status).toBe(200);
    const all = await ctx.request('GET', '/api/v1/organizations');
    expect([all.status, all.body.items.length]).toEqual([200, 2]);
  });

  it('is documented as an integer of 1–500 with the default 100', async () => {
    const doc = (await ctx.request('GET', '/api/v1/openapi.json', { token: null })).body;
    const limit = doc.paths['/api/v1/organizations'].get.parameters.find((p: { name: string }) => p.name === 'limit');
    expect(limit.schema).toMatchObject({ type: 'integer', minimum: 1, maximum: 500, default: 100 });
    expect(limit.required).not.toBe(true);
  });
});
