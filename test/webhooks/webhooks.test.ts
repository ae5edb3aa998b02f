/**
 * Webhook subscriptions (api/webhooks/README.md): created with a secret shown once and kept sealed,
 * listed without it, deleted, tenant-isolated and audited; URLs checked at creation.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { isPrivateAddress, webhookUrlProblem } from '../../api/webhooks/url_policy.ts';
import { createApiKey, databaseFingerprint, tenantFixture, type TenantFixture } from '../support/access.ts';
import { useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';

const ctx = useTestApp();

let mine: TenantFixture;
let theirs: TenantFixture;
beforeAll(async () => {
  mine = await tenantFixture(ctx);
  theirs = await tenantFixture(ctx);
});

function createWebhook(organizationId: string, body: unknown, token?: string) {
  return ctx.request('POST', `/api/v1/organizations/${organizationId}/webhooks`, { body, token });
}

describe('creating a webhook', () => {
  it('answers 201 with the secret once; the list and the database never show it', async () => {
    const org = (await createOrganization(ctx)).id as string;
    const res = await createWebhook(org, {
      url: 'https://tickets.example.com/hooks/fleet',
      events: ['device.activated', 'iso_build.completed'],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(
      ['created_at', 'disabled_at', 'events', 'id', 'organization_id', 'pending_deliveries', 'secret', 'url'].sort(),
    );
    expect(res.body).toMatchObject({
      organization_id: org,
      url: 'https://tickets.example.com/hooks/fleet',
      events: ['device.activated', 'iso_build.completed'],
      disabled_at: null,
      pending_deliveries: 0,
    });
    const secret = res.body.secret as string;
    expect(secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);

    const list = await ctx.request('GET', `/api/v1/organizations/${org}/webhooks`);
    expect(list.status).toBe(200);
    expect(list.body.items).toHaveLength(1);
    expect(list.body.items[0]).not.toHaveProperty('secret');
    expect(JSON.stringify(list.body)).not.toContain(secret);

    const [row] = await ctx.sql<{ dump: string }[]>`select w::text as dump from webhooks w where id = ${res.body.id}`;
    expect(row!.dump).not.toContain(secret);
    expect(row!.dump).not.toContain(secret.slice(6));
    const audit = await ctx.request('GET', `/api/v1/organizations/${org}/audit-events?action=webhook.create`);
    expect(audit.body.items).toHaveLength(1);
    expect(audit.body.items[0]).toMatchObject({ target_type: 'webhook', target_id: res.body.id });
    expect(JSON.stringify(audit.body)).not.toContain(secret);
  });

  it.each([
    ['plain http', { url: 'http://tickets.example.com/hook', events: ['device.activated'] }, 'https'],
    ['a private address', { url: 'https://10.1.2.3/hook', events: ['device.activated'] }, 'private'],
    ['loopback', { url: 'https://127.0.0.1:8443/hook', events: ['device.activated'] }, 'private'],
    ['localhost', { url: 'https://localhost/hook', events: ['device.activated'] }, 'private'],
    ['link-local (cloud metadata)', { url: 'https://169.254.169.254/latest', events: ['order.applied'] }, 'private'],
    ['IPv6 loopback', { url: 'https://[::1]/hook', events: ['order.applied'] }, 'private'],
    ['IPv4-mapped IPv6', { url: 'https://[::ffff:10.0.0.1]/hook', events: ['order.applied'] }, 'private'],
    ['6to4 of loopback', { url: 'https://[2002:7f00:1::]/', events: ['order.applied'] }, 'private'],
    ['IPv4-translated loopback', { url: 'https://[::ffff:0:7f00:1]/', events: ['order.applied'] }, 'private'],
    ['Teredo to a private server', { url: 'https://[2001:0:a00:1::1]/', events: ['order.applied'] }, 'private'],
    ['Teredo from loopback', { url: 'https://[2001:0:808:808:0:0:80ff:fffe]/', events: ['order.applied'] }, 'private'],
    ['NAT64 of loopback', { url: 'https://[64:ff9b::7f00:1]/', events: ['order.applied'] }, 'private'],
    ['local-use NAT64', { url: 'https://[64:ff9b:1::808:808]/', events: ['order.applied'] }, 'private'],
    ['IPv4-compatible loopback', { url: 'https://[::127.0.0.1]/', events: ['order.applied'] }, 'private'],
    ['IPv4-mapped metadata', { url: 'https://[::ffff:a9fe:a9fe]/', events: ['order.applied'] }, 'private'],
    [
      'credentials in the URL',
      { url: 'https://user:pw@tickets.example.com/', events: ['order.applied'] },
      'credentials',
    ],
    ['another scheme', { url: 'ftp://tickets.example.com/', events: ['order.applied'] }, 'https'],
    ['no URL at all', { url: 'tickets.example.com/hook', events: ['order.applied'] }, 'absolute'],
  ])('refuses %s with 400 and writes nothing', async (_name, body, why) => {
    const before = await databaseFingerprint(ctx.sql);
    const res = await createWebhook(mine.organizationId, body);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request');
    expect(res.body.details[0].path).toEqual(['url']);
    expect(res.body.message).toContain(why);
    expect(await databaseFingerprint(ctx.sql)).toBe(before);
  });

  it.each([
    ['no events', { url: 'https://a.example.com/', events: [] }],
    ['an unknown event', { url: 'https://a.example.com/', events: ['device.exploded'] }],
    ['a repeated event', { url: 'https://a.example.com/', events: ['order.applied', 'order.applied'] }],
    ['an unknown field', { url: 'https://a.example.com/', events: ['order.applied'], secret: 'mine' }],
    ['a URL over 2048 characters', { url: `https://a.example.com/${'x'.repeat(2048)}`, events: ['order.applied'] }],
  ])('refuses %s with 400', async (_name, body) => {
    const res = await createWebhook(mine.organizationId, body);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request');
  });

  it('404 for an unknown organization', async () => {
    const res = await createWebhook(crypto.randomUUID(), { url: 'https://a.example.com/', events: ['order.applied'] });
    expect(res.status).toBe(404);
    expect(res.body.error).toBe('not_found');
  });
});

describe('who may use webhooks', () => {
  it("an organization's admin key manages its own; a viewer key is 403", async () => {
    const created = await createWebhook(
      mine.organizationId,
      { url: 'https://a.example.com/', events: ['order.applied'] },
      mine.adminKey,
    );
    expect(created.status).toBe(201);
    const viewer = await ctx.request('GET', `/api/v1/organizations/${mine.organizationId}/webhooks`, {
      token: mine.viewerKey,
    });
    expect(viewer.status).toBe(403);
    expect(viewer.body.error).toBe('forbidden');
    const deleted = await ctx.request('DELETE', `/api/v1/webhooks/${created.body.id}`, { token: mine.adminKey });
    expect(deleted.status).toBe(204);
  });

  it("another organization's key cannot list, read deliveries of or delete the webhook: 404, nothing changes", async () => {
    // A first use moves the key's last_used_at; the calls below must change nothing else.
    await ctx.request('GET', `/api/v1/organizations/${theirs.organizationId}/webhooks`, { token: theirs.adminKey });
    const before = await databaseFingerprint(ctx.sql);
    const list = await ctx.request('GET', `/api/v1/organizations/${mine.organizationId}/webhooks`, {
      token: theirs.adminKey,
    });
    expect(list.status).toBe(404);
    const deliveries = await ctx.request('GET', `/api/v1/webhooks/${mine.webhookId}/deliveries`, {
      token: theirs.adminKey,
    });
    expect(deliveries.status).toBe(404);
    const unknown = await ctx.request('GET', `/api/v1/webhooks/${crypto.randomUUID()}/deliveries`, {
      token: theirs.adminKey,
    });
    expect(deliveries.body.message.replace(/[0-9a-f-]{36}/, 'ID')).toBe(
      unknown.body.message.replace(/[0-9a-f-]{36}/, 'ID'),
    );
    const deleted = await ctx.request('DELETE', `/api/v1/webhooks/${mine.webhookId}`, { token: theirs.adminKey });
    expect(deleted.status).toBe(404);
    expect(deleted.body.error).toBe('not_found');
    expect(await databaseFingerprint(ctx.sql)).toBe(before);
  });
});

describe('listing deliveries', () => {
  it('400 for a cursor that is not one of this list', async () => {
    const res = await ctx.request('GET', `/api/v1/webhooks/${mine.webhookId}/deliveries?cursor=not-a-cursor`);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request');
  });

  it("404 for a delivery's attempts under an unknown webhook or an unknown delivery", async () => {
    const unknownWebhook = await ctx.request(
      'GET',
      `/api/v1/webhooks/${crypto.randomUUID()}/deliveries/${mine.webhookDeliveryId}/attempts`,
    );
    expect(unknownWebhook.status).toBe(404);
    const unknownDelivery = await ctx.request(
      'GET',
      `/api/v1/webhooks/${mine.webhookId}/deliveries/${crypto.randomUUID()}/attempts`,
    );
    expect(unknownDelivery.status).toBe(404);
    expect(unknownDelivery.body.error).toBe('not_found');
  });
});

describe('deleting a webhook', () => {
  it('204, audited; then 404; its deliveries go with it', async () => {
    const org = (await createOrganization(ctx)).id as string;
    const admin = await createApiKey(ctx, org, 'admin');
    const created = await createWebhook(org, { url: 'https://a.example.com/', events: ['device.activated'] });
    const res = await ctx.request('DELETE', `/api/v1/webhooks/${created.body.id}`, { token: admin.key });
    expect(res.status).toBe(204);
    expect((await ctx.request('DELETE', `/api/v1/webhooks/${created.body.id}`)).status).toBe(404);
    expect((await ctx.request('GET', `/api/v1/webhooks/${created.body.id}/deliveries`)).status).toBe(404);
    const audit = await ctx.request('GET', `/api/v1/organizations/${org}/audit-events?target_id=${created.body.id}`);
    expect(audit.body.items.map((e: { action: string }) => e.action)).toEqual(['webhook.delete', 'webhook.create']);
    expect(audit.body.items[0].actor).toMatchObject({ type: 'api_key', api_key_id: admin.id });
  });
});

describe('the URL policy', () => {
  const strict = { allowHttp: false, allowPrivate: false };
  const open = { allowHttp: true, allowPrivate: true };

  it('allows http only for a loopback host, and only when both switches say so', () => {
    expect(webhookUrlProblem('http://127.0.0.1:9000/hook', open)).toBeNull();
    expect(webhookUrlProblem('http://localhost:9000/hook', open)).toBeNull();
    expect(webhookUrlProblem('http://receiver.example.com/hook', open)).toContain('loopback');
    expect(webhookUrlProblem('http://127.0.0.1:9000/hook', { allowHttp: true, allowPrivate: false })).toContain(
      'private',
    );
    expect(webhookUrlProblem('https://10.0.0.8/hook', { allowHttp: false, allowPrivate: true })).toBeNull();
    expect(webhookUrlProblem('https://hooks.example.com/x', strict)).toBeNull();
  });

  it.each([
    ['10.0.0.1', true],
    ['172.16.5.4', true],
    ['172.32.0.1', false],
    ['192.168.1.1', true],
    ['100.64.0.1', true],
    ['127.0.0.53', true],
    ['169.254.169.254', true],
    ['0.0.0.0', true],
    ['224.0.0.1', true],
    ['8.8.8.8', false],
    ['93.184.215.14', false],
    ['::1', true],
    ['::', true],
    ['fe80::1', true],
    ['fd12:3456::1', true],
    ['::ffff:10.0.0.1', true],
    ['::ffff:a00:1', true],
    ['::ffff:8.8.8.8', false],
    ['64:ff9b::a9fe:a9fe', true],
    ['64:ff9b::808:808', false],
    ['64:ff9b:1::808:808', true],
    ['::ffff:0:7f00:1', true],
    ['::ffff:0:808:808', false],
    ['::127.0.0.1', true],
    ['2002:7f00:1::', true],
    ['2002:c0a8:101::1', true],
    ['2002:808:808::1', false],
    ['2001:0:a00:1::1', true],
    ['2001::808:808:0:0:80ff:fffe', true],
    ['2001:0:808:808:0:0:f7f7:f7f7', false],
    ['2606:4700:4700::1111', false],
    ['not-an-address', false],
  ])('%s is private: %s', (address, expected) => {
    expect(isPrivateAddress(address)).toBe(expected);
  });
});
