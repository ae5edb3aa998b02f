/**
 * The fuzzer over the service's own OpenAPI document (test/support/fuzz.ts): no answer is
 * a 5xx, every 4xx is the registry's error body, and nothing a refused request sends is
 * written. Seeded and bounded: the seed is printed first, `FUZZ_SEED=<seed>` replays it.
 * The self-tests add a documented route that throws on one input only the fuzzer makes,
 * and a twin of it that does not throw, so the fuzzer is seen to find a 500 and only that;
 * and a third that writes before it checks its input, so a refused request's write is seen.
 */
import { z } from '@hono/zod-openapi';
import type { MiddlewareHandler } from 'hono';
import { beforeAll, describe, expect, it } from 'vitest';
import { defineRoute, newRouter } from '../../api/access/route.ts';
import { ADMIN_TOKEN, testApp, useTestApp, writeHeartbeats } from '../support/app.ts';
import { tenantFixture, type TenantFixture } from '../support/access.ts';
import { activateDevice } from '../support/activation.ts';
import { activationCodeOf } from '../support/builders.ts';
import { answerProblem, fuzz, fuzzSeed } from '../support/fuzz.ts';

// Failed activations are counted per client; the fuzzer's many must not turn into 429s that hide the rest.
const ctx = useTestApp({ activation: { maxFailures: 1_000_000, windowSeconds: 600, trustProxy: false } });
const seed = fuzzSeed(process.env.FUZZ_SEED);

let own: TenantFixture;
let other: TenantFixture;
let known: Record<string, string>;
beforeAll(async () => {
  console.log(`fuzz: seed ${seed} (replay with FUZZ_SEED=${seed})`);
  own = await tenantFixture(ctx);
  other = await tenantFixture(ctx);
  // An activated device that has not bootstrapped yet, so resolve gets past its checks.
  const fresh = await activateDevice(ctx, own.organizationId);
  known = { code: await activationCodeOf(ctx, own.organizationId), device_id: fresh.device_id };
});

async function documentOf(app: { request(url: string): Response | Promise<Response> }) {
  const res = await app.request('/api/v1/openapi.json');
  expect(res.status).toBe(200);
  return res.json();
}

describe('the fuzzer', () => {
  it('finds no 5xx, no answer outside the error registry and no write by a refused request', async () => {
    const started = performance.now();
    const report = await fuzz({
      app: ctx.app,
      sql: ctx.sql,
      settle: () => writeHeartbeats(ctx),
      doc: await documentOf(ctx.app),
      seed,
      own,
      other,
      adminToken: ADMIN_TOKEN,
      known,
      extraRefused: 6,
      extraFree: 4,
    });
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    console.log(
      `fuzz: seed ${seed}: ${report.requests} requests over ${report.operations} operations in ${seconds} s, ${report.findings.length} findings; statuses ${JSON.stringify(report.statuses)}`,
    );
    expect(report.operations).toBeGreaterThan(50);
    expect(report.findings, `seed ${seed}`).toEqual([]);
  }, 120_000);

  /**
   * A test app with one more documented route, a probe: `sound` answers every valid body,
   * `throws` fails on a name of its maximum length (a valid input only boundary values
   * reach), `writes` writes a row before its input is checked, so refusals write too.
   */
  function appWithProbe(mode: 'sound' | 'throws' | 'writes') {
    const app = testApp(ctx.sql, ctx.config);
    const writeFirst: MiddlewareHandler = async (_c, next) => {
      if (mode === 'writes') await ctx.sql`insert into fuzz_probe_writes default values`;
      await next();
    };
    const route = defineRoute({
      method: 'post',
      path: '/fuzz-probe',
      operationId: 'fuzzProbe',
      tags: ['Test'],
      access: 'public',
      middleware: [writeFirst] as const,
      request: {
        body: {
          required: true,
          content: { 'application/json': { schema: z.strictObject({ name: z.string().min(1).max(12) }) } },
        },
      },
      responses: {
        200: { description: 'ok', content: { 'application/json': { schema: z.object({ ok: z.boolean() }) } } },
      },
    });
    const router = newRouter();
    router.openapi(route, (c) => {
      if (mode === 'throws' && c.req.valid('json').name.length === 12) throw new Error('the probe failed');
      return c.json({ ok: true }, 200);
    });
    app.route('/api/v1', router);
    return app;
  }

  async function probeFindings(mode: 'sound' | 'throws' | 'writes') {
    const app = appWithProbe(mode);
    const doc = await documentOf(app);
    expect(Object.keys(doc.paths)).toContain('/api/v1/fuzz-probe');
    const report = await fuzz({
      app,
      sql: ctx.sql,
      settle: () => writeHeartbeats(ctx),
      doc,
      seed,
      own,
      other,
      adminToken: ADMIN_TOKEN,
      extraRefused: 2,
      extraFree: 2,
      only: (op) => op.path === '/api/v1/fuzz-probe',
    });
    expect(report.operations).toBe(1);
    return report.findings;
  }

  it('reports the 500 of a documented route that throws, and nothing for its twin that does not', async () => {
    await ctx.sql`create table if not exists fuzz_probe_writes (at timestamptz not null default now())`;
    expect(await probeFindings('sound')).toEqual([]);
    const findings = await probeFindings('throws');
    expect(findings.length).toBeGreaterThan(0);
    expect(findings.every((f) => f.startsWith('POST /api/v1/fuzz-probe') && f.includes(': 500 '))).toBe(true);
  });

  it('reports a write by refused requests', async () => {
    await ctx.sql`create table if not exists fuzz_probe_writes (at timestamptz not null default now())`;
    expect(await probeFindings('writes')).toEqual([
      'POST /api/v1/fuzz-probe: a refused request changed fuzz_probe_writes',
    ]);
  });

  it("holds 4xx answers to the registry: a JSON error body, a registered code, that code's status", () => {
    const json = 'application/json';
    expect(answerProblem(404, '{"error":"not_found","message":"device x not found"}', json)).toBeNull();
    expect(answerProblem(409, '{"error":"device_archived","message":"archived"}', json)).toBeNull();
    expect(answerProblem(409, '{"error":"not_found","message":"x"}', json)).toMatch(/registered as 404/);
    expect(answerProblem(400, '{"error":"bad_input","message":"x"}', json)).toMatch(/not the error shape/);
    expect(answerProblem(400, '{"error":"invalid_request"}', json)).toMatch(/not the error shape/);
    expect(answerProblem(400, '{"error":"invalid_request","message":"x","stack":"at"}', json)).toMatch(
      /not the error shape/,
    );
    expect(answerProblem(404, 'Not Found', 'text/plain')).toMatch(/text\/plain/);
    expect(answerProblem(502, '', '')).toMatch(/^502/);
    expect(answerProblem(201, '', '')).toBeNull();
  });
});
