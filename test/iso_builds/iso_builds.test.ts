/** ISO build endpoints (CONTRACT §10): trigger, list, poll, download; errors and auth. */
import { rm, stat, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorker } from '../../jobs/worker.ts';
import { useTestApp } from '../support/app.ts';
import { createEnrollmentSession, TEMPLATES } from '../support/activation.ts';
import { activationCodeOf, createOrganization } from '../support/builders.ts';
import { countRows } from '../support/db.ts';
import {
  capturingLogger,
  downloadBytes,
  extractFromIso,
  getBuild,
  isIso9660,
  isoFiles,
  runJobs,
  sha256Hex,
  sha256OfFile,
  tempIsoDir,
  triggerBuild,
  waitForStatus,
  workerDeps,
} from '../support/iso_builds.ts';
import { missingTools } from '../support/tools.ts';

/** The builds run the real build script, which needs xorriso. */
const withoutXorriso = missingTools('xorriso');

const isoDir = tempIsoDir();
const ctx = useTestApp({ isoDir });

afterAll(async () => {
  await rm(dirname(isoDir), { recursive: true, force: true });
});

const isoBuildKeys = [
  ...['id', 'organization_id', 'status', 'progress', 'created_at', 'started_at', 'finished_at', 'expires_at'],
  ...['size_bytes', 'sha256', 'error', 'template_id', 'enrollment_session_id', 'development_base'],
];

async function jobCount(): Promise<number> {
  const [row] = await ctx.sql<{ n: number }[]>`select count(*)::int as n from graphile_worker.jobs`;
  return row!.n;
}

describe('POST /api/v1/organizations/{id}/iso-builds', () => {
  it('answers 202 with the pending build and queues its job in the same transaction', async () => {
    const org = await createOrganization(ctx);
    const res = await ctx.request('POST', `/api/v1/organizations/${org.id}/iso-builds`, { body: {} });
    expect(res.status).toBe(202);
    expect(Object.keys(res.body).sort()).toEqual([...isoBuildKeys].sort());
    expect(res.body).toMatchObject({
      organization_id: org.id,
      status: 'pending',
      progress: 0,
      started_at: null,
      finished_at: null,
      expires_at: null,
      size_bytes: null,
      sha256: null,
      error: null,
      template_id: null,
      enrollment_session_id: null,
    });
    expect(res.body.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const [job] = await ctx.sql<{ payload: any; max_attempts: number }[]>`
      select payload, max_attempts from graphile_worker._private_jobs where key = ${'build_iso:' + res.body.id}`;
    expect(job).toEqual({ payload: { build_id: res.body.id, wlan: null }, max_attempts: 3 });
  });

  it('accepts a request without a body', async () => {
    const org = await createOrganization(ctx);
    const res = await ctx.request('POST', `/api/v1/organizations/${org.id}/iso-builds`);
    expect(res.status).toBe(202);
    expect(res.body.status).toBe('pending');
  });

  it('keeps WLAN credentials out of the response and the row; the job holds them sealed', async () => {
    const org = await createOrganization(ctx);
    const wlan = { ssid: 'Bürgerbüro', psk: 'unguessable passphrase 7' };
    const res = await ctx.request('POST', `/api/v1/organizations/${org.id}/iso-builds`, { body: { wlan } });
    expect(res.status).toBe(202);
    expect(JSON.stringify(res.body)).not.toContain('unguessable');
    const [row] = await ctx.sql`select * from iso_builds where id = ${res.body.id}`;
    expect(JSON.stringify(row)).not.toContain('unguessable');
    expect(JSON.stringify(row)).not.toContain('Bürgerbüro');
    const [job] = await ctx.sql<{ payload: any }[]>`
      select payload from graphile_worker._private_jobs where key = ${'build_iso:' + res.body.id}`;
    expect(Object.keys(job!.payload.wlan).sort()).toEqual(['data', 'iv', 'v']);
    expect(JSON.stringify(job!.payload)).not.toContain('unguessable');
    expect(JSON.stringify(job!.payload)).not.toContain('rgerb');
  });

  it('answers 404 for an unknown organization and writes nothing', async () => {
    const [builds, jobs] = [await countRows(ctx.sql, 'iso_builds'), await jobCount()];
    const res = await ctx.request('POST', `/api/v1/organizations/${crypto.randomUUID()}/iso-builds`, { body: {} });
    expect(res.status).toBe(404);
    expect(res.body.error).toBe('not_found');
    const notUuid = await ctx.request('POST', '/api/v1/organizations/not-a-uuid/iso-builds', { body: {} });
    expect(notUuid.status).toBe(404);
    expect(notUuid.body.error).toBe('not_found');
    expect([await countRows(ctx.sql, 'iso_builds'), await jobCount()]).toEqual([builds, jobs]);
  });

  it.each([
    ['wlan without ssid', { wlan: { psk: 'long enough psk' } }],
    ['wlan without psk', { wlan: { ssid: 'Net' } }],
    ['an empty ssid', { wlan: { ssid: '', psk: 'long enough psk' } }],
    ['an ssid over 32 bytes (11 × €)', { wlan: { ssid: '€'.repeat(11), psk: 'long enough psk' } }],
    ['a psk of 7 characters', { wlan: { ssid: 'Net', psk: 'x'.repeat(7) } }],
    ['a psk of 64 characters', { wlan: { ssid: 'Net', psk: 'x'.repeat(64) } }],
    ['a psk with a non-ASCII character', { wlan: { ssid: 'Net', psk: 'geheimes-wört' } }],
    ['a psk with a control character', { wlan: { ssid: 'Net', psk: 'secret\npassword' } }],
    ['a psk that is not a string', { wlan: { ssid: 'Net', psk: 12345678 } }],
    ['an unknown field in wlan', { wlan: { ssid: 'Net', psk: 'long enough psk', hidden: true } }],
    ['an unknown top-level field', { wlan: { ssid: 'Net', psk: 'long enough psk' }, status: 'completed' }],
    ['wlan that is not an object', { wlan: 'Net:secret' }],
  ])('rejects %s with 400 invalid_request, writes nothing and never echoes the psk', async (_case, body) => {
    const org = await createOrganization(ctx);
    const [builds, jobs] = [await countRows(ctx.sql, 'iso_builds'), await jobCount()];
    const res = await ctx.request('POST', `/api/v1/organizations/${org.id}/iso-builds`, { body });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request');
    const psk = (body as { wlan?: { psk?: unknown } }).wlan?.psk;
    if (typeof psk === 'string') expect(JSON.stringify(res.body)).not.toContain(psk);
    expect([await countRows(ctx.sql, 'iso_builds'), await jobCount()]).toEqual([builds, jobs]);
  });

  it('accepts the boundary values (32-byte ssid, 8 and 63 character psk)', async () => {
    const org = await createOrganization(ctx);
    for (const wlan of [
      { ssid: 'x'.repeat(32), psk: '12345678' },
      { ssid: '€'.repeat(10), psk: '~'.repeat(63) },
    ]) {
      const res = await ctx.request('POST', `/api/v1/organizations/${org.id}/iso-builds`, { body: { wlan } });
      expect(res.status).toBe(202);
    }
  });

  it('rejects a body that is not JSON with 400', async () => {
    const org = await createOrganization(ctx);
    const res = await ctx.request('POST', `/api/v1/organizations/${org.id}/iso-builds`, {
      rawBody: '{"wlan":',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('invalid_request');
  });
});

describe('POST .../iso-builds bound to a template or an enrollment session', () => {
  async function refused(orgId: string, body: unknown, status: number, error: string) {
    const before = [await countRows(ctx.sql, 'iso_builds'), await jobCount()];
    const res = await ctx.request('POST', `/api/v1/organizations/${orgId}/iso-builds`, { body });
    expect(res.status, JSON.stringify(res.body)).toBe(status);
    expect(res.body.error).toBe(error);
    expect([await countRows(ctx.sql, 'iso_builds'), await jobCount()]).toEqual(before);
    return res.body as { error: string; message: string };
  }

  it('records the template; the build shows it and no session', async () => {
    const org = await createOrganization(ctx);
    const build = await triggerBuild(ctx, org.id, { template_id: TEMPLATES.ubuntuStandard });
    expect(build).toMatchObject({ template_id: TEMPLATES.ubuntuStandard, enrollment_session_id: null });
    expect((await getBuild(ctx, build.id)).body).toMatchObject({ template_id: TEMPLATES.ubuntuStandard });
  });

  it('a session fixes the template to its own; naming that same template is fine', async () => {
    const org = await createOrganization(ctx);
    const session = await createEnrollmentSession(ctx, org.id, { template_id: TEMPLATES.debianEncrypted });
    const build = await triggerBuild(ctx, org.id, { enrollment_session_id: session.id });
    expect(build).toMatchObject({ template_id: TEMPLATES.debianEncrypted, enrollment_session_id: session.id });
    const same = { enrollment_session_id: session.id, template_id: TEMPLATES.debianEncrypted };
    const again = await triggerBuild(ctx, org.id, same);
    expect(again.template_id).toBe(TEMPLATES.debianEncrypted);
    const listed = await ctx.request('GET', `/api/v1/organizations/${org.id}/iso-builds`);
    expect(listed.body.items[0]).toMatchObject({ id: again.id, enrollment_session_id: session.id });
  });

  it("answers 403 template_not_allowed for a template other than the session's, writing nothing", async () => {
    const org = await createOrganization(ctx);
    const session = await createEnrollmentSession(ctx, org.id);
    const other = { enrollment_session_id: session.id, template_id: TEMPLATES.ubuntuStandard };
    const body = await refused(org.id, other, 403, 'template_not_allowed');
    expect(body.message).toContain(TEMPLATES.debianStandard);
  });

  it.each([
    ['revoked', 'revoked'],
    ['expired', 'expired'],
    ['used up', 'used up (1 of 1 devices)'],
  ])(
    'answers 403 invalid_activation_code for a %s session, with a clear message, nothing written',
    async (state, words) => {
      const org = await createOrganization(ctx);
      const session = await createEnrollmentSession(ctx, org.id, { max_devices: 1 });
      if (state === 'revoked') await ctx.request('POST', `/api/v1/enrollment-sessions/${session.id}/revoke`);
      if (state === 'expired') {
        await ctx.sql`update enrollment_sessions set expires_at = now() - interval '1 second' where id = ${session.id}`;
      }
      if (state === 'used up') await ctx.sql`update enrollment_sessions set devices_used = 1 where id = ${session.id}`;
      const body = await refused(org.id, { enrollment_session_id: session.id }, 403, 'invalid_activation_code');
      expect(body.message).toContain(`enrollment session ${session.id} is ${words}`);
    },
  );

  it("answers 404 not_found for an unknown template or session, and for another organization's session", async () => {
    const org = await createOrganization(ctx);
    const other = await createOrganization(ctx);
    const foreign = await createEnrollmentSession(ctx, other.id);
    await refused(org.id, { template_id: crypto.randomUUID() }, 404, 'not_found');
    await refused(org.id, { enrollment_session_id: crypto.randomUUID() }, 404, 'not_found');
    const body = await refused(org.id, { enrollment_session_id: foreign.id }, 404, 'not_found');
    expect(body.message).toBe(`enrollment session ${foreign.id} not found`);
  });

  it('answers 400 for ids that are not UUIDs', async () => {
    const org = await createOrganization(ctx);
    await refused(org.id, { template_id: 'debian' }, 400, 'invalid_request');
    await refused(org.id, { enrollment_session_id: 'K7M2Q-4XW9D' }, 400, 'invalid_request');
  });
});

describe('GET /api/v1/organizations/{id}/iso-builds and /api/v1/iso-builds/{id}', () => {
  it("lists the organization's builds newest first, paged, and no other organization's", async () => {
    const org = await createOrganization(ctx);
    const other = await createOrganization(ctx);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await triggerBuild(ctx, org.id)).id);
    await triggerBuild(ctx, other.id);
    const first = await ctx.request('GET', `/api/v1/organizations/${org.id}/iso-builds?limit=2`);
    expect(first.status).toBe(200);
    expect(first.body.items.map((b: { id: string }) => b.id)).toEqual([ids[2], ids[1]]);
    expect(first.body.next_cursor).toEqual(expect.any(String));
    const second = await ctx.request(
      'GET',
      `/api/v1/organizations/${org.id}/iso-builds?limit=2&cursor=${first.body.next_cursor}`,
    );
    expect(second.body).toEqual({ items: [expect.objectContaining({ id: ids[0] })], next_cursor: null });
    expect(Object.keys(second.body.items[0]).sort()).toEqual([...isoBuildKeys].sort());
  });

  it('answers 404 for the list of an unknown organization and 400 for a bad limit or cursor', async () => {
    const unknown = await ctx.request('GET', `/api/v1/organizations/${crypto.randomUUID()}/iso-builds`);
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toBe('not_found');
    const org = await createOrganization(ctx);
    for (const query of ['limit=0', 'limit=501', 'cursor=garbage']) {
      const res = await ctx.request('GET', `/api/v1/organizations/${org.id}/iso-builds?${query}`);
      expect(res.status, query).toBe(400);
      expect(res.body.error).toBe('invalid_request');
    }
  });

  it('reads one build; unknown and malformed ids are 404', async () => {
    const org = await createOrganization(ctx);
    const queued = await triggerBuild(ctx, org.id);
    const res = await getBuild(ctx, queued.id);
    expect(res.status).toBe(200);
    expect(res.body).toEqual(queued);
    for (const id of [crypto.randomUUID(), 'nope']) {
      const missing = await getBuild(ctx, id);
      expect(missing.status).toBe(404);
      expect(missing.body.error).toBe('not_found');
    }
  });
});

describe('GET /api/v1/iso-builds/{id}/download', () => {
  let org: { id: string };
  let build: { id: string; sha256: string; size_bytes: number };
  let bytes: Uint8Array;

  beforeAll(async () => {
    org = await createOrganization(ctx);
    const queued = await triggerBuild(ctx, org.id);
    await runJobs(ctx, workerDeps(ctx));
    build = (await getBuild(ctx, queued.id)).body;
    bytes = (await downloadBytes(ctx, build.id)).bytes;
  });

  it.skipIf(withoutXorriso)('streams the exact bytes with the download headers', async () => {
    const res = await downloadBytes(ctx, build.id);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/x-iso9660-image');
    expect(res.headers.get('content-length')).toBe(String(build.size_bytes));
    expect(res.headers.get('content-disposition')).toBe(`attachment; filename="fleet-installer-${build.id}.iso"`);
    expect(res.headers.get('etag')).toBe(`"${build.sha256}"`);
    expect(res.headers.get('accept-ranges')).toBe('bytes');
    expect(res.headers.get('cache-control')).toBe('private, no-store');
    expect(res.bytes.length).toBe(build.size_bytes);
    expect(sha256Hex(res.bytes)).toBe(build.sha256);
    expect(await sha256OfFile(join(isoDir, `fleet-installer-${build.id}.iso`))).toBe(build.sha256);
  });

  it.skipIf(withoutXorriso).each([
    ['bytes=0-99', 0, 99],
    ['bytes=32768-32867', 32768, 32867],
    ['bytes=1000-', 1000, 'last'],
    ['bytes=-500', 'size-500', 'last'],
    ['bytes=100-999999999999', 100, 'last'],
  ] as const)('answers Range %s with 206 and exactly those bytes', async (range, from, to) => {
    const size = build.size_bytes;
    const start = from === 'size-500' ? size - 500 : from;
    const end = to === 'last' ? size - 1 : to;
    const res = await downloadBytes(ctx, build.id, { range });
    expect(res.status).toBe(206);
    expect(res.headers.get('content-range')).toBe(`bytes ${start}-${end}/${size}`);
    expect(res.headers.get('content-length')).toBe(String(end - start + 1));
    expect(res.headers.get('etag')).toBe(`"${build.sha256}"`);
    expect(Buffer.from(res.bytes).equals(Buffer.from(bytes.subarray(start, end + 1)))).toBe(true);
  });

  it.skipIf(withoutXorriso)('resumes a download: two ranges put together are the whole image', async () => {
    const half = Math.floor(build.size_bytes / 2);
    const a = await downloadBytes(ctx, build.id, { range: `bytes=0-${half - 1}` });
    const b = await downloadBytes(ctx, build.id, { range: `bytes=${half}-`, 'if-range': `"${build.sha256}"` });
    expect([a.status, b.status]).toEqual([206, 206]);
    expect(sha256Hex(Buffer.concat([a.bytes, b.bytes]))).toBe(build.sha256);
  });

  it.skipIf(withoutXorriso)(
    'answers 416 range_not_satisfiable with Content-Range for a range past the end',
    async () => {
      for (const range of [`bytes=${build.size_bytes}-`, 'bytes=-0']) {
        const res = await ctx.request('GET', `/api/v1/iso-builds/${build.id}/download`, { headers: { range } });
        expect(res.status, range).toBe(416);
        expect(res.body.error).toBe('range_not_satisfiable');
        expect(res.headers.get('content-range')).toBe(`bytes */${build.size_bytes}`);
      }
    },
  );

  it.skipIf(withoutXorriso).each([
    ['several ranges', { range: 'bytes=0-9,20-29' }],
    ['another unit', { range: 'items=0-9' }],
    ['a reversed range', { range: 'bytes=9-0' }],
    ['an If-Range of another image', { range: 'bytes=0-9', 'if-range': '"0000"' }],
  ])('sends the whole image (200) for %s', async (_case, headers) => {
    const res = await downloadBytes(ctx, build.id, headers);
    expect(res.status).toBe(200);
    expect(sha256Hex(res.bytes)).toBe(build.sha256);
  });

  it.skipIf(withoutXorriso)('answers HEAD with the headers and no body', async () => {
    const res = await ctx.app.request(`/api/v1/iso-builds/${build.id}/download`, {
      method: 'HEAD',
      headers: { authorization: `Bearer ${ctx.config.adminToken}` },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-length')).toBe(String(build.size_bytes));
    expect(res.headers.get('etag')).toBe(`"${build.sha256}"`);
    expect((await res.arrayBuffer()).byteLength).toBe(0);
  });

  it.each(['pending', 'running', 'failed'] as const)('answers 409 iso_not_ready for a %s build', async (status) => {
    const queued = await triggerBuild(ctx, org.id);
    if (status === 'running')
      await ctx.sql`update iso_builds set status = 'running', started_at = now_ms(), progress = 40 where id = ${queued.id}`;
    if (status === 'failed')
      await ctx.sql`update iso_builds set status = 'failed', finished_at = now_ms(), error = 'x' where id = ${queued.id}`;
    const res = await ctx.request('GET', `/api/v1/iso-builds/${queued.id}/download`);
    expect(res.status).toBe(409);
    expect(res.body.error).toBe('iso_not_ready');
    expect(res.body.message).toContain(status);
    await ctx.sql`delete from iso_builds where id = ${queued.id}`;
  });

  it.skipIf(withoutXorriso)('answers 404 for an unknown, malformed or deleted build', async () => {
    for (const id of [crypto.randomUUID(), 'not-a-uuid']) {
      const res = await ctx.request('GET', `/api/v1/iso-builds/${id}/download`);
      expect(res.status).toBe(404);
      expect(res.body.error).toBe('not_found');
    }
    const other = await createOrganization(ctx);
    const first = await triggerBuild(ctx, other.id);
    await runJobs(ctx, workerDeps(ctx));
    expect((await downloadBytes(ctx, first.id)).status).toBe(200);
    await triggerBuild(ctx, other.id);
    await runJobs(ctx, workerDeps(ctx)); // replaces the first
    const res = await ctx.request('GET', `/api/v1/iso-builds/${first.id}/download`);
    expect(res.status).toBe(404);
    expect(res.body.error).toBe('not_found');
  });

  it.skipIf(withoutXorriso)("answers 404 when a completed build's file is missing on the server", async () => {
    const other = await createOrganization(ctx);
    const queued = await triggerBuild(ctx, other.id);
    await runJobs(ctx, workerDeps(ctx));
    await unlink(join(isoDir, `fleet-installer-${queued.id}.iso`));
    const res = await ctx.request('GET', `/api/v1/iso-builds/${queued.id}/download`);
    expect(res.status).toBe(404);
    expect(res.body.error).toBe('not_found');
  });
});

describe('admin authentication', () => {
  it.each([
    ['no token', null],
    ['wrong token', 'wrong-token'],
  ])('answers 401 unauthorized for %s on every ISO endpoint and writes nothing', async (_case, token) => {
    const org = await createOrganization(ctx);
    const queued = await triggerBuild(ctx, org.id);
    const before = [await countRows(ctx.sql, 'iso_builds'), await jobCount()];
    for (const [method, path, body] of [
      ['POST', `/api/v1/organizations/${org.id}/iso-builds`, { wlan: { ssid: 'Net', psk: 'long enough psk' } }],
      ['GET', `/api/v1/organizations/${org.id}/iso-builds`, undefined],
      ['GET', `/api/v1/iso-builds/${queued.id}`, undefined],
      ['GET', `/api/v1/iso-builds/${queued.id}/download`, undefined],
    ] as const) {
      const res = await ctx.request(method, path, { body, token });
      expect(res.status, `${method} ${path}`).toBe(401);
      expect(res.body.error).toBe('unauthorized');
    }
    expect([await countRows(ctx.sql, 'iso_builds'), await jobCount()]).toEqual(before);
  });
});

describe('OpenAPI document', () => {
  it('documents the four ISO operations with their errors and the download responses', async () => {
    const res = await ctx.request('GET', '/api/v1/openapi.json', { token: null });
    const paths = res.body.paths;
    expect(paths['/api/v1/organizations/{id}/iso-builds'].post.operationId).toBe('createIsoBuild');
    expect(paths['/api/v1/organizations/{id}/iso-builds'].post.responses).toHaveProperty('202');
    expect(paths['/api/v1/organizations/{id}/iso-builds'].get.operationId).toBe('listIsoBuilds');
    expect(paths['/api/v1/iso-builds/{id}'].get.operationId).toBe('getIsoBuild');
    const download = paths['/api/v1/iso-builds/{id}/download'].get;
    // Its 400 is an unknown query parameter's: nothing it takes (its id, Range, If-Range) fails validation.
    expect(Object.keys(download.responses).sort()).toEqual([
      '200',
      '206',
      '400',
      '401',
      '403',
      '404',
      '409',
      '416',
      '500',
    ]);
    expect(download.responses['400'].content['application/json'].examples.invalid_request.value.details).toEqual([
      { path: ['serial'], message: 'not a parameter of this call' },
    ]);
    expect(download.responses['200'].content).toHaveProperty('application/x-iso9660-image');
    expect(download.responses['409'].description).toContain('iso_not_ready');
    expect(download.responses['416'].description).toContain('range_not_satisfiable');
  });
});

describe('end to end with the real worker running', () => {
  it.skipIf(withoutXorriso)(
    'trigger, poll until completed, download: the bytes are the file and the sha256',
    async () => {
      const org = await createOrganization(ctx);
      const log = capturingLogger();
      const runner = await startWorker(ctx.db.url, workerDeps(ctx, {}, log), 1, { pollIntervalMs: 100 });
      try {
        const queued = await triggerBuild(ctx, org.id, { wlan: { ssid: 'Werkstatt', psk: 'werkstatt-passphrase' } });
        const done = await waitForStatus(ctx, queued.id, ['completed', 'failed']);
        expect(done).toMatchObject({ status: 'completed', progress: 100, error: null });

        const download = await downloadBytes(ctx, queued.id);
        expect(download.status).toBe(200);
        const path = join(isoDir, `fleet-installer-${queued.id}.iso`);
        expect(sha256Hex(download.bytes)).toBe(done.sha256);
        expect(await sha256OfFile(path)).toBe(done.sha256);
        expect((await stat(path)).size).toBe(done.size_bytes);
        expect(isIso9660(download.bytes)).toBe(true);
        expect(isoFiles(path)).toEqual(
          expect.arrayContaining(['/fleet/provisioning.json', '/fleet/wlan.nmconnection']),
        );
        const provisioning = JSON.parse(await extractFromIso(path, '/fleet/provisioning.json'));
        expect(provisioning.credential).toBe(await activationCodeOf(ctx, org.id));
        expect(log.lines.join('\n')).not.toContain('werkstatt-passphrase');
        // Logged by the task after the row says completed.
        await expect
          .poll(() => log.lines.some((l) => l.includes('iso build completed')), { timeout: 15_000 })
          .toBe(true);
      } finally {
        await runner.stop();
      }
    },
  );
});
