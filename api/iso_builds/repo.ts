/** SQL of ISO builds on the API side: trigger (row and job in one transaction) and reads. */
import type { Db, Sql } from '../db/client.ts';
import { notFound } from '../http/errors.ts';
import { iso } from '../http/openapi.ts';
import { afterCursor, type Cursor } from '../http/pagination.ts';
import { BUILD_ISO_MAX_ATTEMPTS, BUILD_ISO_TASK, buildIsoJobKey, type BuildIsoPayloadType } from './job.ts';
import type { IsoBuildType } from './schemas.ts';
import { sealWlan, type WlanCredentials } from './wlan_crypto.ts';

export interface IsoBuildRow {
  id: string;
  organization_id: string;
  status: IsoBuildType['status'];
  progress: number;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
  expires_at: Date | null;
  size_bytes: number | null;
  sha256: string | null;
  error: string | null;
  file_name: string | null;
}

function selectBuilds(db: Db) {
  return db`
    select id, organization_id, status, progress, created_at, started_at, finished_at,
           expires_at, size_bytes, sha256, error, file_name
    from iso_builds`;
}

export function serializeIsoBuild(row: IsoBuildRow): IsoBuildType {
  return {
    id: row.id,
    organization_id: row.organization_id,
    status: row.status,
    progress: row.progress,
    created_at: iso(row.created_at),
    started_at: iso(row.started_at),
    finished_at: iso(row.finished_at),
    expires_at: iso(row.expires_at),
    size_bytes: row.size_bytes,
    sha256: row.sha256,
    error: row.error,
  };
}

/**
 * Inserts the pending build and queues its job in one transaction: no build without a
 * job, no job for a rolled-back row. The WLAN credentials go into the job payload only,
 * sealed with the build id, which is therefore chosen here.
 */
export async function createIsoBuild(
  sql: Sql,
  input: { organizationId: string; wlan: WlanCredentials | undefined; wlanKey: Uint8Array },
): Promise<IsoBuildRow> {
  const id = crypto.randomUUID();
  const payload: BuildIsoPayloadType = {
    build_id: id,
    wlan: input.wlan ? await sealWlan(input.wlanKey, id, input.wlan) : null,
  };
  return sql.begin(async (tx) => {
    // Lock the organization against a concurrent delete, and answer 404 when it is unknown.
    const [org] = await tx`select id from organizations where id = ${input.organizationId} for key share`;
    if (!org) throw notFound('organization', input.organizationId);
    const [row] = await tx<IsoBuildRow[]>`
      insert into iso_builds (id, organization_id, status)
      values (${id}, ${input.organizationId}, 'pending')
      returning id, organization_id, status, progress, created_at, started_at, finished_at,
                expires_at, size_bytes, sha256, error, file_name`;
    // ::text first: a bare ::json parameter would be sent JSON-encoded a second time.
    await tx`
      select from graphile_worker.add_job(
        ${BUILD_ISO_TASK},
        ${JSON.stringify(payload)}::text::json,
        max_attempts => ${BUILD_ISO_MAX_ATTEMPTS}::int,
        job_key => ${buildIsoJobKey(id)})`;
    return row!;
  });
}

export async function getIsoBuild(db: Db, id: string): Promise<IsoBuildRow | null> {
  const [row] = await db<IsoBuildRow[]>`${selectBuilds(db)} where id = ${id}`;
  return row ?? null;
}

/** Newest first, keyset-paged on (created_at, id) descending. */
export async function listIsoBuilds(
  db: Db,
  organizationId: string,
  cursor: Cursor | null,
  limit: number,
): Promise<IsoBuildRow[]> {
  return db<IsoBuildRow[]>`
    ${selectBuilds(db)}
    where organization_id = ${organizationId} and ${afterCursor(db, cursor, 'desc')}
    order by created_at desc, id desc
    limit ${limit + 1}`;
}
