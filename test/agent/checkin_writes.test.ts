/**
 * A check-in that writes at once (hardware) commits on connections of its own: the pool's
 * connections take queries one after the other, so a read queued behind a
 * commit that waits (a lock here; a slow WAL flush on a busy primary) would wait with it,
 * and with it every check-in of the fleet.
 */
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCheckinPath } from '../../api/agent/checkin_path.ts';
import { type App, createApp } from '../../api/app.ts';
import type { Sql } from '../../api/db/client.ts';
import { silentLogger } from '../../api/log.ts';
import { enrollAgent, waitForLockWaiter } from '../support/agent.ts';
import { request, useTestApp } from '../support/app.ts';

const ctx = useTestApp();

let reads: Sql;
let writes: Sql;
let app: App;

beforeAll(async () => {
  // One connection for the reads: whatever it carries, it carries in order.
  reads = postgres(ctx.db.url, { max: 1, onnotice: () => {} });
  writes = postgres(ctx.db.url, { max: 2, onnotice: () => {} });
  // The service's pools in small: the writes' own connections beside the reads' one.
  const checkin = createCheckinPath({ primary: reads, writes }, { log: silentLogger });
  app = createApp({ sql: reads, config: ctx.config, log: silentLogger, checkin });
});

afterAll(async () => {
  await Promise.all([reads?.end({ timeout: 1 }), writes?.end({ timeout: 1 })]);
});

const checkin = (secret: string, body?: Record<string, unknown>) =>
  request(app, 'POST', '/api/v1/agent/checkin', { token: secret, ...(body ? { body } : {}) });

describe('a check-in that writes hardware', () => {
  it('does not hold up the check-ins behind it while its commit waits', async () => {
    const [writer, reader] = await Promise.all([enrollAgent(ctx), enrollAgent(ctx)]);
    expect((await checkin(writer.secret, { hardware: { cpu: 'a' } })).status).toBe(200);

    // Another transaction holds the writer's hardware row: its next hardware write waits.
    const lock = await ctx.sql.reserve();
    await lock`begin`;
    await lock`select 1 from device_hardware where device_id = ${writer.device_id} for update`;
    let waiting: Promise<unknown> | undefined;
    try {
      waiting = checkin(writer.secret, { hardware: { cpu: 'b' } });
      await waitForLockWaiter(ctx.sql, 'device_hardware');
      const read = await Promise.race([
        checkin(reader.secret),
        new Promise<null>((r) => setTimeout(() => r(null), 5000)),
      ]);
      expect(read?.status, 'the read waited behind the write').toBe(200);
    } finally {
      await lock`rollback`;
      lock.release();
    }
    const written = (await waiting) as { status: number };
    expect(written.status).toBe(200);
    const [stored] = await ctx.sql<{ hardware: { cpu: string } }[]>`
      select hardware from device_hardware where device_id = ${writer.device_id}`;
    expect(stored!.hardware.cpu).toBe('b');
  });
});
