/**
 * `npm run lint:openapi`: writes the OpenAPI document of createApp to a temporary file and
 * lints it with redocly (rules in .ci/redocly.yaml). No database: serving the document runs
 * no query.
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createCheckinPath } from '../api/agent/checkin_path.ts';
import { createApp } from '../api/app.ts';
import type { Sql } from '../api/db/client.ts';
import { silentLogger } from '../api/log.ts';

const root = fileURLToPath(new URL('..', import.meta.url));

// Never called: the document is built from the route definitions alone.
const sql = undefined as unknown as Sql;
const app = createApp({
  sql,
  log: silentLogger,
  checkin: createCheckinPath({ primary: sql }, { log: silentLogger }),
  config: {
    adminToken: 'unused-unused-unused-unused-unused',
    publicBaseUrl: 'http://localhost:3000',
    roleRepositoryUrl: 'https://roles.example.invalid/fleet/ansible-roles.git',
    agentPollIntervalSeconds: 300,
    activation: { maxFailures: 20, windowSeconds: 600, trustProxy: false },
    isoDir: '/nonexistent',
    wlanKey: new Uint8Array(32),
    webhooks: { allowHttp: false, allowPrivate: false },
    checkin: { maxInFlight: 1000, retryAfterSeconds: 30 },
  },
});
const res = await app.request('/api/v1/openapi.json');
if (res.status !== 200) throw new Error(`GET /api/v1/openapi.json answered ${res.status}`);

const dir = await mkdtemp(join(tmpdir(), 'fleet-openapi-'));
try {
  const file = join(dir, 'openapi.json');
  await writeFile(file, `${JSON.stringify(await res.json(), null, 2)}\n`);
  const redocly = join(root, 'node_modules', '.bin', process.platform === 'win32' ? 'redocly.cmd' : 'redocly');
  const lint = spawnSync(redocly, ['lint', '--config', join(root, '.ci', 'redocly.yaml'), file], {
    stdio: 'inherit',
    env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
  });
  process.exitCode = lint.status ?? 1;
} finally {
  await rm(dir, { recursive: true, force: true });
}
