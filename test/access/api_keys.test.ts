/** Organization API keys (CONTRACT §12): lifecycle, roles, storage, throttled last use, the revoke race. */
import { describe, expect, it } from 'vitest';
import { createSql } from '../../api/db/client.ts';
import { hashSecret } from '../../api/http/crypto.ts';
import { request, testApp, useTestApp } from '../support/app.ts';
import { createApiKey } from '../support/access.ts';
import { createOrganization } from '../support/builders.ts';
import { countRows } from '../support/db.ts';
import { waitForLockWaiter } from '../support/agent.ts';
import { capturingLogger } from '../support/iso_builds.ts';

const ctx = useTestApp();

const keyRow = async (id: string) => {
  const [row] = await ctx.sql<{ key_hash: Uint8Array; last_used_at: Date | null; revoked_at: Date | null }[]>`
    select key_hash, last_used_at, revoked_at from api_keys where id = ${id}`;
  return row!;
};

describe('creating and listing keys', () => {
  it('shows the key once, stores only its SHA-256, and lists keys without it', async () => {
    const org = await createOrganization(ctx);
    const created = await ctx.request('POST', `/api/v1/organizations/${org.id}/api-keys`, {
      body: { name: 'Kundenportal', role: 'admin', expires_at: '2099-01-01T00:00:00Z' },
    });
    expect(created.status).toBe(201);
    const key = created.body.key as string;
    expect(key).toMatch(/^fpk_[A-Za-z0-9_-]{27,}$/);
    expect(created.body).toMatchObject({
      organization_id: org.id,
      name: 'Kundenportal',
      role: 'admin',
      prefix: key.slice(0, 12),
      expires_at: '2099-01-01T00:00:00.000Z',
      last_used_at: null,
      revoked_at: null,
    });
    expect(Buffer.from((await keyRow(created.body.id)).key_hash)).toEqual(Buffer.from(hashSecret(key)));
    const [stored] = await ctx.sql<{ text: string }[]>`select string_agg(t::text, ' ') as text from api_keys t`;
    expect(stored!.text).not.toContain(key);
    expect(stored!.text).not.toContain(key.slice(12));

    const list = await ctx.request('GET', `/api/v1/organizations/${org.id}/api-keys`);
    expect(list.status).toBe(200);
    expect(list.body.items).toHaveLength(1);
    expect(list.body.items[0]).not.toHaveProperty('key');
    expect(JSON.stringify(list.body)).not.toContain(key.slice(12));
  });

  it('refuses bad bodies with 400 and writes nothing', async () => {
    const org = await createOrganization(ctx);
    const before = await countRows(ctx.sql, 'api_keys');
    for (const body of [
      {},
      { name: 'x', role: 'owner' },
      { name: '', role: 'admin' },
      { name: 'x', role: 'admin', expires_at: '2001-01-01T00:00:00Z' },
      { name: 'x', role: 'admin', expires_at: 'tomorrow' },
      { name: 'x', role: 'admin', organization_id: org.id },
      { name: 'x', role: 'admin', key: 'fpk_chosen' },
    ]) {
      const res = await ctx.request('POST', `/api/v1/organizations/${org.id}/api-keys`, { body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error).toBe('invalid_request');
    }
    expect(await countRows(ctx.sql, 'api_keys')).toBe(before);
  });

  it('404s for an unknown organization', async () => {
    const res = await ctx.request('POST', `/api/v1/organizations/${crypto.randomUUID()}/api-keys`, {
      body: { name: 'x', role: 'admin' },
    });
    expect(res.status).toBe(404);
  });

  it('lets an organization admin manage its own keys, not a viewer', async () => {
    const org = await createOrganization(ctx);
    const admin = await createApiKey(ctx, org.id, 'admin');
    const viewer = await createApiKey(ctx, org.id, 'viewer');
    const made = await createApiKey(ctx, org.id, 'viewer', { token: admin.key });
    const before = await countRows(ctx.sql, 'api_keys');
    const refused = await ctx.request('POST', `/api/v1/organizations/${org.id}/api-keys`, {
      token: viewer.key,
      body: { name: 'x', role: 'admin' },
    });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toBe('forbidden');
    expect(await countRows(ctx.sql, 'api_keys')).toBe(before);
    expect((await ctx.request('POST', `/api/v1/api-keys/${made.id}/revoke`, { token: admin.key })).status).toBe(200);
  });
});

describe('using keys', () => {
  it('answers 401 unauthorized to a revoked key, and revoking twice keeps the first time', async () => {
    const org = await createOrganization(ctx);
    const key = await createApiKey(ctx, org.id, 'viewer');
    expect((await ctx.request('GET', `/api/v1/organizations/${org.id}`, { token: key.key })).status).toBe(200);
    const first = await ctx.request('POST', `/api/v1/api-keys/${key.id}/revoke`);
    expect(first.status).toBe(200);
    expect(first.body.revoked_at).not.toBeNull();
    const second = await ctx.request('POST', `/api/v1/api-keys/${key.id}/revoke`);
    expect(second.body.revoked_at).toBe(first.body.revoked_at);
    const res = await ctx.request('GET', `/api/v1/organizations/${org.id}`, { token: key.key });
    expect(res.status).toBe(401);
    expect(res.body.error).toBe('unauthorized');
    expect(JSON.stringify(res.body)).not.toContain(key.key);
  });

  it('answers 401 unauthorized to an expired key', async () => {
    const org = await createOrganization(ctx);
    const key = await createApiKey(ctx, org.id, 'admin', { expires_at: new Date(Date.now() + 60_000).toISOString() });
    expect((await ctx.request('GET', `/api/v1/organizations/${org.id}`, { token: key.key })).status).toBe(200);
    await ctx.sql`update api_keys set expires_at = now() - interval '1 second' where id = ${key.id}`;
    const res = await ctx.request('GET', `/api/v1/organizations/${org.id}`, { token: key.key });
    expect(res.status).toBe(401);
    expect(res.body.error).toBe('unauthorized');
  });

  it('moves last_used_at at most once a minute', async () => {
    const org = await createOrganization(ctx);
    const key = await createApiKey(ctx, org.id, 'viewer');
    expect((await keyRow(key.id)).last_used_at).toBeNull();
    await ctx.request('GET', `/api/v1/organizations/${org.id}`, { token: key.key });
    const first = (await keyRow(key.id)).last_used_at;
    expect(first).not.toBeNull();
    for (let i = 0; i < 5; i++) await ctx.request('GET', `/api/v1/organizations/${org.id}`, { token: key.key });
    expect((await keyRow(key.id)).last_used_at).toEqual(first);
    await ctx.sql`update api_keys set last_used_at = now() - interval '61 seconds' where id = ${key.id}`;
    await ctx.request('GET', `/api/v1/organizations/${org.id}`, { token: key.key });
    expect((await keyRow(key.id)).last_used_at!.getTime()).toBeGreaterThan(first!.getTime());
  });

  it('never writes a key into the log', async () => {
    const log = capturingLogger();
    const app = testApp(ctx.sql, ctx.config, log);
    const org = await createOrganization(ctx);
    const created = await request(app, 'POST', `/api/v1/organizations/${org.id}/api-keys`, {
      body: { name: 'x', role: 'admin' },
    });
    await request(app, 'GET', `/api/v1/organizations/${org.id}`, { token: created.body.key });
    await request(app, 'GET', `/api/v1/organizations/${org.id}/devices?cursor=broken`, { token: created.body.key });
    await request(app, 'POST', `/api/v1/organizations`, { token: created.body.key, body: { name: 'x' } });
    expect(log.lines.join('\n')).not.toContain(created.body.key.slice(12));
  });

  it('is one credential of three: an organization key is no agent secret, and an agent secret no key', async () => {
    const org = await createOrganization(ctx);
    const key = await createApiKey(ctx, org.id, 'admin');
    const checkin = await ctx.request('POST', '/api/v1/agent/checkin', { token: key.key });
    expect(checkin.status).toBe(401);
    expect(checkin.body.error).toBe('invalid_agent_secret');
  });

  it('never lets a request through after the revoke returned (uses racing 10 revokes)', async () => {
    const org = await createOrganization(ctx);
    const key = await createApiKey(ctx, org.id, 'admin');
    let revokedAt = Number.POSITIVE_INFINITY;
    let answeredAt: Date | undefined;
    const results: { startedAt: number; status: number }[] = [];
    let keyWorked!: () => void;
    const worked = new Promise<void>((resolve) => (keyWorked = resolve));
    let revokeReturned!: () => void;
    const revoked = new Promise<void>((resolve) => (revokeReturned = resolve));
    const use = async (c: number, i: number) => {
      const startedAt = performance.now();
      const res =
        (c + i) % 2 === 0
          ? await ctx.request('GET', `/api/v1/organizations/${org.id}`, { token: key.key })
          : await ctx.request('PATCH', `/api/v1/organizations/${org.id}`, {
              token: key.key,
              body: { notizen: `use ${c}.${i}` },
            });
      results.push({ startedAt, status: res.status });
      if (res.status === 200) keyWorked();
    };
    // Ten clients: five requests each racing the revokes, then two each once a revoke has
    // returned, so the check below always has late requests to check (20 at least).
    const client = async (c: number) => {
      for (let i = 0; i < 5; i++) {
        await new Promise((r) => setTimeout(r, (c + i) % 4));
        await use(c, i);
      }
      await revoked;
      for (let i = 5; i < 7; i++) await use(c, i);
    };
    // The revokes start once the key has worked, and race the clients' requests in flight.
    const revokes = async () => {
      await worked;
      await Promise.all(
        Array.from({ length: 10 }, async (_, i) => {
          await new Promise((r) => setTimeout(r, i % 5));
          const res = await ctx.request('POST', `/api/v1/api-keys/${key.id}/revoke`);
          expect(res.status).toBe(200);
          if (revokedAt === Number.POSITIVE_INFINITY) {
            revokedAt = performance.now();
            // The database's clock, read after the answer: a write's audit event carries the
            // start of its transaction.
            answeredAt ??= (await ctx.sql<{ t: Date }[]>`select clock_timestamp() as t`)[0]!.t;
          }
          revokeReturned();
        }),
      );
    };
    await Promise.all([...Array.from({ length: 10 }, (_, c) => client(c)), revokes()]);
    const late = results.filter((r) => r.startedAt > revokedAt);
    expect(late.length).toBeGreaterThanOrEqual(20);
    expect(late.filter((r) => r.status !== 401)).toEqual([]);
    expect(results.filter((r) => r.startedAt < revokedAt && r.status === 200).length).toBeGreaterThan(0);
    expect(results.filter((r) => r.status !== 200 && r.status !== 401)).toEqual([]);
    // Every write the key made began before the first revoke answered: none is recorded later.
    const [row] = await ctx.sql<{ late: number }[]>`
      select count(*)::int as late from audit_events
      where actor->>'api_key_id' = ${key.id} and created_at > ${answeredAt!}`;
    expect(row!.late).toBe(0);
  });

  it('revokes at once while a write with the key is stalled in flight; the write, begun before, may finish', async () => {
    const org = await createOrganization(ctx);
    const key = await createApiKey(ctx, org.id, 'admin');
    // A peer holds the organization's row, so the key's write stalls inside its transaction.
    const peer = createSql(ctx.db.url, { max: 1, timeoutSeconds: 30 });
    let finish!: () => void;
    const finished = new Promise<void>((r) => (finish = r));
    let held!: () => void;
    const holding = new Promise<void>((r) => (held = r));
    const hold = peer.begin(async (tx) => {
      await tx`select 1 from organizations where id = ${org.id} for update`;
      held();
      await finished;
    });
    try {
      await holding;
      const write = ctx.request('PATCH', `/api/v1/organizations/${org.id}`, {
        token: key.key,
        body: { notizen: 'stalled' },
      });
      await waitForLockWaiter(ctx.sql, 'update organizations');
      const start = performance.now();
      const revoke = await ctx.request('POST', `/api/v1/api-keys/${key.id}/revoke`);
      expect(revoke.status).toBe(200);
      expect(performance.now() - start).toBeLessThan(1000);
      const late = await ctx.request('GET', `/api/v1/organizations/${org.id}`, { token: key.key });
      expect(late.status).toBe(401);
      finish();
      await hold;
      expect((await write).status).toBe(200);
    } finally {
      finish();
      await peer.end();
    }
  });

  it('revokes a key that writes without pause: the revoke waits for none of the writes, so only a round or two pass meanwhile', async () => {
    const org = await createOrganization(ctx);
    const key = await createApiKey(ctx, org.id, 'admin');
    // Eight clients write with the key back to back, so some write is under way at almost
    // every instant. A revoke that waited for the writes could wait until they stop.
    let revokeDone = false;
    let writesDuringRevoke = 0;
    let revoking = false;
    const statuses: number[] = [];
    let started!: () => void;
    const writing = new Promise<void>((resolve) => (started = resolve));
    const client = async (c: number) => {
      for (let i = 0; !revokeDone && i < 400; i++) {
        const res = await ctx.request('PATCH', `/api/v1/organizations/${org.id}`, {
          token: key.key,
          body: { notizen: `use ${c}.${i}` },
        });
        statuses.push(res.status);
        if (revoking) writesDuringRevoke++;
        if (res.status === 200) started();
      }
    };
    const revoke = async () => {
      await writing;
      revoking = true;
      const res = await ctx.request('POST', `/api/v1/api-keys/${key.id}/revoke`);
      revokeDone = true;
      expect(res.status).toBe(200);
    };
    await Promise.all([...Array.from({ length: 8 }, (_, c) => client(c)), revoke()]);
    // The writes in flight when the revoke began, a round or two of each client, not hundreds.
    expect(writesDuringRevoke).toBeLessThan(100);
    expect(statuses.filter((s) => s !== 200 && s !== 401)).toEqual([]);
  });
});
