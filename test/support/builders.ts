/** Builders: each test creates what it needs through the API, isolated by organization. */
import { expect } from 'vitest';
import type { TestContext } from './app.ts';

let counter = 0;

/**
 * A test's running number, zero-padded: names and serials made with it sort in the order
 * they were made, also when a worker's earlier files moved the counter past 9 or 99
 * (support modules are loaded once per worker, not per file).
 */
export function sequence(n: number): string {
  return String(n).padStart(6, '0');
}

export async function createOrganization(ctx: TestContext, fields: Record<string, unknown> = {}) {
  const res = await ctx.request('POST', '/api/v1/organizations', {
    body: { name: `Org ${sequence(++counter)} ${crypto.randomUUID().slice(0, 8)}`, ...fields },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as {
    id: string;
    name: string;
    default_oe_id: string;
    [key: string]: unknown;
  };
}

export async function activationCodeOf(ctx: TestContext, organizationId: string): Promise<string> {
  const res = await ctx.request('GET', `/api/v1/organizations/${organizationId}/activation-code`);
  expect(res.status).toBe(200);
  return res.body.code as string;
}
