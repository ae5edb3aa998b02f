import { describe, expect, it } from 'vitest';
import { useTestApp } from '../support/app.ts';
import { createEnrollmentSession, TEMPLATES } from '../support/activation.ts';
import { createOrganization } from '../support/builders.ts';
import { countRows } from '../support/db.ts';

const ctx = useTestApp();
const inOneDay = () => new Date(Date.now() + 24 * 3600 * 1000).toISOString();
const sessionFields = [
  'id',
  'organization_id',
  'template_id',
  'expires_at',
  'max_devices',
  'devices_used',
  'revoked_at',
  'created_at',
];

describe('POST /api/v1/organizations/{id}/enrollment-sessions', () => {
  it('creates a session with the contract fields', async () => {
    const org = await createOrganization(ctx);
    const expiresAt = inOneDay();
    const res = await ctx.request('POST', `/api/v1/organizations/${org.id}/enrollment-sessions`, {
      body: { template_id: TEMPLATES.debianEncrypted, expires_at: expiresAt, max_devices: 25 },
    });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual([...sessionFields].sort());
    expect(res.body).toMatchObject({
      organization_id: org.id,
      template_id: TEMPLATES.debianEncrypted,
      expires_at: expiresAt,
      max_devices: 25,
      devices_used: 0,
      revoked_at: null,
    });
    expect(res.body.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(res.body.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it('accepts an expires_at with an offset and returns it in UTC', async () => {
    const org = await createOrganization(ctx);
    const res = await ctx.request('POST', `/api/v1/organizations/${org.id}/enrollment-sessions`, {
      body: { template_id: TEMPLATES.debianStandard, expires_at: '2099-06-01T12:00:00+02:00', max_devices: 1 },
    });
    expect(res.status).toBe(201);
    expect(res.body.expires_at).toBe('2099-06-01T10:00:00.000Z');
  });

  it.each([
    ['expires_at in the past', { expires_at: '2020-01-01T00:00:00.000Z' }],
    ['expires_at now-ish (not in the future)', { expires_at: new Date(Date.now() - 1000).toISOString() }],
    ['expires_at not a timestamp', { expires_at: 'tomorrow' }],
    ['max_devices 0', { max_devices: 0 }],
    ['max_devices negative', { max_devices: -3 }],
    ['max_devices not an integer', { max_devices: 1.5 }],
    ['max_devices as a string', { max_devices: '5' }],
    ['max_devices too large', { max_devices: 100_001 }],
    ['template_id not a UUID', { template_id: 'debian-standard' }],
    ['missing template_id', { template_id: undefined }],
    ['missing expires_at', { expires_at: undefined }],
    ['missing max_devices', { max_devices: undefined }],
    ['mass-assigned devices_used', { devices_used: 3 }],
    ['mass-assigned organization_id', { organization_id: crypto.randomUUID() }],
    ['mass-assigned revoked_at', { revoked_at: null }],
  ])('rejects %s with 400 invalid_request and writes nothing', async (_case, fields) => {
    const org = await createOrganization(ctx);
    const before = await countRows(ctx.sql, 'enrollment_sessions');
    const res = await ctx.request('POST', `/api/v1/organizations/${org.id}/enrollment-sessions`, {
      body: { template_id: TEMPLATES.debianStandard, expires_at: inOneDay(), max_devices: 5, ...fields },
    });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request');
    expect(res.body.details.length).toBeGreaterThan(0);
    expect(await countRows(ctx.sql, 'enrollment_sessions')).toBe(before);
  });

  it('answers 404 not_found for an unknown template and writes nothing', async () => {
    const org = await createOrganization(ctx);
    const before = await countRows(ctx.sql, 'enrollment_sessions');
    const templateId = crypto.randomUUID();
    const res = await ctx.request('POST', `/api/v1/organizations/${org.id}/enrollment-sessions`, {
      body: { template_id: templateId, expires_at: inOneDay(), max_devices: 5 },
    });
    expect(res.status).toBe(404);
    expect(res.body.error).toBe('not_found');
    expect(res.body.message).toContain(templateId);
    expect(await countRows(ctx.sql, 'enrollment_sessions')).toBe(before);
  });

  it('answers 404 not_found for an unknown or malformed organization id', async () => {
    const body = { template_id: TEMPLATES.debianStandard, expires_at: inOneDay(), max_devices: 5 };
    for (const id of [crypto.randomUUID(), 'not-a-uuid']) {
      const res = await ctx.request('POST', `/api/v1/organizations/${id}/enrollment-sessions`, { body });
      expect(res.status).toBe(404);
      expect(res.body.error).toBe('not_found');
    }
  });
});

describe('GET /api/v1/organizations/{id}/enrollment-sessions', () => {
  it("lists only the organization's sessions, oldest first, in pages", async () => {
    const org = await createOrganization(ctx);
    const other = await createOrganization(ctx);
    const a = await createEnrollmentSession(ctx, org.id);
    const b = await createEnrollmentSession(ctx, org.id, { template_id: TEMPLATES.ubuntuStandard });
    const c = await createEnrollmentSession(ctx, org.id, { max_devices: 1 });
    await createEnrollmentSession(ctx, other.id);

    const all = await ctx.request('GET', `/api/v1/organizations/${org.id}/enrollment-sessions`);
    expect(all.status).toBe(200);
    expect(all.body.items.map((s: any) => s.id)).toEqual([a.id, b.id, c.id]);
    expect(all.body.items[1]).toEqual(b);
    expect(all.body.next_cursor).toBeNull();

    const first = await ctx.request('GET', `/api/v1/organizations/${org.id}/enrollment-sessions?limit=2`);
    expect(first.body.items.map((s: any) => s.id)).toEqual([a.id, b.id]);
    const second = await ctx.request(
      'GET',
      `/api/v1/organizations/${org.id}/enrollment-sessions?limit=2&cursor=${first.body.next_cursor}`,
    );
    expect(second.body.items.map((s: any) => s.id)).toEqual([c.id]);
    expect(second.body.next_cursor).toBeNull();
  });

  it('answers an empty list for an organization without sessions', async () => {
    const org = await createOrganization(ctx);
    const res = await ctx.request('GET', `/api/v1/organizations/${org.id}/enrollment-sessions`);
    expect(res.body).toEqual({ items: [], next_cursor: null });
  });

  it('answers 404 for an unknown organization and 400 for a bad limit or cursor', async () => {
    const unknown = await ctx.request('GET', `/api/v1/organizations/${crypto.randomUUID()}/enrollment-sessions`);
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toBe('not_found');
    const org = await createOrganization(ctx);
    for (const query of ['limit=0', 'limit=501', 'cursor=garbage']) {
      const res = await ctx.request('GET', `/api/v1/organizations/${org.id}/enrollment-sessions?${query}`);
      expect(res.status, query).toBe(400);
      expect(res.body.error).toBe('invalid_request');
    }
  });
});

describe('GET /api/v1/enrollment-sessions/{id}', () => {
  it('reads a session', async () => {
    const org = await createOrganization(ctx);
    const session = await createEnrollmentSession(ctx, org.id);
    const res = await ctx.request('GET', `/api/v1/enrollment-sessions/${session.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual(session);
  });

  it('answers 404 not_found for an unknown or malformed id', async () => {
    for (const id of [crypto.randomUUID(), '12345']) {
      const res = await ctx.request('GET', `/api/v1/enrollment-sessions/${id}`);
      expect(res.status).toBe(404);
      expect(res.body.error).toBe('not_found');
    }
  });
});

describe('POST /api/v1/enrollment-sessions/{id}/revoke', () => {
  it('sets revoked_at, and a second revoke keeps the first timestamp', async () => {
    const org = await createOrganization(ctx);
    const session = await createEnrollmentSession(ctx, org.id);
    const first = await ctx.request('POST', `/api/v1/enrollment-sessions/${session.id}/revoke`);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ ...session, revoked_at: expect.stringMatching(/Z$/) });
    await new Promise((r) => setTimeout(r, 5));
    const second = await ctx.request('POST', `/api/v1/enrollment-sessions/${session.id}/revoke`);
    expect(second.status).toBe(200);
    expect(second.body.revoked_at).toBe(first.body.revoked_at);
    const read = await ctx.request('GET', `/api/v1/enrollment-sessions/${session.id}`);
    expect(read.body.revoked_at).toBe(first.body.revoked_at);
  });

  it('answers 404 not_found for an unknown or malformed id', async () => {
    for (const id of [crypto.randomUUID(), 'x']) {
      const res = await ctx.request('POST', `/api/v1/enrollment-sessions/${id}/revoke`);
      expect(res.status).toBe(404);
      expect(res.body.error).toBe('not_found');
    }
  });
});

describe('admin authentication of enrollment sessions', () => {
  it.each([
    ['no token', null],
    ['wrong token', 'wrong-token'],
  ])('answers 401 unauthorized for %s and changes nothing', async (_case, token) => {
    const org = await createOrganization(ctx);
    const session = await createEnrollmentSession(ctx, org.id);
    const before = await countRows(ctx.sql, 'enrollment_sessions');
    for (const [method, path, body] of [
      [
        'POST',
        `/api/v1/organizations/${org.id}/enrollment-sessions`,
        { template_id: TEMPLATES.debianStandard, expires_at: inOneDay(), max_devices: 5 },
      ],
      ['GET', `/api/v1/organizations/${org.id}/enrollment-sessions`, undefined],
      ['GET', `/api/v1/enrollment-sessions/${session.id}`, undefined],
      ['POST', `/api/v1/enrollment-sessions/${session.id}/revoke`, undefined],
    ] as const) {
      const res = await ctx.request(method, path, { token, body });
      expect(res.status, `${method} ${path}`).toBe(401);
      expect(res.body.error).toBe('unauthorized');
    }
    expect(await countRows(ctx.sql, 'enrollment_sessions')).toBe(before);
    const [row] = await ctx.sql`select revoked_at from enrollment_sessions where id = ${session.id}`;
    expect(row!.revoked_at).toBeNull();
  });
});
