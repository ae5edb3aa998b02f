import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { clientAddress } from '../../api/activation/rate_limit.ts';
import { createSql } from '../../api/db/client.ts';
import { request, testApp, testConfig, useTestApp } from '../support/app.ts';
import { activateDevice, createEnrollmentSession, newSerial, TEMPLATES } from '../support/activation.ts';
import { activationCodeOf, createOrganization } from '../support/builders.ts';
import { countRows } from '../support/db.ts';

const limit = { maxFailures: 3, windowSeconds: 600, trustProxy: true };
const ctx = useTestApp({ activation: limit });

let addresses = 0;
/** A fresh client address per test, so the tests share no count. */
const newAddress = () => `198.51.100.${++addresses}`;

function activateFrom(address: string, body: unknown) {
  return ctx.request('POST', '/api/v1/activate', { token: null, body, headers: { 'x-forwarded-for': address } });
}

function resolveFrom(address: string, templateId: string, body: unknown) {
  return ctx.request('POST', `/api/v1/templates/${templateId}/resolve`, {
    token: null,
    body,
    headers: { 'x-forwarded-for': address },
  });
}

const wrong = () => ({ code: '00000-00000-00000-00000', serial: newSerial() });

async function fail(address: string, times: number) {
  for (let i = 0; i < times; i++) {
    const res = await activateFrom(address, wrong());
    expect(res.status).toBe(403);
    expect(res.body.error).toBe('invalid_activation_code');
  }
}

describe('the limit of failed activations per client address', () => {
  it('refuses a right code with 429 and Retry-After once the limit is reached, and writes nothing', async () => {
    const org = await createOrganization(ctx);
    const code = await activationCodeOf(ctx, org.id);
    const address = newAddress();
    await fail(address, 3);
    const devices = await countRows(ctx.sql, 'devices');
    const res = await activateFrom(address, { code, serial: newSerial() });
    expect(res.status).toBe(429);
    expect(res.body.error).toBe('too_many_requests');
    const retryAfter = Number(res.headers.get('retry-after'));
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThan(590);
    expect(retryAfter).toBeLessThanOrEqual(600);
    expect(await countRows(ctx.sql, 'devices')).toBe(devices);
  });

  it('refuses a valid enrollment session too, without counting its quota', async () => {
    const org = await createOrganization(ctx);
    const session = await createEnrollmentSession(ctx, org.id);
    const address = newAddress();
    await fail(address, 3);
    const res = await activateFrom(address, { code: session.id, serial: newSerial() });
    expect(res.status).toBe(429);
    const [row] = await ctx.sql`select devices_used from enrollment_sessions where id = ${session.id}`;
    expect(row!.devices_used).toBe(0);
  });

  it('refuses resolve from a blocked address, even with a right code', async () => {
    const org = await createOrganization(ctx);
    const device = await activateDevice(ctx, org.id);
    const address = newAddress();
    await fail(address, 3);
    const res = await resolveFrom(address, TEMPLATES.debianStandard, {
      code: device.code,
      device_id: device.device_id,
    });
    expect(res.status).toBe(429);
    expect(res.body.error).toBe('too_many_requests');
    expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
    const [token] = await ctx.sql`select 1 from bootstrap_tokens where device_id = ${device.device_id}`;
    expect(token).toBeUndefined();
  });

  it('answers 429 before the body is validated', async () => {
    const address = newAddress();
    await fail(address, 3);
    expect((await activateFrom(address, {})).status).toBe(429);
    expect((await resolveFrom(address, 'not-a-uuid', { nonsense: true })).status).toBe(429);
  });

  it('counts failed resolves like failed activations', async () => {
    const org = await createOrganization(ctx);
    const device = await activateDevice(ctx, org.id);
    const address = newAddress();
    for (let i = 0; i < 3; i++) {
      const res = await resolveFrom(address, TEMPLATES.debianStandard, {
        code: crypto.randomUUID(),
        device_id: device.device_id,
      });
      expect(res.status).toBe(403);
    }
    expect((await activateFrom(address, { code: device.code, serial: newSerial() })).status).toBe(429);
  });

  it('does not count successes, bad input, or refusals other than the credential', async () => {
    const org = await createOrganization(ctx);
    const code = await activationCodeOf(ctx, org.id);
    const session = await createEnrollmentSession(ctx, org.id, { template_id: TEMPLATES.ubuntuStandard });
    const address = newAddress();
    for (let i = 0; i < 5; i++) expect((await activateFrom(address, { code, serial: newSerial() })).status).toBe(200);
    for (let i = 0; i < 5; i++) expect((await activateFrom(address, { code: '', serial: 'x' })).status).toBe(400);
    const device = await activateFrom(address, { code, serial: newSerial() });
    for (let i = 0; i < 3; i++) {
      expect((await resolveFrom(address, crypto.randomUUID(), { code, device_id: device.body.device_id })).status).toBe(
        404,
      );
      expect(
        (await resolveFrom(address, TEMPLATES.debianStandard, { code: session.id, device_id: device.body.device_id }))
          .status,
      ).toBe(403);
    }
    await fail(address, 2);
    expect((await activateFrom(address, { code, serial: newSerial() })).status).toBe(200);
    const [row] = await ctx.sql`
      select coalesce((select cardinality(failures) from activation_failure_counts
                       where client_key = ${address}), 0)::int as n`;
    expect(row!.n).toBe(2);
  });

  it('counts per address: another address is not affected', async () => {
    const org = await createOrganization(ctx);
    const code = await activationCodeOf(ctx, org.id);
    const blocked = newAddress();
    await fail(blocked, 3);
    expect((await activateFrom(blocked, { code, serial: newSerial() })).status).toBe(429);
    expect((await activateFrom(newAddress(), { code, serial: newSerial() })).status).toBe(200);
  });

  it('takes the first hop of X-Forwarded-For', async () => {
    const org = await createOrganization(ctx);
    const code = await activationCodeOf(ctx, org.id);
    const client = newAddress();
    for (const proxy of ['10.0.0.1', '10.0.0.2', '10.0.0.3']) {
      const res = await activateFrom(`${client}, ${proxy}`, wrong());
      expect(res.status).toBe(403);
    }
    expect((await activateFrom(client, { code, serial: newSerial() })).status).toBe(429);
  });

  it('forgets failures that left the window, and says when the address is free again', async () => {
    const org = await createOrganization(ctx);
    const code = await activationCodeOf(ctx, org.id);
    const address = newAddress();
    // The third most recent failure decides: it leaves the window in 100 seconds.
    await ctx.sql`
      insert into activation_failure_counts (client_key, failures) values (${address}, array[
        now() - interval '700 seconds', now() - interval '500 seconds',
        now() - interval '200 seconds', now() - interval '10 seconds'])`;
    const res = await activateFrom(address, { code, serial: newSerial() });
    expect(res.status).toBe(429);
    const retryAfter = Number(res.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(99);
    expect(retryAfter).toBeLessThanOrEqual(101);

    await ctx.sql`
      update activation_failure_counts set failures = array(select f - interval '101 seconds' from unnest(failures) f)
      where client_key = ${address}`;
    expect((await activateFrom(address, { code, serial: newSerial() })).status).toBe(200);
  });

  it('ignores X-Forwarded-For unless the proxy is trusted', async () => {
    const org = await createOrganization(ctx);
    const code = await activationCodeOf(ctx, org.id);
    const untrusting = testApp(ctx.sql, testConfig({ activation: { ...limit, trustProxy: false } }));
    const send = (address: string, body: unknown) =>
      request(untrusting, 'POST', '/api/v1/activate', { token: null, body, headers: { 'x-forwarded-for': address } });
    // Three different claimed addresses, one real client (no connection in-process: "unknown").
    for (let i = 0; i < 3; i++) expect((await send(newAddress(), wrong())).status).toBe(403);
    const res = await send(newAddress(), { code, serial: newSerial() });
    expect(res.status).toBe(429);
    await ctx.sql`delete from activation_failure_counts where client_key = 'unknown'`;
  });
});

describe('clientAddress', () => {
  async function addressOf(env: unknown, headers: Record<string, string> = {}, trustProxy = false): Promise<string> {
    const app = new Hono().get('/', (c) => c.text(clientAddress(c, trustProxy)));
    const res = await app.request('/', { headers }, env as object);
    return res.text();
  }

  it('reads the Node connection', async () => {
    expect(await addressOf({ incoming: { socket: { remoteAddress: '203.0.113.7' } } })).toBe('203.0.113.7');
  });

  it('reads the Deno connection', async () => {
    expect(await addressOf({ remoteAddr: { hostname: '2001:db8::1', port: 5555, transport: 'tcp' } })).toBe(
      '2001:db8::1',
    );
  });

  it("falls back to 'unknown', and takes X-Forwarded-For only when trusted", async () => {
    expect(await addressOf(undefined)).toBe('unknown');
    const node = { incoming: { socket: { remoteAddress: '203.0.113.7' } } };
    expect(await addressOf(node, { 'x-forwarded-for': '192.0.2.1, 203.0.113.7' })).toBe('203.0.113.7');
    expect(await addressOf(node, { 'x-forwarded-for': ' 192.0.2.1 , 203.0.113.7' }, true)).toBe('192.0.2.1');
    expect(await addressOf(node, { 'x-forwarded-for': '' }, true)).toBe('203.0.113.7');
  });
});

describe('the limit over a real Node server', () => {
  it('counts failures against the address of the connection', async () => {
    const app = testApp(ctx.sql, testConfig({ activation: { ...limit, trustProxy: false } }));
    const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
      const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
    });
    try {
      const { port } = server.address() as AddressInfo;
      const res = await fetch(`http://127.0.0.1:${port}/api/v1/activate`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-forwarded-for': '192.0.2.99' },
        body: JSON.stringify(wrong()),
      });
      expect(res.status).toBe(403);
      const keys = await ctx.sql<{ client_key: string }[]>`
        select client_key from activation_failure_counts where client_key like '%127.0.0.1'`;
      expect(keys.map((k) => k.client_key)).toEqual([expect.stringMatching(/^(::ffff:)?127\.0\.0\.1$/)]);
    } finally {
      await new Promise((done) => server.close(done));
    }
  });
});

describe('the limit under concurrency and behind one NAT address (a real Node server)', () => {
  const burstLimit = { maxFailures: 20, windowSeconds: 600, trustProxy: true };

  /**
   * A real server over a pool of its own (20 connections). The burst through one session
   * queues on the session's row lock, so on a busy machine its last claims wait seconds:
   * generous time limits here, since these tests are about the limit, not about latency.
   */
  async function withServer<T>(run: (base: string) => Promise<T>): Promise<T> {
    const sql = createSql(ctx.db.url, { max: 20, timeoutSeconds: 120, applicationName: 'fleet-burst' });
    const config = testConfig({ activation: burstLimit, databaseTimeoutSeconds: 120 });
    const app = testApp(sql, config);
    const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
      const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
    });
    try {
      return await run(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    } finally {
      await new Promise((done) => server.close(done));
      await sql.end({ timeout: 5 });
    }
  }

  const post = (base: string, address: string, body: unknown) =>
    fetch(`${base}/api/v1/activate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': address },
      body: JSON.stringify(body),
    });

  const burst = (n: number, send: (i: number) => Promise<Response>) =>
    Promise.all(
      Array.from({ length: n }, async (_, i) => {
        const res = await send(i);
        return { status: res.status, error: ((await res.json()) as { error?: string }).error };
      }),
    );

  const tally = (answers: Array<{ status: number; error?: string }>) => {
    const counts: Record<string, number> = {};
    for (const a of answers) {
      const key = `${a.status}${a.error ? ` ${a.error}` : ''}`;
      counts[key] = (counts[key] ?? 0) + 1;
    }
    return counts;
  };

  const limiterRows = async () =>
    (
      await ctx.sql<{ h: string }[]>`
      select count(*) || ':' || coalesce(md5(string_agg(t::text, ',' order by t::text)), '') as h
      from activation_failure_counts t`
    )[0]!.h;

  it('40 installers behind one address through a session with quota 40: 40 × 200, nothing written to the limiter', async () => {
    const org = await createOrganization(ctx);
    const session = await createEnrollmentSession(ctx, org.id, { max_devices: 40 });
    const address = newAddress();
    const before = await limiterRows();
    const answers = await withServer((base) =>
      burst(40, () => post(base, address, { code: session.id, serial: newSerial() })),
    );
    expect(tally(answers)).toEqual({ 200: 40 });
    expect(await limiterRows()).toBe(before);
    const [row] = await ctx.sql`select devices_used from enrollment_sessions where id = ${session.id}`;
    expect(row!.devices_used).toBe(40);
  }, 240_000);

  it('40 through a session with quota 5: 5 × 200 and 35 × 403, no 429; the classic code still passes', async () => {
    const org = await createOrganization(ctx);
    const code = await activationCodeOf(ctx, org.id);
    const session = await createEnrollmentSession(ctx, org.id, { max_devices: 5 });
    const address = newAddress();
    const before = await limiterRows();
    await withServer(async (base) => {
      const answers = await burst(40, () => post(base, address, { code: session.id, serial: newSerial() }));
      expect(tally(answers)).toEqual({ 200: 5, '403 invalid_activation_code': 35 });
      // A full session is known: 40 more refusals do not count either.
      const again = await burst(40, () => post(base, address, { code: session.id, serial: newSerial() }));
      expect(tally(again)).toEqual({ '403 invalid_activation_code': 40 });
      expect((await post(base, address, { code, serial: newSerial() })).status).toBe(200);
    });
    expect(await limiterRows()).toBe(before);
    // A revoked or expired session is known too, and does not count either.
    expect((await ctx.request('POST', `/api/v1/enrollment-sessions/${session.id}/revoke`)).status).toBe(200);
    for (let i = 0; i < 25; i++) {
      expect((await activateFrom(address, { code: session.id, serial: newSerial() })).status).toBe(403);
    }
    expect((await activateFrom(address, { code, serial: newSerial() })).status).toBe(200);
    expect(await limiterRows()).toBe(before);
  }, 240_000);

  it("40 with the organization's code and distinct serials: 40 × 200, then 40 resolves: 40 × 200", async () => {
    const org = await createOrganization(ctx);
    const code = await activationCodeOf(ctx, org.id);
    const address = newAddress();
    const before = await limiterRows();
    await withServer(async (base) => {
      const devices: string[] = [];
      const answers = await burst(40, async () => {
        const res = await post(base, address, { code, serial: newSerial() });
        if (res.status === 200) devices.push(((await res.clone().json()) as { device_id: string }).device_id);
        return res;
      });
      expect(tally(answers)).toEqual({ 200: 40 });
      const resolved = await burst(40, (i) =>
        fetch(`${base}/api/v1/templates/${TEMPLATES.debianStandard}/resolve`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-forwarded-for': address },
          body: JSON.stringify({ code, device_id: devices[i] }),
        }),
      );
      expect(tally(resolved)).toEqual({ 200: 40 });
    });
    expect(await limiterRows()).toBe(before);
  }, 240_000);

  it('200 concurrent unknown codes: at most the limit × 403, 429 for the rest, then a right code gets 429', async () => {
    const org = await createOrganization(ctx);
    const code = await activationCodeOf(ctx, org.id);
    const address = newAddress();
    await withServer(async (base) => {
      const answers = await burst(200, () => post(base, address, wrong()));
      const counts = tally(answers);
      const forbidden = counts['403 invalid_activation_code'] ?? 0;
      expect(forbidden).toBeGreaterThan(0);
      expect(forbidden).toBeLessThanOrEqual(burstLimit.maxFailures);
      expect(counts['429 too_many_requests']).toBe(200 - forbidden);
      const [row] = await ctx.sql`
        select cardinality(failures)::int as n from activation_failure_counts where client_key = ${address}`;
      expect(row!.n).toBe(forbidden);
      const right = await post(base, address, { code, serial: newSerial() });
      expect(right.status).toBe(429);
      expect(right.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
      console.log(`burst of 200 unknown codes from one address: ${JSON.stringify(counts)}`);
    });
    expect(await countRows(ctx.sql, 'devices')).toBeGreaterThan(0);
  }, 240_000);

  it('guesses racing right codes: no right code passes once the guesses reached the limit', async () => {
    const org = await createOrganization(ctx);
    const code = await activationCodeOf(ctx, org.id);
    const address = newAddress();
    await withServer(async (base) => {
      const answers = await burst(200, (i) =>
        post(base, address, i % 10 === 0 ? { code, serial: newSerial() } : wrong()),
      );
      const counts = tally(answers);
      expect(counts['403 invalid_activation_code'] ?? 0).toBeLessThanOrEqual(burstLimit.maxFailures);
      expect(
        Object.keys(counts).every((k) => ['200', '403 invalid_activation_code', '429 too_many_requests'].includes(k)),
      ).toBe(true);
      // Once the count is full, every later attempt is 429: a right code is answered 200 only
      // while fewer than the limit of guesses were counted (as if the attempts came one by one).
      expect((await post(base, address, { code, serial: newSerial() })).status).toBe(429);
      console.log(`burst of 180 unknown and 20 right codes from one address: ${JSON.stringify(counts)}`);
    });
  }, 240_000);
});

describe('pruning of idle addresses', () => {
  it('every guess deletes the rows of other addresses whose failures all left the window, and nothing else', async () => {
    const idle = newAddress();
    const recent = newAddress();
    await ctx.sql`
      insert into activation_failure_counts (client_key, failures) values
        (${idle}, array[now() - interval '700 seconds']),
        (${`${idle}-empty`}, array[]::timestamptz[]),
        (${recent}, array[now() - interval '700 seconds', now() - interval '10 seconds'])`;
    const keys = async () =>
      (
        await ctx.sql<{ client_key: string }[]>`
          select client_key from activation_failure_counts
          where client_key in (${idle}, ${`${idle}-empty`}, ${recent})`
      ).map((r) => r.client_key);
    // A success and a known refusal write nothing, so they prune nothing either.
    const org = await createOrganization(ctx);
    expect(
      (await activateFrom(newAddress(), { code: await activationCodeOf(ctx, org.id), serial: newSerial() })).status,
    ).toBe(200);
    expect((await keys()).sort()).toEqual([idle, `${idle}-empty`, recent].sort());
    await fail(newAddress(), 1);
    expect(await keys()).toEqual([recent]);
  });
});
