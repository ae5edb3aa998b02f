/**
 * A device's whole journey against the real service process (API and worker in one, as
 * `npm start` runs them, here on a DATABASE_URL): organization, activation, resolve,
 * agent bootstrap, check-in, report, events, lifecycle; and a personalized ISO built by
 * the real worker with xorriso, polled and downloaded byte for byte.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomToken } from '../../api/http/crypto.ts';
import { createTestDatabase, type TestDatabase } from '../support/db.ts';
import { startService, type ServiceProcess } from '../support/service_process.ts';
import { missingTools } from '../support/tools.ts';

const adminToken = randomToken();
let db: TestDatabase;
let service: ServiceProcess;
let dataDir: string;

beforeAll(async () => {
  db = await createTestDatabase();
  dataDir = await mkdtemp(join(tmpdir(), 'fleet-e2e-journey-'));
  service = await startService({ DATABASE_URL: db.url, ADMIN_TOKEN: adminToken, DATA_DIR: dataDir });
}, 120_000);

afterAll(async () => {
  expect(await service?.stop('SIGTERM')).toBe(0);
  await db?.drop();
  await rm(dataDir, { recursive: true, force: true });
});

async function call(method: string, path: string, body?: unknown, token: string | null = adminToken) {
  const headers: Record<string, string> = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${service.base}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return {
    status: res.status,
    body: text && res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text,
  };
}

describe('a device from activation to its first report, over HTTP', () => {
  it('activates, resolves, bootstraps, checks in, reports and shows its events', async () => {
    const org = await call('POST', '/api/v1/organizations', { name: 'Journey AG' });
    expect(org.status).toBe(201);
    const { code } = (await call('GET', `/api/v1/organizations/${org.body.id}/activation-code`)).body;

    const activated = await call(
      'POST',
      '/api/v1/activate',
      { code: code.toLowerCase(), serial: 'JOURNEY-001', hostname: 'ws-001' },
      null,
    );
    expect(activated.status).toBe(200);
    const { device_id, default_template_id } = activated.body;
    expect(activated.body.templates.length).toBeGreaterThanOrEqual(3);

    const blueprint = await call('POST', `/api/v1/templates/${default_template_id}/resolve`, { code, device_id }, null);
    expect(blueprint.status).toBe(200);
    expect(blueprint.body.partitioning).toEqual({ scheme: 'single', root_filesystem: 'ext4', encryption: null });
    const { bootstrap_token } = blueprint.body.agent;

    const boot = await call('POST', '/api/v1/agent/bootstrap', { device_id, bootstrap_token }, null);
    expect(boot.status).toBe(201);
    const secret: string = boot.body.agent_secret;
    // The device now holds a secret: a second bootstrap is 409 whatever the token.
    expect((await call('POST', '/api/v1/agent/bootstrap', { device_id, bootstrap_token }, null)).status).toBe(409);

    // An admin orders LibreOffice for the device; the agent sees it at the next check-in.
    expect(
      (await call('POST', `/api/v1/devices/${device_id}/catalog/libreoffice/select`, { optionen: { sprache: 'de' } }))
        .status,
    ).toBe(200);
    const checkin = await call('POST', '/api/v1/agent/checkin', undefined, secret);
    expect(checkin.status).toBe(200);
    expect(checkin.body.blueprints).toContainEqual({ merkmal: 'firefox', ansible_role: 'firefox' });
    const auftraege = Object.fromEntries(checkin.body.auftraege.map((a: { merkmal: string }) => [a.merkmal, a]));
    expect(auftraege.libreoffice).toEqual({
      merkmal: 'libreoffice',
      ansible_role: 'libreoffice',
      state: 'present',
      optionen: { sprache: 'de' },
    });
    expect(auftraege.onlyoffice.state).toBe('absent');
    expect(auftraege.firefox.state).toBe('present');

    const report = await call(
      'POST',
      '/api/v1/agent/report',
      { entries: [{ merkmal: 'libreoffice', event: 'applied', detail: 'ok' }] },
      secret,
    );
    expect(report.status).toBe(200);
    expect(report.body).toEqual({ accepted: 1 });

    const events = await call('GET', `/api/v1/devices/${device_id}/events`);
    expect(events.body.items.map((e: { type: string }) => e.type)).toEqual(['applied', 'selected']);
    // The check-in's time is written by the next heartbeat batch, within 2 s (api/agent/README.md, Heartbeats).
    let device = await call('GET', `/api/v1/devices/${device_id}`);
    for (let i = 0; i < 40 && device.body.agent_last_checkin === null; i++) {
      await new Promise((r) => setTimeout(r, 100));
      device = await call('GET', `/api/v1/devices/${device_id}`);
    }
    expect(device.body.agent_last_checkin).not.toBeNull();
    expect(JSON.stringify(device.body)).not.toContain(secret);

    expect((await call('POST', `/api/v1/devices/${device_id}/deprovision`)).status).toBe(200);
    const refused = await call('POST', '/api/v1/agent/checkin', undefined, secret);
    expect(refused.status).toBe(403);
    expect(refused.body.error).toBe('device_deprovisioned');
    expect(service.output()).not.toContain(secret);
    expect(service.output()).not.toContain(bootstrap_token);
  }, 60_000);
});

describe.skipIf(missingTools('xorriso'))('a personalized ISO built by the real worker', () => {
  it('goes pending → completed and downloads byte for byte', async () => {
    const org = await call('POST', '/api/v1/organizations', { name: 'ISO GmbH' });
    const { code } = (await call('GET', `/api/v1/organizations/${org.body.id}/activation-code`)).body;
    const psk = 'journey-wlan-secret-42';
    const triggered = await call('POST', `/api/v1/organizations/${org.body.id}/iso-builds`, {
      wlan: { ssid: 'Buero', psk },
    });
    expect(triggered.status).toBe(202);
    expect(triggered.body.status).toBe('pending');

    let build = triggered.body;
    const deadline = Date.now() + 60_000;
    while (build.status !== 'completed' && build.status !== 'failed' && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 250));
      build = (await call('GET', `/api/v1/iso-builds/${build.id}`)).body;
    }
    expect(build.error ?? null).toBeNull();
    expect(build.status).toBe('completed');
    expect(build.progress).toBe(100);
    expect(new Date(build.expires_at).getTime() - new Date(build.finished_at).getTime()).toBe(7 * 24 * 3600 * 1000);

    const res = await fetch(`${service.base}/api/v1/iso-builds/${build.id}/download`, {
      headers: { authorization: `Bearer ${adminToken}` },
    });
    expect(res.status).toBe(200);
    const bytes = Buffer.from(await res.arrayBuffer());
    expect(bytes.length).toBe(build.size_bytes);
    expect(createHash('sha256').update(bytes).digest('hex')).toBe(build.sha256);
    const onDisk = await readFile(
      join(dataDir, 'isos', (await db.sql`select file_name from iso_builds where id = ${build.id}`)[0]!.file_name),
    );
    expect(onDisk.equals(bytes)).toBe(true);
    // The image carries the activation code; the ISO 9660 volume descriptor is at 32 KiB.
    expect(bytes.subarray(32768 + 1, 32768 + 6).toString('latin1')).toBe('CD001');
    expect(bytes.includes(Buffer.from(code))).toBe(true);
    expect(service.output()).not.toContain(psk);
    // Gone with its encrypted payload once the task has returned (just after the row says completed).
    await expect
      .poll(
        async () => (await db.sql`select task_identifier from graphile_worker.jobs`).map((j) => j.task_identifier),
        { timeout: 15_000 },
      )
      .not.toContain('build_iso');
  }, 90_000);
});
