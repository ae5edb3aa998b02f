/**
 * Shedding by waiting time (CONTRACT §14): while the event loop runs late, check-ins are
 * refused at once with 503 and a jittered Retry-After; once it keeps time, they are served.
 */
import { describe, expect, it } from 'vitest';
import { eventLoopDelayMs, TickDrift } from '../../api/http/shed.ts';
import { createLogger } from '../../api/log.ts';
import { enrollAgent, expectShed } from '../support/agent.ts';
import { request, testApp, testConfig, useTestApp } from '../support/app.ts';

const ctx = useTestApp();

function busy(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // a turn of the loop that takes `ms`
  }
}

describe('shedding on the event loop delay', () => {
  it('refuses check-ins while the loop runs late, liveness still served, and serves them again after', async () => {
    const config = testConfig({ checkin: { maxInFlight: 1000, retryAfterSeconds: 30, maxEventLoopDelayMs: 50 } });
    const lines: string[] = [];
    const app = testApp(
      ctx.sql,
      config,
      createLogger('info', (line) => lines.push(line)),
    );
    const agent = await enrollAgent(ctx);
    expect((await request(app, 'POST', '/api/v1/agent/checkin', { token: agent.secret })).status).toBe(200);
    eventLoopDelayMs();
    await new Promise((r) => setTimeout(r, 100));
    // Turns of 150 ms, tick after tick: an overloaded loop.
    for (let i = 0; i < 3; i++) {
      busy(150);
      await new Promise((r) => setTimeout(r, 0));
    }
    expect(eventLoopDelayMs()).toBeGreaterThan(50);
    const refused = await request(app, 'POST', '/api/v1/agent/checkin', { token: agent.secret });
    expectShed(refused);
    expect((await request(app, 'GET', '/api/v1/health/live', { token: null })).status).toBe(200);

    // The loop keeps time again: served.
    const deadline = Date.now() + 5000;
    while (eventLoopDelayMs() > 50 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect((await request(app, 'POST', '/api/v1/agent/checkin', { token: agent.secret })).status).toBe(200);

    // The refusal is logged within a second, counted by the bound that refused it.
    while (!lines.some((l) => l.includes('"check-ins refused"')) && Date.now() < deadline + 2000)
      await new Promise((r) => setTimeout(r, 50));
    const logged = JSON.parse(lines.find((l) => l.includes('"check-ins refused"'))!);
    expect(logged).toMatchObject({ count: 1, in_flight: 0, event_loop_delay: 1 });
  });

  // The rule on a clock of its own: on real timers a busy test machine can make the tick
  // before the late one late as well.
  it('counts a single late tick (a host that paused the process once) as no delay, two in a row as the delay', () => {
    const drift = new TickDrift(0, 20);
    for (const now of [20, 40, 60]) drift.tick(now);
    expect(drift.ms).toBe(0);
    drift.tick(60 + 20 + 150); // one tick 150 ms late
    expect(drift.ms).toBe(0);
    drift.tick(230 + 20); // on time again
    expect(drift.ms).toBe(0);
    drift.tick(250 + 20 + 150); // late…
    drift.tick(420 + 20 + 120); // …and late again: an overloaded loop
    expect(drift.ms).toBe(120);
  });
});
