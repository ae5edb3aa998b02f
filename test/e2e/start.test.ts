/**
 * `npm start` as a newcomer runs it: no DATABASE_URL (embedded PostgreSQL under DATA_DIR),
 * migrations, API and worker in one process, a start-up message with the docs URL and
 * where the admin token is, and a clean stop on SIGTERM.
 */
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startService } from '../support/service_process.ts';

const dataDir = await mkdtemp(join(tmpdir(), 'fleet-e2e-start-'));
afterAll(() => rm(dataDir, { recursive: true, force: true }));

describe('npm start with the embedded PostgreSQL', () => {
  it('serves health, docs and the API with the generated admin token, keeps data across restarts', async () => {
    const env = { DATABASE_URL: undefined, ADMIN_TOKEN: undefined, DATA_DIR: dataDir };
    const first = await startService(env);
    let orgId: string;
    let token: string;
    try {
      const health = await fetch(`${first.base}/api/v1/health`);
      expect(health.status).toBe(200);
      expect(await health.json()).toEqual({ status: 'ok', database: 'ok' });

      const tokenFile = join(dataDir, 'admin-token');
      expect(first.output()).toContain('/api/v1/docs');
      expect(first.output()).toContain(tokenFile);
      expect((await stat(tokenFile)).mode & 0o777).toBe(0o600);
      token = (await readFile(tokenFile, 'utf8')).trim();
      expect(token.length).toBeGreaterThanOrEqual(32);
      expect(first.output()).not.toContain(token);

      const docs = await fetch(`${first.base}/api/v1/docs`);
      expect(docs.status).toBe(200);
      expect(await docs.text()).toContain('swagger-ui');

      const created = await fetch(`${first.base}/api/v1/organizations`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'E2E GmbH' }),
      });
      expect(created.status).toBe(201);
      orgId = ((await created.json()) as { id: string }).id;
    } finally {
      expect(await first.stop('SIGTERM')).toBe(0);
    }

    const second = await startService(env);
    try {
      expect((await readFile(join(dataDir, 'admin-token'), 'utf8')).trim()).toBe(token);
      const read = await fetch(`${second.base}/api/v1/organizations/${orgId}`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(read.status).toBe(200);
    } finally {
      expect(await second.stop('SIGINT')).toBe(0);
    }
  }, 180_000);

  it('refuses to start with a bad variable and names it', async () => {
    await expect(startService({ DATA_DIR: dataDir, PORT: 'eighty' })).rejects.toThrow(/PORT/);
  }, 30_000);
});
