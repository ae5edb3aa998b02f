/**
 * Triggering an ISO build, shared by the API route and the portal: queues the build and
 * returns it with the audit entry (which says whether a WLAN profile was given, never
 * its SSID or key).
 */
import { basename, join } from 'node:path';
import type { Context } from 'hono';
import type { HandlerDeps } from '../access/app_env.ts';
import { ApiError, notFound } from '../http/errors.ts';
import { decideRange, fileStream, openFile } from './download.ts';
import type { AuditEntry } from '../access/declaration.ts';
import type { Db } from '../db/client.ts';
import * as repo from './repo.ts';
import type { WlanCredentials } from './wlan_crypto.ts';

export const ISO_CONTENT_TYPE = 'application/x-iso9660-image';

export interface TriggerInput {
  template_id?: string | undefined;
  enrollment_session_id?: string | undefined;
  wlan?: WlanCredentials | undefined;
}

export async function triggerIsoBuild(
  db: Db,
  deps: Pick<HandlerDeps, 'config' | 'log'>,
  organizationId: string,
  body: TriggerInput | undefined,
): Promise<{ row: repo.IsoBuildRow; audit: AuditEntry }> {
  const row = await repo.createIsoBuild(db, {
    organizationId,
    wlan: body?.wlan,
    wlanKey: deps.config.wlanKey,
    templateId: body?.template_id,
    enrollmentSessionId: body?.enrollment_session_id,
  });
  deps.log.info('iso build queued', {
    build_id: row.id,
    organization_id: organizationId,
    wlan: body?.wlan !== undefined,
    template_id: row.template_id,
    enrollment_session: row.enrollment_session_id !== null,
  });
  return {
    row,
    audit: {
      organizationId,
      targetType: 'iso_build',
      targetId: row.id,
      details: {
        wlan: body?.wlan !== undefined,
        template_id: row.template_id,
        enrollment_session_id: row.enrollment_session_id,
      },
    },
  };
}

/**
 * The download of a completed build's image (one byte range, HEAD, If-Range), for the API
 * route and the portal alike; the caller has authorized the read.
 */
export async function serveIsoDownload(
  c: Context<any>,
  sql: Db,
  id: string,
  range: string | undefined,
  ifRange: string | undefined,
): Promise<Response> {
  const { config, log } = c.get('deps') as HandlerDeps;
  const row = await repo.getIsoBuild(sql, id);
  if (!row) throw notFound('ISO build', id);
  if (row.status !== 'completed' || !row.file_name || !row.sha256) {
    throw new ApiError('iso_not_ready', `ISO build ${id} is ${row.status}; only a completed build can be downloaded`);
  }
  const file = await openFile(join(config.isoDir, basename(row.file_name)));
  if (!file) {
    // Deleted by a concurrent replacement or sweep, or the API does not share the build host's ISO folder.
    log.warn('iso file missing', { build_id: id, iso_dir: config.isoDir });
    throw new ApiError('not_found', `the image of ISO build ${id} is no longer on the server`);
  }
  const etag = `"${row.sha256}"`;
  const headers: Record<string, string> = {
    'Content-Type': ISO_CONTENT_TYPE,
    'Content-Disposition': `attachment; filename="${basename(row.file_name)}"`,
    ETag: etag,
    'Accept-Ranges': 'bytes',
    // The image carries the activation code (and maybe a WLAN key): no shared caches.
    'Cache-Control': 'private, no-store',
  };
  const decision = decideRange(range, ifRange, etag, file.size);
  if (decision.kind === 'unsatisfiable') {
    await file.handle.close();
    throw new ApiError('range_not_satisfiable', `the range starts past the end of the image (${file.size} bytes)`, {
      headers: { 'Content-Range': `bytes */${file.size}` },
    });
  }
  if (c.req.method === 'HEAD') {
    await file.handle.close();
    return c.body(null, 200, { ...headers, 'Content-Length': String(file.size) });
  }
  const { start, end } = decision.kind === 'partial' ? decision : { start: 0, end: file.size - 1 };
  const length = end - start + 1;
  const body = fileStream(file.handle, start, end);
  if (decision.kind === 'partial') {
    return c.body(body, 206, {
      ...headers,
      'Content-Length': String(length),
      'Content-Range': `bytes ${start}-${end}/${file.size}`,
    });
  }
  return c.body(body, 200, { ...headers, 'Content-Length': String(file.size) });
}
