/**
 * The check-ins of one turn of the event loop read in one statement (CONTRACT §19,
 * api/agent/batched_reads.ts): each still gets its own answer (its device's state, its
 * 304, its 401 or 403) and its own heartbeat, and a lone check-in is read alone.
 */
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sql } from '../../api/db/client.ts';
import { enrollAgent, lastCheckinOf, unknownSecret } from '../support/agent.ts';
import { planOnBigTables } from '../support/db.ts';
import { request, testApp, useTestApp, writeHeartbeats } from '../support/app.ts';

const ctx = useTestApp();

/** The batched read's statements, with how many secrets each carried. */
const batchReads: number[] = [];
/** The text of the batched read, as sent. */
let readText = '';
let counted: Sql;
let app: ReturnType<typeof testApp>;

beforeAll(async () => {
  counted = postgres(ctx.db.url, {
    max: 4,
    onnotice: () => {},
    debug: (_connection, query, parameters) => {
      if (!/with ordinality/.test(query)) return;
      batchReads.push((parameters[0] as unknown[]).length);
      readText = query;
    },
  });
  app = testApp(counted, ctx.config);
});

afterAll(async () => {
  await counted?.end({ timeout: 1 });
});

function checkin(secret: string, headers: Record<string, string> = {}) {
  return request(app, 'POST', '/api/v1/agent/checkin', { token: secret, headers });
}

async function lastCheckin(deviceId: string): Promise<Date | null> {
  return lastCheckinOf({ sql: ctx.sql, checkin: app.checkin }, deviceId);
}

describe('check-ins read in one statement', () => {
  it('answers each check-in of a turn from one read: its own state, 304, 401 or 403, and its own heartbeat', async () => {
    const [a, b, gone] = await Promise.all([enrollAgent(ctx), enrollAgent(ctx), enrollAgent(ctx)]);
    expect((await ctx.request('POST', `/api/v1/devices/${gone.device_id}/deprovision`)).status).toBe(200);
    const first = await checkin(a.secret);
    expect(first.status).toBe(200);
    const etag = first.headers.get('etag')!;
    await writeHeartbeats(app);

    batchReads.length = 0;
    const t0 = Date.now();
    const [unchanged, full, fullOfA, deprovisioned, unknown] = await Promise.all([
      checkin(a.secret, { 'if-none-match': etag }),
      checkin(b.secret),
      checkin(a.secret),
      checkin(gone.secret),
      checkin(unknownSecret()),
    ]);
    expect(batchReads).toEqual([5]);

    expect(unchanged.status).toBe(304);
    expect(unchanged.headers.get('etag')).toBe(etag);
    expect(full.status).toBe(200);
    expect(full.body.device_id).toBe(b.device_id);
    expect(fullOfA.status).toBe(200);
    expect(fullOfA.body.device_id).toBe(a.device_id);
    expect(fullOfA.headers.get('etag')).toBe(etag);
    expect(deprovisioned.status).toBe(403);
    expect(deprovisioned.body.error).toBe('device_deprovisioned');
    expect(unknown.status).toBe(401);
    expect(unknown.body.error).toBe('invalid_agent_secret');

    expect((await lastCheckin(a.device_id))!.getTime()).toBeGreaterThanOrEqual(t0);
    expect((await lastCheckin(b.device_id))!.getTime()).toBeGreaterThanOrEqual(t0);
    expect(await lastCheckin(gone.device_id)).toBeNull();
  });

  it('reads a lone check-in at once, in a statement of its own', async () => {
    const agent = await enrollAgent(ctx);
    batchReads.length = 0;
    expect((await checkin(agent.secret)).status).toBe(200);
    expect((await checkin(agent.secret)).status).toBe(200);
    expect(batchReads).toEqual([1, 1]);
  });

  it('gives each check-in of a batch the same answer as alone when the read fails', async () => {
    const [a, b] = await Promise.all([enrollAgent(ctx), enrollAgent(ctx)]);
    const broken = postgres(ctx.db.url, { max: 1, onnotice: () => {} });
    await broken.end();
    const down = testApp(broken, ctx.config);
    const answers = await Promise.all(
      [a, b].map((agent) => request(down, 'POST', '/api/v1/agent/checkin', { token: agent.secret })),
    );
    const alone = await request(down, 'POST', '/api/v1/agent/checkin', { token: a.secret });
    expect(alone.status).toBeGreaterThanOrEqual(500);
    for (const res of answers) {
      expect(res.status).toBe(alone.status);
      expect(res.body.error).toBe(alone.body.error);
    }
  });
});

describe("the secret's hash: one index finds the device and keeps the hashes unique", () => {
  it('reads each device by a probe of the hash index', async () => {
    const agent = await enrollAgent(ctx);
    expect((await checkin(agent.secret)).status).toBe(200);
    const lines = await planOnBigTables(ctx.sql, readText);
    expect(lines, lines).toMatch(/Index Scan using devices_agent_secret_hash_excl on devices/);
  });

  it('refuses a second device with the same hash, and leaves both as they were', async () => {
    const [a, b] = await Promise.all([enrollAgent(ctx), enrollAgent(ctx)]);
    const hashes = () =>
      ctx.sql`select id, agent_secret_hash from devices where id in (${a.device_id}, ${b.device_id}) order by id`;
    const before = await hashes();
    await expect(
      ctx.sql`update devices set agent_secret_hash = (select agent_secret_hash from devices where id = ${a.device_id})
              where id = ${b.device_id}`,
    ).rejects.toMatchObject({ code: '23P01', constraint_name: 'devices_agent_secret_hash_excl' });
    expect(await hashes()).toEqual(before);
    expect((await checkin(b.secret)).body.device_id).toBe(b.device_id);
  });
});
