import { Buffer } from 'node:buffer';
import { describe, expect, it } from 'vitest';
import { hashSecret } from '../../api/http/crypto.ts';
import { activateDevice, resolveDevice } from '../support/activation.ts';
import { useTestApp } from '../support/app.ts';
import { bootstrapAgent, checkin, enrollAgent, insertBootstrapToken } from '../support/agent.ts';
import { createOrganization } from '../support/builders.ts';

const ctx = useTestApp();

async function resolvedDevice() {
  const org = await createOrganization(ctx);
  const activated = await activateDevice(ctx, org.id);
  const blueprint = await resolveDevice(ctx, { code: activated.code, device_id: activated.device_id });
  return { org, ...activated, token: blueprint.agent.bootstrap_token };
}

function bootstrap(body: unknown) {
  return ctx.request('POST', '/api/v1/agent/bootstrap', { token: null, body });
}

async function secretState(deviceId: string) {
  const [row] = await ctx.sql`
    select d.agent_secret_hash, d.agent_secret_issued_at,
           (select count(*)::int from bootstrap_tokens t where t.device_id = d.id) as tokens
    from devices d where d.id = ${deviceId}`;
  return row as { agent_secret_hash: Buffer | null; agent_secret_issued_at: Date | null; tokens: number };
}

describe('POST /api/v1/agent/bootstrap', () => {
  it('issues a 256-bit secret once, stores only its SHA-256 and uses the token up', async () => {
    const d = await resolvedDevice();
    const res = await bootstrap({ device_id: d.device_id, bootstrap_token: d.token });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(['agent_secret', 'device_id']);
    expect(res.body.device_id).toBe(d.device_id);
    expect(res.body.agent_secret).toMatch(/^[A-Za-z0-9_-]{43}$/);

    const state = await secretState(d.device_id);
    expect(Buffer.from(state.agent_secret_hash!).equals(Buffer.from(hashSecret(res.body.agent_secret)))).toBe(true);
    expect(state.agent_secret_issued_at).toBeInstanceOf(Date);
    expect(state.tokens).toBe(0);

    const device = await ctx.request('GET', `/api/v1/devices/${d.device_id}`);
    expect(device.status).toBe(200);
    expect(device.body.agent_secret_issued_at).toBe(state.agent_secret_issued_at!.toISOString());
    expect(device.body).not.toHaveProperty('agent_secret_hash');
    expect(JSON.stringify(device.body)).not.toContain(res.body.agent_secret);
  });

  it('stores the hardware sent with the bootstrap', async () => {
    const d = await resolvedDevice();
    await bootstrapAgent(ctx, { device_id: d.device_id, bootstrap_token: d.token }, { cpu: 'i5', memory_mb: 8192 });
    const hw = await ctx.request('GET', `/api/v1/devices/${d.device_id}/hardware`);
    expect(hw.body.hardware).toEqual({ cpu: 'i5', memory_mb: 8192 });
    expect((await ctx.request('GET', `/api/v1/devices/${d.device_id}`)).body.hostname).toBeNull();
  });

  it("takes the device's host name from the hardware sent with the bootstrap", async () => {
    const d = await resolvedDevice();
    await bootstrapAgent(ctx, { device_id: d.device_id, bootstrap_token: d.token }, { hostname: 'raum-3-pc-07' });
    expect((await ctx.request('GET', `/api/v1/devices/${d.device_id}`)).body.hostname).toBe('raum-3-pc-07');
  });

  it.each([
    ['the used token', (token: string) => token],
    ['a wrong token', (token: string) => token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A')],
  ])('answers a second bootstrap with %s 409 agent_already_bootstrapped and writes nothing', async (_case, tokenOf) => {
    const d = await resolvedDevice();
    const secret = await bootstrapAgent(ctx, { device_id: d.device_id, bootstrap_token: d.token });
    const before = await secretState(d.device_id);
    const again = await bootstrap({ device_id: d.device_id, bootstrap_token: tokenOf(d.token) });
    expect(again.status).toBe(409);
    expect(again.body.error).toBe('agent_already_bootstrapped');
    expect(again.body.message).toMatch(/reprovision/);
    expect(JSON.stringify(again.body)).not.toContain(secret);
    expect(await secretState(d.device_id)).toEqual(before);
    expect((await checkin(ctx, secret)).status).toBe(200);
  });

  it('answers 409 agent_already_bootstrapped to an expired token while the device holds a secret', async () => {
    const agent = await enrollAgent(ctx);
    const expired = await insertBootstrapToken(ctx, agent.device_id, new Date(Date.now() - 1000));
    const res = await bootstrap({ device_id: agent.device_id, bootstrap_token: expired });
    expect(res.status).toBe(409);
    expect(res.body.error).toBe('agent_already_bootstrapped');
  });

  it('answers 409 agent_already_bootstrapped to a fresh token while the device holds a secret, and writes nothing', async () => {
    const agent = await enrollAgent(ctx);
    const before = await secretState(agent.device_id);
    // A resolve of a managed device is refused (409), so the token is issued directly.
    const token = await insertBootstrapToken(ctx, agent.device_id, new Date(Date.now() + 86_400_000));
    const res = await bootstrap({ device_id: agent.device_id, bootstrap_token: token });
    expect(res.status).toBe(409);
    expect(res.body.error).toBe('agent_already_bootstrapped');
    expect(JSON.stringify(res.body)).not.toContain(agent.secret);
    const after = await secretState(agent.device_id);
    expect(after.agent_secret_hash).toEqual(before.agent_secret_hash);
    expect(after.agent_secret_issued_at).toEqual(before.agent_secret_issued_at);
    expect(after.tokens).toBe(1); // the rejected bootstrap rolled back: the token was not used
    expect((await checkin(ctx, agent.secret)).status).toBe(200);
  });

  it('lets a reprovisioned device bootstrap again after a new resolve; the old secret stops working', async () => {
    const agent = await enrollAgent(ctx);
    const staleToken = await insertBootstrapToken(ctx, agent.device_id, new Date(Date.now() + 86_400_000));
    expect((await ctx.request('POST', `/api/v1/devices/${agent.device_id}/reprovision`)).status).toBe(200);

    // A token issued before the reprovision is void: only a resolve after it counts.
    const stale = await bootstrap({ device_id: agent.device_id, bootstrap_token: staleToken });
    expect(stale.status).toBe(401);
    expect(stale.body.error).toBe('invalid_bootstrap_token');

    const blueprint = await resolveDevice(ctx, { code: agent.code, device_id: agent.device_id });
    const secret = await bootstrapAgent(ctx, blueprint.agent);
    expect(secret).not.toBe(agent.secret);
    expect((await checkin(ctx, agent.secret)).body.error).toBe('invalid_agent_secret');
    expect((await checkin(ctx, secret)).status).toBe(200);
  });

  it('voids an earlier token when the device is resolved again', async () => {
    const d = await resolvedDevice();
    const newer = await resolveDevice(ctx, { code: d.code, device_id: d.device_id });
    const old = await bootstrap({ device_id: d.device_id, bootstrap_token: d.token });
    expect(old.status).toBe(401);
    expect(old.body.error).toBe('invalid_bootstrap_token');
    await bootstrapAgent(ctx, newer.agent);
  });

  it.each([
    [
      'a wrong token',
      async (d: Awaited<ReturnType<typeof resolvedDevice>>) => ({
        device_id: d.device_id,
        bootstrap_token: d.token.slice(0, -1) + (d.token.endsWith('A') ? 'B' : 'A'),
      }),
    ],
    [
      'an unknown device',
      async (d: Awaited<ReturnType<typeof resolvedDevice>>) => ({
        device_id: crypto.randomUUID(),
        bootstrap_token: d.token,
      }),
    ],
    [
      'the token of another device',
      async (d: Awaited<ReturnType<typeof resolvedDevice>>) => {
        const other = await resolvedDevice();
        return { device_id: d.device_id, bootstrap_token: other.token };
      },
    ],
    [
      'an expired token',
      async (d: Awaited<ReturnType<typeof resolvedDevice>>) => ({
        device_id: d.device_id,
        bootstrap_token: await insertBootstrapToken(ctx, d.device_id, new Date(Date.now() - 1000)),
      }),
    ],
  ])('answers 401 invalid_bootstrap_token to %s and writes nothing', async (_case, makeBody) => {
    const d = await resolvedDevice();
    const body = await makeBody(d);
    const before = await secretState(d.device_id);
    const res = await bootstrap(body);
    expect(res.status).toBe(401);
    expect(res.body.error).toBe('invalid_bootstrap_token');
    // No dead end: the only way to a new token is an admin's reprovision.
    expect(res.body.message).toBe(
      'the bootstrap token is wrong, used or expired; an admin reprovisions the device to issue a new one',
    );
    expect(await secretState(d.device_id)).toEqual(before);
    expect(before.agent_secret_hash).toBeNull();
  });

  it('answers the same 401 for an unknown device as for a wrong token of a real one', async () => {
    const d = await resolvedDevice();
    const unknown = await bootstrap({ device_id: crypto.randomUUID(), bootstrap_token: d.token });
    const wrong = await bootstrap({ device_id: d.device_id, bootstrap_token: 'x'.repeat(43) });
    expect(unknown.status).toBe(wrong.status);
    expect(unknown.body).toEqual(wrong.body);
  });

  it.each([
    ['deprovisioned', 'deprovision', 403, 'device_deprovisioned'],
    ['archived', 'archive', 403, 'device_archived'],
  ])('answers a %s device with a live token %i %s and keeps the token', async (_state, action, status, code) => {
    const d = await resolvedDevice();
    expect((await ctx.request('POST', `/api/v1/devices/${d.device_id}/${action}`)).status).toBe(200);
    const res = await bootstrap({ device_id: d.device_id, bootstrap_token: d.token });
    expect(res.status).toBe(status);
    expect(res.body.error).toBe(code);
    const state = await secretState(d.device_id);
    expect(state.agent_secret_hash).toBeNull();
    expect(state.tokens).toBe(1);
  });

  it('lets exactly one of many concurrent bootstraps with the same token win', async () => {
    const d = await resolvedDevice();
    const results = await Promise.all(
      Array.from({ length: 8 }, () => bootstrap({ device_id: d.device_id, bootstrap_token: d.token })),
    );
    const statuses = results.map((r) => r.status).sort();
    // The losers find the token gone and the device holding the winner's secret.
    expect(statuses).toEqual([201, 409, 409, 409, 409, 409, 409, 409]);
    const winner = results.find((r) => r.status === 201)!;
    const state = await secretState(d.device_id);
    expect(Buffer.from(state.agent_secret_hash!).equals(Buffer.from(hashSecret(winner.body.agent_secret)))).toBe(true);
  });

  it.each([
    ['an empty body', {}],
    ['a missing token', { device_id: crypto.randomUUID() }],
    ['a non-UUID device id', { device_id: 'device-1', bootstrap_token: 'x' }],
    ['an unknown field', { device_id: crypto.randomUUID(), bootstrap_token: 'x', agent_secret_hash: 'aa' }],
    ['hardware that is an array', { device_id: crypto.randomUUID(), bootstrap_token: 'x', hardware: [1, 2] }],
    [
      'hardware over 64 KiB',
      { device_id: crypto.randomUUID(), bootstrap_token: 'x', hardware: { blob: 'x'.repeat(64 * 1024) } },
    ],
  ])('rejects %s with 400 invalid_request', async (_case, body) => {
    const res = await bootstrap(body);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request');
  });

  it('rejects oversized hardware with 400 and consumes no token', async () => {
    const d = await resolvedDevice();
    const res = await bootstrap({
      device_id: d.device_id,
      bootstrap_token: d.token,
      hardware: { blob: 'x'.repeat(64 * 1024) },
    });
    expect(res.status).toBe(400);
    expect((await secretState(d.device_id)).tokens).toBe(1);
  });
});
