/**
 * Installer credentials and who reads them (CONTRACT §12, §17): a viewer key never sees an
 * enrollment session id or the activation code, in any read of the OpenAPI document; an
 * admin key does; reading the code and downloading an image are audited with the caller.
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, useTestApp } from '../support/app.ts';
import { createApiKey, documentedOperations, fillPath, tenantFixture, type TenantFixture } from '../support/access.ts';
import { createEnrollmentSession, newSerial, TEMPLATES } from '../support/activation.ts';
import { sha256Hex, tempIsoDir } from '../support/iso_builds.ts';

const isoDir = tempIsoDir();
const ctx = useTestApp({ isoDir });

afterAll(async () => {
  await rm(dirname(isoDir), { recursive: true, force: true });
});

let f: TenantFixture;
/** Every installer credential of the fixture's organization. */
let credentials: string[];
let completedBuildId: string;
/** The fixture with the ids of a device and a build that carry a session id. */
let viaSession: TenantFixture;

/** Marks a queued build completed with a small file, as the worker would leave it. */
async function completeBuild(buildId: string): Promise<void> {
  const bytes = new TextEncoder().encode(`image of ${buildId}`);
  await mkdir(isoDir, { recursive: true, mode: 0o700 });
  const fileName = `fleet-installer-${buildId}.iso`;
  await writeFile(join(isoDir, fileName), bytes, { mode: 0o600 });
  await ctx.sql`
    update iso_builds set status = 'completed', progress = 100, started_at = now(), finished_at = now(),
      expires_at = now() + interval '7 days', file_name = ${fileName}, size_bytes = ${bytes.length},
      sha256 = ${sha256Hex(bytes)}
    where id = ${buildId}`;
}

beforeAll(async () => {
  f = await tenantFixture(ctx);
  const org = f.organizationId;
  // A second session, devices activated through both, and builds that carry each.
  const second = await createEnrollmentSession(ctx, org, { template_id: TEMPLATES.ubuntuStandard });
  for (const session of [f.sessionId, second.id]) {
    const res = await ctx.request('POST', '/api/v1/activate', {
      token: null,
      body: { code: session, serial: newSerial() },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const member = await ctx.request('PUT', `/api/v1/groups/${f.groupId}/devices/${res.body.device_id}`);
    expect(member.status).toBe(204);
    viaSession = { ...f, deviceId: res.body.device_id };
    const build = await ctx.request('POST', `/api/v1/organizations/${org}/iso-builds`, {
      body: { enrollment_session_id: session },
    });
    expect(build.status, JSON.stringify(build.body)).toBe(202);
    completedBuildId = build.body.id;
  }
  await completeBuild(completedBuildId);
  viaSession.isoBuildId = completedBuildId;
  const [code] = await ctx.sql<{ code: string }[]>`select code from activation_codes where organization_id = ${org}`;
  credentials = [f.sessionId, second.id, code!.code];
});

/** Every read of the document with the fixture's ids, answered for one credential. */
async function readEverything(token: string): Promise<Array<{ where: string; status: number; text: string }>> {
  const answers = [];
  for (const op of await documentedOperations(ctx)) {
    if (op.method !== 'get' || op.path.endsWith('/download')) continue;
    for (const fixture of [f, viaSession]) {
      const { url } = fillPath(op, fixture);
      const res = await ctx.app.request(url, { headers: { authorization: `Bearer ${token}` } });
      answers.push({ where: `GET ${op.path}`, status: res.status, text: await res.text() });
    }
  }
  return answers;
}

const found = (text: string) => credentials.filter((c) => text.toLowerCase().includes(c.toLowerCase()));

describe('a viewer never sees an installer credential', () => {
  it('no read of the document shows a viewer a session id or the activation code', async () => {
    const answers = await readEverything(f.viewerKey);
    expect(answers.length).toBeGreaterThan(20);
    const leaks = answers.flatMap((a) => found(a.text).map((c) => `${a.where} shows ${c}`));
    expect(leaks).toEqual([]);
    // The reads that would carry one answered, only without it.
    const ok = (path: string) => answers.find((a) => a.where === `GET ${path}`)!;
    for (const path of ['/api/v1/organizations/{id}/devices', '/api/v1/organizations/{id}/iso-builds']) {
      expect(ok(path).status).toBe(200);
      const items = JSON.parse(ok(path).text).items as Array<Record<string, unknown>>;
      expect(items.length).toBeGreaterThan(1);
      for (const item of items) expect(item).not.toHaveProperty('enrollment_session_id');
    }
    for (const path of [
      '/api/v1/organizations/{id}/enrollment-sessions',
      '/api/v1/enrollment-sessions/{id}',
      '/api/v1/organizations/{id}/activation-code',
      '/api/v1/organizations/{id}/audit-events',
      '/api/v1/webhooks/{id}/deliveries',
    ]) {
      expect([ok(path).status, JSON.parse(ok(path).text).error]).toEqual([403, 'forbidden']);
    }
  });

  it('an admin key and the operator see every one of them, as before', async () => {
    for (const token of [f.adminKey, ADMIN_TOKEN]) {
      const answers = await readEverything(token);
      expect(new Set(answers.flatMap((a) => found(a.text)))).toEqual(new Set(credentials));
      const devices = answers.find((a) => a.where === 'GET /api/v1/organizations/{id}/devices')!;
      const items = JSON.parse(devices.text).items as Array<Record<string, unknown>>;
      expect(items.every((d) => 'enrollment_session_id' in d)).toBe(true);
    }
  });

  it('a viewer gets 403 on the ISO download, and writes nothing to the audit log', async () => {
    const before = await ctx.sql`select count(*)::int as n from audit_events`;
    const res = await ctx.request('GET', `/api/v1/iso-builds/${completedBuildId}/download`, { token: f.viewerKey });
    expect([res.status, res.body.error]).toEqual([403, 'forbidden']);
    expect(await ctx.sql`select count(*)::int as n from audit_events`).toEqual(before);
  });

  it('the OpenAPI document says so', async () => {
    const doc = (await ctx.request('GET', '/api/v1/openapi.json', { token: null })).body;
    for (const name of ['Device', 'IsoBuild']) {
      const schema = doc.components.schemas[name];
      expect(schema.required).not.toContain('enrollment_session_id');
      expect(JSON.stringify(schema.properties.enrollment_session_id)).toContain('viewer');
    }
    for (const op of [
      doc.paths['/api/v1/organizations/{id}/enrollment-sessions'].get,
      doc.paths['/api/v1/enrollment-sessions/{id}'].get,
    ]) {
      expect(op['x-callers']).toEqual(['operator', 'admin']);
      expect(op.responses['403']).toBeDefined();
    }
  });
});

describe('reading a credential is audited', () => {
  async function auditOf(action: string) {
    const res = await ctx.request('GET', `/api/v1/organizations/${f.organizationId}/audit-events?action=${action}`);
    expect(res.status).toBe(200);
    return res.body.items as Array<Record<string, any>>;
  }

  it('a read of the activation code records activation_code.read with the caller as actor', async () => {
    const key = await createApiKey(ctx, f.organizationId, 'admin', { name: 'Kundenportal' });
    const before = (await auditOf('activation_code.read')).length;
    const res = await ctx.request('GET', `/api/v1/organizations/${f.organizationId}/activation-code`, {
      token: key.key,
    });
    expect(res.status).toBe(200);
    const [row, ...older] = await auditOf('activation_code.read');
    expect(older).toHaveLength(before);
    expect(row).toMatchObject({
      organization_id: f.organizationId,
      action: 'activation_code.read',
      actor: { type: 'api_key', api_key_id: key.id, name: 'Kundenportal' },
      target_type: 'organization',
      target_id: f.organizationId,
    });
    expect(JSON.stringify(row)).not.toContain(res.body.code);

    expect((await ctx.request('GET', `/api/v1/organizations/${f.organizationId}/activation-code`)).status).toBe(200);
    expect((await auditOf('activation_code.read'))[0]!.actor).toEqual({ type: 'operator' });
  });

  it('a refused read of the code records nothing', async () => {
    const before = (await auditOf('activation_code.read')).length;
    const other = await tenantFixture(ctx);
    const res = await ctx.request('GET', `/api/v1/organizations/${f.organizationId}/activation-code`, {
      token: other.adminKey,
    });
    expect(res.status).toBe(404);
    expect(await auditOf('activation_code.read')).toHaveLength(before);
  });

  it('a download records iso_build.download with the caller; a HEAD, a build not ready and a 416 do not', async () => {
    const key = await createApiKey(ctx, f.organizationId, 'admin', { name: 'Skript' });
    const download = (headers: Record<string, string> = {}, id = completedBuildId, method = 'GET') =>
      ctx.app.request(`/api/v1/iso-builds/${id}/download`, {
        method,
        headers: { authorization: `Bearer ${key.key}`, ...headers },
      });
    const full = await download();
    expect(full.status).toBe(200);
    expect(await full.text()).toBe(`image of ${completedBuildId}`);
    const [row] = await auditOf('iso_build.download');
    expect(row).toMatchObject({
      action: 'iso_build.download',
      actor: { type: 'api_key', api_key_id: key.id, name: 'Skript' },
      target_type: 'iso_build',
      target_id: completedBuildId,
    });
    expect((await download({ range: 'bytes=0-4' })).status).toBe(206);
    expect(await auditOf('iso_build.download')).toHaveLength(2);

    expect((await download({}, completedBuildId, 'HEAD')).status).toBe(200);
    expect((await download({ range: 'bytes=9999-' })).status).toBe(416);
    expect((await download({}, f.isoBuildId)).status).toBe(409);
    expect(await auditOf('iso_build.download')).toHaveLength(2);
  });
});
