import { describe, expect, it } from 'vitest';
import { createSql } from '../../api/db/client.ts';
import { createLogger } from '../../api/log.ts';
import { freePort } from '../../api/runtime/embedded_postgres.ts';
import { activateDevice } from '../support/activation.ts';
import { checkin, enrollAgent, report, unknownSecret } from '../support/agent.ts';
import { request, testApp, testConfig, useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';

const METRICS_TOKEN = 'metrics-token-0123456789abcdefghijklmnopqrstuvwxyz';
const ctx = useTestApp({ metricsToken: METRICS_TOKEN, agentPollIntervalSeconds: 60 });

async function scrape(token: string | null = METRICS_TOKEN) {
  return ctx.request('GET', '/metrics', { token });
}

/** The value of one sample of the text format, 0 when the series is absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const braces = line.startsWith(`${name}{`) ? line.slice(name.length + 1, line.lastIndexOf('} ')) : '';
    const have = Object.fromEntries([...braces.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return 0;
}

describe('GET /metrics', () => {
  it('answers the Prometheus text format to the operator token and to METRICS_TOKEN', async () => {
    for (const token of [METRICS_TOKEN, ctx.config.adminToken]) {
      const res = await scrape(token);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
      for (const name of [
        'fleet_http_requests_total',
        'fleet_http_request_duration_seconds',
        'fleet_agent_checkins_total',
        'fleet_devices',
        'fleet_devices_stale',
        'fleet_orders',
        'fleet_iso_builds',
        'fleet_jobs_queued',
        'fleet_webhook_deliveries_pending',
        'fleet_vulnerable_devices',
        'fleet_vulnerability_feed_age_seconds',
        'fleet_activations_total',
        'process_cpu_user_seconds_total',
        'process_resident_memory_bytes',
      ]) {
        expect(res.body as string).toContain(`# TYPE ${name} `);
      }
    }
  });

  it('refuses a missing or wrong token with 401, and METRICS_TOKEN opens nothing else', async () => {
    expect((await scrape(null)).status).toBe(401);
    expect((await scrape('wrong-token-0123456789abcdefghijklmnopqrstuvwxyz')).status).toBe(401);
    const res = await scrape(null);
    expect(res.body).toMatchObject({ error: 'unauthorized' });
    expect(res.headers.get('www-authenticate')).toBe('Bearer');
    expect((await ctx.request('GET', '/api/v1/organizations', { token: METRICS_TOKEN })).status).toBe(401);
  });

  it('labels requests by route template, never by the raw path', async () => {
    const id = crypto.randomUUID();
    expect((await ctx.request('GET', `/api/v1/devices/${id}`)).status).toBe(404);
    expect((await ctx.request('GET', `/api/v1/no-such/${id}`)).status).toBe(404);
    const text = (await scrape()).body as string;
    expect(text).not.toContain(id);
    expect(
      sample(text, 'fleet_http_requests_total', { method: 'GET', route: '/api/v1/devices/{id}', status: '404' }),
    ).toBe(1);
    expect(
      sample(text, 'fleet_http_requests_total', { method: 'GET', route: 'unmatched', status: '404' }),
    ).toBeGreaterThanOrEqual(1);
    expect(
      sample(text, 'fleet_http_request_duration_seconds_count', { method: 'GET', route: '/api/v1/devices/{id}' }),
    ).toBe(1);
  });

  it('counts check-ins and activations by result', async () => {
    const before = (await scrape()).body as string;
    const agent = await enrollAgent(ctx);
    expect((await checkin(ctx, agent.secret)).status).toBe(200);
    expect((await checkin(ctx, agent.secret)).status).toBe(200);
    expect((await checkin(ctx, unknownSecret())).status).toBe(401);
    const refused = await ctx.request('POST', '/api/v1/activate', {
      token: null,
      body: { code: 'AAAAA-AAAAA-AAAAA-AAAAA', serial: 'x' },
    });
    expect(refused.status).toBe(403);
    const after = (await scrape()).body as string;
    const delta = (name: string, labels: Record<string, string>) =>
      sample(after, name, labels) - sample(before, name, labels);
    expect(delta('fleet_agent_checkins_total', { result: 'ok' })).toBe(2);
    expect(delta('fleet_agent_checkins_total', { result: 'unauthorized' })).toBe(1);
    expect(delta('fleet_activations_total', { result: 'ok' })).toBe(1);
    expect(delta('fleet_activations_total', { result: 'refused' })).toBe(1);
  });

  it('reports devices by state, stale devices, ISO builds and queued jobs from one cached query', async () => {
    // A fresh app: its fleet cache is empty.
    const app = testApp(ctx.sql, ctx.config);
    const org = await createOrganization(ctx);
    const hook = await ctx.request('POST', `/api/v1/organizations/${org.id}/webhooks`, {
      body: { url: 'https://hooks.example.com/fleet', events: ['device.activated'] },
    });
    expect(hook.status).toBe(201);
    const active = await enrollAgent(ctx, { organizationId: org.id });
    const stale = await enrollAgent(ctx, { organizationId: org.id });
    const gone = await activateDevice(ctx, org.id);
    const archived = await activateDevice(ctx, org.id);
    await activateDevice(ctx, org.id); // enrolled: its agent never bootstrapped
    expect((await ctx.request('POST', `/api/v1/devices/${gone.device_id}/deprovision`)).status).toBe(200);
    expect((await ctx.request('POST', `/api/v1/devices/${archived.device_id}/archive`)).status).toBe(200);
    await ctx.sql`
      update device_heartbeats h set at = v.at
      from (values (${stale.device_id}::uuid, now() - interval '181 seconds'), (${active.device_id}::uuid, now())) v (id, at)
      where h.device_id = v.id`;
    // Stale counts from the later of the last check-in and the bootstrap.
    await ctx.sql`update devices set agent_secret_issued_at = now() - interval '1 hour' where id = ${stale.device_id}`;
    expect((await report(ctx, active.secret, [{ merkmal: 'firefox', event: 'applied' }])).status).toBe(200);
    expect((await report(ctx, stale.secret, [{ merkmal: 'qgis', event: 'remove_failed' }])).status).toBe(200);
    // The statuses (poll interval 60 s: stale after 180 s) and the orders' convergence of every
    // organization, from what the device reads say.
    const expected: Record<string, number> = { active: 0, deprovisioned: 0, archived: 0, enrolled: 0, stale: 0 };
    const orders: Record<string, number> = { converged: 0, pending: 0, failed: 0 };
    for (const { id } of await ctx.sql<{ id: string }[]>`select id from devices`) {
      const device = await ctx.request('GET', `/api/v1/devices/${id}`);
      expected[device.body.status] = expected[device.body.status]! + 1;
      if (device.body.status !== 'active' && device.body.status !== 'stale') continue;
      for (const item of (await ctx.request('GET', `/api/v1/devices/${id}/catalog`)).body.items) {
        orders[item.convergence] = orders[item.convergence]! + 1;
      }
    }
    const text = (await (await request(app, 'GET', '/metrics', { token: METRICS_TOKEN })).body) as string;
    for (const state of Object.keys(expected)) {
      expect(sample(text, 'fleet_devices', { state }), state).toBe(expected[state]);
    }
    expect(expected.stale).toBeGreaterThanOrEqual(1);
    expect(expected.enrolled).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'fleet_devices_stale')).toBe(expected.stale);
    for (const convergence of Object.keys(orders)) {
      expect(sample(text, 'fleet_orders', { convergence }), convergence).toBe(orders[convergence]);
    }
    expect(orders.converged).toBeGreaterThanOrEqual(1);
    expect(orders.failed).toBeGreaterThanOrEqual(1);
    expect(text).toContain('fleet_iso_builds{status="pending"}');
    expect(sample(text, 'fleet_jobs_queued')).toBeGreaterThanOrEqual(4);
    const [webhooks] = await ctx.sql<{ n: number }[]>`
      select count(*)::int as n from webhook_deliveries where status = 'pending'`;
    expect(webhooks!.n).toBeGreaterThanOrEqual(4);
    expect(sample(text, 'fleet_webhook_deliveries_pending')).toBe(webhooks!.n);

    // Within the cache's few seconds a new device does not cost another query.
    await activateDevice(ctx, org.id);
    const cached = (await request(app, 'GET', '/metrics', { token: METRICS_TOKEN })).body as string;
    expect(sample(cached, 'fleet_devices', { state: 'enrolled' })).toBe(expected.enrolled);
  });
});

describe('GET /api/v1/health/live', () => {
  it('answers 200 {"status":"ok"} without a credential and without the database', async () => {
    const port = await freePort();
    const deadSql = createSql(`postgres://nobody:nothing@127.0.0.1:${port}/none`, { max: 1 });
    try {
      const app = testApp(deadSql, testConfig());
      const live = await request(app, 'GET', '/api/v1/health/live', { token: null });
      expect(live.status).toBe(200);
      expect(live.body).toEqual({ status: 'ok' });
      const ready = await request(app, 'GET', '/api/v1/health', { token: null });
      expect(ready.status).toBe(503);
    } finally {
      await deadSql.end({ timeout: 1 });
    }
  });
});

describe('access log', () => {
  it('writes one info line per admin request with the route template, never the id', async () => {
    const lines: string[] = [];
    const app = testApp(
      ctx.sql,
      ctx.config,
      createLogger('info', (l) => lines.push(l)),
    );
    const id = crypto.randomUUID();
    // An unknown query parameter is refused (400) before the device is looked up.
    const res = await request(app, 'GET', `/api/v1/devices/${id}?secret=abc`);
    expect(res.status).toBe(400);
    expect(lines).toHaveLength(1);
    const line = JSON.parse(lines[0]!);
    expect(line).toMatchObject({
      level: 'info',
      msg: 'request',
      method: 'GET',
      route: '/api/v1/devices/{id}',
      status: 400,
    });
    expect(typeof line.request_id).toBe('string');
    expect(typeof line.ms).toBe('number');
    expect(lines[0]).not.toContain(id);
    expect(lines[0]).not.toContain('secret=abc');
  });

  it('logs a check-in only when it fails', async () => {
    const lines: string[] = [];
    const app = testApp(
      ctx.sql,
      ctx.config,
      createLogger('info', (l) => lines.push(l)),
    );
    const agent = await enrollAgent(ctx);
    expect((await request(app, 'POST', '/api/v1/agent/checkin', { token: agent.secret })).status).toBe(200);
    expect(lines).toEqual([]);
    const secret = unknownSecret();
    expect((await request(app, 'POST', '/api/v1/agent/checkin', { token: secret })).status).toBe(401);
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ route: '/api/v1/agent/checkin', status: 401 });
    expect(lines[0]).not.toContain(secret);
  });
});
