/**
 * SQL of ISO builds: the trigger (row and job in one transaction) and the reads, the API's
 * and the build host's. Every later change of a build's state is in transitions.ts.
 */
import { afterCursor } from '../db/keyset.ts';
import { type Db, transaction } from '../db/client.ts';
import { ApiError, notFound } from '../http/errors.ts';
import { iso } from '../http/openapi.ts';
import type { Cursor } from '../http/pagination.ts';
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
  template_id: string | null;
  enrollment_session_id: string | null;
  development_base: boolean;
}

function selectBuilds(db: Db) {
  return db`
    select id, organization_id, status, progress, created_at, started_at, finished_at,
           expires_at, size_bytes, sha256, error, file_name, template_id, enrollment_session_id, development_base
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
    template_id: row.template_id,
    enrollment_session_id: row.enrollment_session_id,
    development_base: row.development_base,
  };
}

/**
 * Inserts the pending build and queues its job in one transaction: no build without a
 * job, no job for a rolled-back row. The WLAN credentials go into the job payload only,
 * sealed with the build id, which is therefore chosen here.
 */
export async function createIsoBuild(
  sql: Db,
  input: {
    organizationId: string;
    wlan: WlanCredentials | undefined;
    wlanKey: Uint8Array;
    templateId?: string | undefined;
    enrollmentSessionId?: string | undefined;
  },
): Promise<IsoBuildRow> {
  const id = crypto.randomUUID();
  const payload: BuildIsoPayloadType = {
    build_id: id,
    wlan: input.wlan ? await sealWlan(input.wlanKey, id, input.wlan) : null,
  };
  return transaction(sql, async (tx) => {
    // Lock the organization against a concurrent delete, and answer 404 when it is unknown.
    const [org] = await tx`select id from organizations where id = ${input.organizationId} for key share`;
    if (!org) throw notFound('organization', input.organizationId);
    const templateId = await bindingOf(tx, input);
    const [row] = await tx<IsoBuildRow[]>`
      insert into iso_builds (id, organization_id, status, template_id, enrollment_session_id)
      values (${id}, ${input.organizationId}, 'pending', ${templateId}, ${input.enrollmentSessionId ?? null})
      returning id, organization_id, status, progress, created_at, started_at, finished_at,
                expires_at, size_bytes, sha256, error, file_name, template_id, enrollment_session_id,
                development_base`;
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

/**
 * The template the build installs, checked: a session of the organization that an
 * installer could still use (share-locked against a concurrent revoke), and a template
 * that exists and, with a session, is the session's own.
 */
async function bindingOf(
  tx: Db,
  input: { organizationId: string; templateId?: string | undefined; enrollmentSessionId?: string | undefined },
): Promise<string | null> {
  let templateId = input.templateId ?? null;
  if (input.enrollmentSessionId !== undefined) {
    const [session] = await tx<{ template_id: string; usable: boolean; why: string }[]>`
      select template_id,
             revoked_at is null and expires_at > now() and devices_used < max_devices as usable,
             case when revoked_at is not null then 'revoked'
                  when expires_at <= now() then 'expired'
                  else 'used up (' || devices_used || ' of ' || max_devices || ' devices)' end as why
      from enrollment_sessions
      where id = ${input.enrollmentSessionId} and organization_id = ${input.organizationId}
      for share`;
    if (!session) throw notFound('enrollment session', input.enrollmentSessionId);
    if (!session.usable) {
      throw new ApiError(
        'invalid_activation_code',
        `enrollment session ${input.enrollmentSessionId} is ${session.why}: an image bound to it could not ` +
          'activate any device; create a new session or build without one',
      );
    }
    if (templateId !== null && templateId !== session.template_id) {
      throw new ApiError(
        'template_not_allowed',
        `enrollment session ${input.enrollmentSessionId} only offers template ${session.template_id}, ` +
          `not ${templateId}`,
      );
    }
    templateId = session.template_id;
  }
  if (templateId !== null) {
    const [template] = await tx`select 1 from templates where id = ${templateId}`;
    if (!template) throw notFound('template', templateId);
  }
  return templateId;
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

/**
 * The organization's builds still in progress (pending or running), oldest first, at most
 * `limit`; each row carries how many are in progress in all, so a short list can say so.
 */
export async function listIsoBuildsInProgress(
  db: Db,
  organizationId: string,
  limit: number,
): Promise<Array<IsoBuildRow & { in_progress: number }>> {
  // The window counts every build in progress: it is taken before the limit.
  return db<Array<IsoBuildRow & { in_progress: number }>>`
    select b.*, count(*) over ()::int as in_progress
    from (${selectBuilds(db)} where organization_id = ${organizationId} and status in ('pending', 'running')) b
    order by created_at, id
    limit ${limit}`;
}

export interface BuildTemplate {
  id: string;
  backend: string;
  partitioning: { scheme: string; root_filesystem: string };
  installation: Record<string, unknown>;
}

/**
 * The template the image installs: its own, else the default template of the preferred
 * backend, which is what an activation with the organization's code offers as default.
 */
export async function buildTemplate(db: Db, templateId: string | null): Promise<BuildTemplate> {
  const [row] = await db<BuildTemplate[]>`
    select t.id, t.backend, t.partitioning, t.installation from templates t
     where t.id = coalesce(${templateId}::uuid, (select d.id from templates d join backends b on b.key = d.backend
                                                 where b.preferred and d.is_default))`;
  if (!row) throw new Error(`template ${templateId ?? '(preferred default)'} not found`);
  return row;
}

/** Why an installer could not use the session now, or null when it can. */
export async function sessionUnusable(db: Db, sessionId: string): Promise<string | null> {
  const [row] = await db<{ why: string | null }[]>`
    select case when revoked_at is not null then 'revoked'
                when expires_at <= now() then 'expired'
                when devices_used >= max_devices then 'used up' end as why
      from enrollment_sessions where id = ${sessionId}`;
  return row ? row.why : 'gone';
}

/** Status and file of the given builds, for the sweep's look at files no build owns. */
export function buildFiles(
  db: Db,
  ids: string[],
): Promise<Array<{ id: string; status: IsoBuildType['status']; file_name: string | null }>> {
  return db<{ id: string; status: IsoBuildType['status']; file_name: string | null }[]>`
    select id, status, file_name from iso_builds where id = any(${ids}::uuid[])`;
}
