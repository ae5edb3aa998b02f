import { describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';

const ctx = useTestApp();

describe('405 method_not_allowed and 404 for unknown paths', () => {
  it('answers 405 with Allow for a known path and another method, with or without a credential', async () => {
    const path = `/api/v1/devices/${crypto.randomUUID()}`;
    for (const token of [undefined, null]) {
      const res = await ctx.request('DELETE', path, { token });
      expect(res.status).toBe(405);
      expect(res.body).toMatchObject({ error: 'method_not_allowed' });
      expect(res.headers.get('allow')).toBe('GET, HEAD');
    }
    const orgs = await ctx.request('PUT', '/api/v1/organizations');
    expect(orgs.status).toBe(405);
    expect(orgs.headers.get('allow')).toBe('GET, HEAD, POST');
    const checkin = await ctx.request('GET', '/api/v1/agent/checkin', { token: null });
    expect(checkin.status).toBe(405);
    expect(checkin.headers.get('allow')).toBe('POST');
    const metrics = await ctx.request('POST', '/metrics', { token: null });
    expect(metrics.status).toBe(405);
    expect(metrics.headers.get('allow')).toBe('GET, HEAD');
  });

  it('answers 404 not_found for an unknown path with a valid credential, 401 without one', async () => {
    const known = await ctx.request('GET', '/api/v1/no-such-thing');
    expect(known.status).toBe(404);
    expect(known.body).toMatchObject({ error: 'not_found' });
    expect((await ctx.request('GET', '/api/v1/no-such-thing', { token: null })).status).toBe(401);
  });

  it('serves the method a path has (HEAD like GET)', async () => {
    expect((await ctx.request('HEAD', '/api/v1/health/live', { token: null })).status).toBe(200);
  });
});
