/**
 * The test app checks in as the service does: both build their check-in path with
 * `createCheckinPath` (recorded here), and on both a check-in is read through the path's
 * reads and its heartbeat waits for the path's batch; nothing else writes it.
 */
import { describe, expect, it, vi } from 'vitest';
import type { CheckinPath, CheckinPools } from '../../api/agent/checkin_path.ts';
import { loadEnv } from '../../api/config.ts';
import { silentLogger } from '../../api/log.ts';
import { enrollAgent, storedCheckinOf } from '../support/agent.ts';

const built = vi.hoisted(() => [] as Array<{ pools: CheckinPools; path: CheckinPath }>);

vi.mock('../../api/agent/checkin_path.ts', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../api/agent/checkin_path.ts')>();
  return {
    ...original,
    createCheckinPath: (...args: Parameters<typeof original.createCheckinPath>) => {
      const path = original.createCheckinPath(...args);
      built.push({ pools: args[0], path });
      return path;
    },
  };
});

// A worker runs several files with one module cache (isolate: false): the two modules that
// build a check-in path are loaded afresh here, after the mock, so they call it.
vi.resetModules();
const { useTestApp } = await import('../support/app.ts');
const { apiHandler, openApiDatabase } = await import('../../api/runtime/api_service.ts');
const ctx = useTestApp();

type Fetch = (request: Request) => Response | Promise<Response>;

/** A check-in through `fetch`: read through `path`, its heartbeat pending in `path` until its batch. */
async function expectBatchedCheckin(fetch: Fetch, path: CheckinPath): Promise<void> {
  const agent = await enrollAgent(ctx);
  // The timer off for the moment (stop writes what is pending), so nothing flushes in between.
  await path.heartbeats.stop();
  try {
    const reads = path.reads.counts.primary;
    const res = await fetch(
      new Request('http://fleet.test/api/v1/agent/checkin', {
        method: 'POST',
        headers: { authorization: `Bearer ${agent.secret}` },
      }),
    );
    expect(res.status).toBe(200);
    expect(path.reads.counts.primary).toBe(reads + 1);
    expect(path.heartbeats.size).toBe(1);
    expect(await storedCheckinOf(ctx.sql, agent.device_id)).toBeNull();
    await path.heartbeats.flush();
    expect(await storedCheckinOf(ctx.sql, agent.device_id)).toBeInstanceOf(Date);
  } finally {
    path.heartbeats.start();
  }
}

describe("the check-in's wiring", () => {
  it('is the same in the test app and in the service: one function builds it, and a check-in waits for its batch', async () => {
    const testPath = built.find((b) => b.path === ctx.checkin);
    expect(testPath, 'the test app built its check-in path with createCheckinPath').toBeDefined();
    expect(testPath!.pools.primary).toBe(ctx.sql);

    const service = await openApiDatabase(loadEnv({ DATABASE_URL: ctx.db.url }), silentLogger, ctx.db.url);
    try {
      const servicePath = built.find((b) => b.path === service.checkin);
      expect(servicePath, "the service's wiring built its check-in path with createCheckinPath").toBeDefined();
      expect(servicePath!.pools.primary).toBe(service.sql);
      const handler = apiHandler(service, ctx.config, silentLogger);

      await expectBatchedCheckin((request) => ctx.app.fetch(request), ctx.checkin);
      await expectBatchedCheckin((request) => handler.fetch(request, {}), service.checkin);
    } finally {
      await service.checkin.stop();
      await service.close();
    }
  });
});
