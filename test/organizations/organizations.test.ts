import { describe, expect, it } from 'vitest';
import { normalizeActivationCode } from '../../api/organizations/activation_code.ts';
import { useTestApp } from '../support/app.ts';
import { activationCodeOf, createOrganization } from '../support/builders.ts';
import { countRows } from '../support/db.ts';

const ctx = useTestApp();
const contact = {
  kontakt_name: 'Erika Mustermann',
  adresse: 'Musterstraße 1, 12345 Musterstadt',
  telefon: '+49 30 1234567',
  kontakt_email: 'it@example.org',
  notizen: 'Rollout ab Q1',
};

describe('POST /api/v1/organizations', () => {
  it('creates the organization with the contract fields and the protected org unit', async () => {
    const res = await ctx.request('POST', '/api/v1/organizations', { body: { name: 'Stadt Musterstadt', ...contact } });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(
      [
        'id',
        'name',
        'kontakt_name',
        'adresse',
        'telefon',
        'kontakt_email',
        'notizen',
        'default_oe_id',
        'created_at',
      ].sort(),
    );
    expect(res.body).toMatchObject({ name: 'Stadt Musterstadt', ...contact });
    expect(res.body.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const units =
      await ctx.sql`select id, name, protected, parent_id from org_units where organization_id = ${res.body.id}`;
    expect(units).toEqual([{ id: res.body.default_oe_id, name: 'Neue Geräte', protected: true, parent_id: null }]);
  });

  it('defaults absent contact fields to null', async () => {
    const org = await createOrganization(ctx);
    expect(org).toMatchObject({ kontakt_name: null, adresse: null, telefon: null, kontakt_email: null, notizen: null });
  });

  it.each([
    ['missing name', {}],
    ['empty name', { name: '   ' }],
    ['unknown field', { name: 'x', organization_id: crypto.randomUUID() }],
    ['mass-assigned id', { name: 'x', id: crypto.randomUUID() }],
    ['wrong type', { name: 42 }],
    ['invalid e-mail', { name: 'x', kontakt_email: 'not-an-email' }],
    ['over-long name', { name: 'x'.repeat(201) }],
  ])('rejects %s with 400 invalid_request and writes nothing', async (_case, body) => {
    const before = await countRows(ctx.sql, 'organizations');
    const res = await ctx.request('POST', '/api/v1/organizations', { body });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request');
    expect(typeof res.body.message).toBe('string');
    const after = await countRows(ctx.sql, 'organizations');
    expect(after).toBe(before);
  });

  it('rejects malformed JSON and a non-JSON content type with 400', async () => {
    const malformed = await ctx.request('POST', '/api/v1/organizations', {
      rawBody: '{"name":',
      headers: { 'content-type': 'application/json' },
    });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error).toBe('invalid_request');
    const text = await ctx.request('POST', '/api/v1/organizations', {
      rawBody: 'name=x',
      headers: { 'content-type': 'text/plain' },
    });
    expect(text.status).toBe(400);
    expect(text.body.error).toBe('invalid_request');
  });

  it('rejects a body over 1 MiB with 413 payload_too_large', async () => {
    const res = await ctx.request('POST', '/api/v1/organizations', {
      body: { name: 'x', notizen: 'n'.repeat(1024 * 1024 + 10) },
    });
    expect(res.status).toBe(413);
    expect(res.body.error).toBe('payload_too_large');
  });
});

describe('admin authentication', () => {
  it.each([
    ['no token', null],
    ['wrong token', 'wrong-token'],
    ['token with a different tail', 'test-admin-token-0123456789abcdefghijklmnopqrstuX'],
  ])('answers 401 unauthorized for %s and changes nothing', async (_case, token) => {
    const before = await countRows(ctx.sql, 'organizations');
    for (const [method, path, body] of [
      ['POST', '/api/v1/organizations', { name: 'x' }],
      ['GET', '/api/v1/organizations', undefined],
      ['GET', `/api/v1/organizations/${crypto.randomUUID()}`, undefined],
      ['GET', '/api/v1/templates', undefined],
    ] as const) {
      const res = await ctx.request(method, path, { body, token });
      expect(res.status).toBe(401);
      expect(res.body.error).toBe('unauthorized');
    }
    const after = await countRows(ctx.sql, 'organizations');
    expect(after).toBe(before);
  });

  it('rejects a non-bearer scheme', async () => {
    const res = await ctx.request('GET', '/api/v1/organizations', {
      token: null,
      headers: { authorization: `Basic ${btoa('admin:x')}` },
    });
    expect(res.status).toBe(401);
  });
});

describe('GET /api/v1/organizations and /organizations/{id}', () => {
  it('shows the same contact fields in the list and the single read', async () => {
    const org = await createOrganization(ctx, contact);
    const single = await ctx.request('GET', `/api/v1/organizations/${org.id}`);
    expect(single.status).toBe(200);
    expect(single.body).toEqual(org);
    let found: unknown = null;
    let cursor: string | null = null;
    do {
      const page: any = await ctx.request('GET', `/api/v1/organizations?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.status).toBe(200);
      expect(page.body.items.length).toBeLessThanOrEqual(2);
      found ??= page.body.items.find((o: { id: string }) => o.id === org.id) ?? null;
      cursor = page.body.next_cursor;
    } while (cursor);
    expect(found).toEqual(org);
  });

  it('pages through every organization exactly once in a stable order', async () => {
    for (let i = 0; i < 5; i++) await createOrganization(ctx);
    const all = await ctx.request('GET', '/api/v1/organizations?limit=500');
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: any = await ctx.request('GET', `/api/v1/organizations?limit=3${cursor ? `&cursor=${cursor}` : ''}`);
      seen.push(...page.body.items.map((o: { id: string }) => o.id));
      cursor = page.body.next_cursor;
    } while (cursor);
    expect(seen).toEqual(all.body.items.map((o: { id: string }) => o.id));
  });

  it.each(['0', '501', 'abc', '-1'])('rejects limit=%s with 400', async (limit) => {
    const res = await ctx.request('GET', `/api/v1/organizations?limit=${limit}`);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request');
  });

  it('rejects a forged cursor with 400', async () => {
    const res = await ctx.request('GET', '/api/v1/organizations?cursor=not-a-cursor');
    expect(res.status).toBe(400);
  });

  it('answers 404 not_found for an unknown id and a non-UUID id', async () => {
    for (const id of [crypto.randomUUID(), 'not-a-uuid', '1']) {
      const res = await ctx.request('GET', `/api/v1/organizations/${id}`);
      expect(res.status).toBe(404);
      expect(res.body.error).toBe('not_found');
    }
  });
});

describe('PATCH /api/v1/organizations/{id}', () => {
  it('updates the given fields only', async () => {
    const org = await createOrganization(ctx, contact);
    const res = await ctx.request('PATCH', `/api/v1/organizations/${org.id}`, {
      body: { telefon: '+49 40 999', notizen: null },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ...org, telefon: '+49 40 999', notizen: null });
  });

  it('answers 404 not_found for an unknown id', async () => {
    const res = await ctx.request('PATCH', `/api/v1/organizations/${crypto.randomUUID()}`, { body: { name: 'x' } });
    expect(res.status).toBe(404);
    expect(res.body.error).toBe('not_found');
  });

  it.each([
    ['unknown field', { default_oe_id: crypto.randomUUID() }],
    ['invalid e-mail', { kontakt_email: 'nope' }],
    ['null name', { name: null }],
  ])('rejects %s with 400 and changes nothing', async (_case, body) => {
    const org = await createOrganization(ctx, contact);
    const res = await ctx.request('PATCH', `/api/v1/organizations/${org.id}`, { body });
    expect(res.status).toBe(400);
    const again = await ctx.request('GET', `/api/v1/organizations/${org.id}`);
    expect(again.body).toEqual(org);
  });
});

describe('activation code', () => {
  it('is 20 Crockford base32 characters in four groups, not a UUID', async () => {
    const org = await createOrganization(ctx);
    const code = await activationCodeOf(ctx, org.id);
    expect(code).toMatch(/^[0-9A-HJKMNP-TV-Z]{5}(-[0-9A-HJKMNP-TV-Z]{5}){3}$/);
  });

  it('rotates: the new code differs and replaces the old one', async () => {
    const org = await createOrganization(ctx);
    const before = await activationCodeOf(ctx, org.id);
    const res = await ctx.request('POST', `/api/v1/organizations/${org.id}/activation-code/rotate`);
    expect(res.status).toBe(200);
    expect(res.body.code).not.toBe(before);
    expect(await activationCodeOf(ctx, org.id)).toBe(res.body.code);
    const rows = await ctx.sql`select code from activation_codes where code = ${before}`;
    expect(rows).toHaveLength(0);
  });

  it('answers 404 for the code of an unknown organization', async () => {
    expect((await ctx.request('GET', `/api/v1/organizations/${crypto.randomUUID()}/activation-code`)).status).toBe(404);
    expect(
      (await ctx.request('POST', `/api/v1/organizations/${crypto.randomUUID()}/activation-code/rotate`)).status,
    ).toBe(404);
  });

  it('normalizes typed codes case-insensitively and folds look-alikes', () => {
    expect(normalizeActivationCode('k7m2q-4xw9d-pz3rt-8hbnc')).toBe('K7M2Q-4XW9D-PZ3RT-8HBNC');
    expect(normalizeActivationCode('K7M2Q4XW9DPZ3RT8HBNC')).toBe('K7M2Q-4XW9D-PZ3RT-8HBNC');
    expect(normalizeActivationCode('O0ILo-00000-00000-00000')).toBe('00110-00000-00000-00000');
    expect(normalizeActivationCode(crypto.randomUUID())).toBeNull();
    expect(normalizeActivationCode('short')).toBeNull();
  });
});
