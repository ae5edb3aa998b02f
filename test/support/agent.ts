/**
 * Builders of the agent's side for tests: a device that went through the installer's
 * handshake and bootstrapped (its agent secret in hand), check-in and report calls, and a
 * bootstrap token written directly (for expired tokens, which the API cannot produce).
 */
import { expect } from 'vitest';
import type { Sql } from '../../api/db/client.ts';
import { lastCheckin } from '../../api/devices/repo.ts';
import { hashSecret, randomToken } from '../../api/http/crypto.ts';
import { type TestContext, type TestResponse, writeHeartbeats } from './app.ts';
import { activateDevice, resolveDevice, type RuntimeBlueprintBody } from './activation.ts';
import { createOrganization } from './builders.ts';

export interface EnrolledAgent {
  organization_id: string;
  device_id: string;
  /** The organization's classic activation code (resolve needs it again). */
  code: string;
  blueprint: RuntimeBlueprintBody;
  secret: string;
}

/** POST /agent/bootstrap with the Runtime Blueprint's token; returns the agent secret. */
export async function bootstrapAgent(
  ctx: TestContext,
  agent: { device_id: string; bootstrap_token: string },
  hardware?: Record<string, unknown>,
): Promise<string> {
  const res = await ctx.request('POST', '/api/v1/agent/bootstrap', {
    token: null,
    body: { device_id: agent.device_id, bootstrap_token: agent.bootstrap_token, ...(hardware ? { hardware } : {}) },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  expect(res.body.device_id).toBe(agent.device_id);
  return res.body.agent_secret as string;
}

/**
 * A device of the organization (a new organization unless given) that was activated,
 * resolved (Debian Standard unless told otherwise) and bootstrapped.
 */
export async function enrollAgent(
  ctx: TestContext,
  options: { organizationId?: string; templateId?: string; serial?: string } = {},
): Promise<EnrolledAgent> {
  const organizationId = options.organizationId ?? (await createOrganization(ctx)).id;
  const activated = await activateDevice(ctx, organizationId, options.serial);
  const blueprint = await resolveDevice(ctx, {
    code: activated.code,
    device_id: activated.device_id,
    template_id: options.templateId,
  });
  const secret = await bootstrapAgent(ctx, blueprint.agent);
  return { organization_id: organizationId, device_id: activated.device_id, code: activated.code, blueprint, secret };
}

export function checkin(ctx: TestContext, secret: string | null, body?: unknown): Promise<TestResponse> {
  return ctx.request('POST', '/api/v1/agent/checkin', { token: secret, body });
}

export function report(ctx: TestContext, secret: string | null, entries: unknown[]): Promise<TestResponse> {
  return ctx.request('POST', '/api/v1/agent/report', { token: secret, body: { entries } });
}

/** Writes a bootstrap token for the device directly, e.g. one that has already expired. */
export async function insertBootstrapToken(ctx: TestContext, deviceId: string, expiresAt: Date): Promise<string> {
  const token = randomToken();
  await ctx.sql`
    insert into bootstrap_tokens (device_id, token_hash, expires_at)
    values (${deviceId}, ${hashSecret(token)}, ${expiresAt})
    on conflict (device_id) do update set token_hash = excluded.token_hash, expires_at = excluded.expires_at`;
  return token;
}

/** A well-formed agent secret that no device holds. */
export function unknownSecret(): string {
  return randomToken(32);
}

/** A check-in shed by the test config's gate: 503 `service_unavailable`, Retry-After 30–60 s (30 plus jitter). */
export function expectShed(res: TestResponse): void {
  expect(res.status).toBe(503);
  expect(res.body.error).toBe('service_unavailable');
  const retryAfter = Number(res.headers.get('retry-after'));
  expect(retryAfter).toBeGreaterThanOrEqual(30);
  expect(retryAfter).toBeLessThanOrEqual(60);
}

/** Until a statement containing `statementPart` waits for a lock (another test session holds it). */
export async function waitForLockWaiter(sql: Sql, statementPart: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const [row] = await sql<{ n: number }[]>`
      select count(*)::int as n from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock' and query like ${`%${statementPart}%`}`;
    if (row!.n > 0) return;
    if (Date.now() > deadline) throw new Error(`no statement with ${statementPart} came to wait for the lock`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * The device's `agent_last_checkin` as the API reads it once the app's pending heartbeats
 * are written; null before the first check-in.
 */
export async function lastCheckinOf(ctx: Pick<TestContext, 'sql' | 'checkin'>, deviceId: string): Promise<Date | null> {
  await writeHeartbeats(ctx);
  return storedCheckinOf(ctx.sql, deviceId);
}

/** The device's `agent_last_checkin` as stored now (its heartbeat's row), pending heartbeats not written. */
export async function storedCheckinOf(sql: Sql, deviceId: string): Promise<Date | null> {
  const [row] = await sql<
    { at: Date | null }[]
  >`select ${lastCheckin(sql)} as at from devices d where d.id = ${deviceId}`;
  return row?.at ?? null;
}
