/**
 * Bulk actions over more than BULK_JOB_THRESHOLD devices run as a job of the worker: the
 * request that starts one checks and counts, records the filter and answers at once; the
 * task `device_bulk` fixes the list of devices the filter matches in its first chunk, then
 * changes them a chunk at a time, each device by its single change's service function and
 * audit event, each chunk's changes and the job's progress in one transaction, and queues
 * the next chunk in it (a chunk retried after a crash changes nothing twice).
 */
import { authorizeCaller } from '../access/authorize.ts';
import { BULK_CHUNK, changeChunk } from '../access/bulk.ts';
import type { Caller } from '../access/declaration.ts';
import { isKeyUsable } from '../access/keys.ts';
import type { Db, Sql } from '../db/client.ts';
import { type DeviceFilter, lockDevices, matchingDeviceIdsQuery } from '../devices/organize_repo.ts';
import { ApiError } from '../http/errors.ts';
import { type BulkAction, changeOf, operationOf, requestOf } from './actions.ts';

/** A bulk action over more devices than this runs as a job. */
export const BULK_JOB_THRESHOLD = 1_000;
export const DEVICE_BULK_TASK = 'device_bulk';
/** Refused devices kept with their reason per job (the count is kept whole). */
const KEPT_REFUSALS = 1_000;

export interface Refusal {
  device_id: string;
  code: string;
  message: string;
}

export interface BulkJobRow {
  id: string;
  organization_id: string;
  action: BulkAction;
  target: string;
  target_name: string;
  /** The device list's filter it was started from: its devices, and the way back. */
  filter: DeviceFilter;
  /** The devices it changes; until its first chunk fixed them, the count its request made. */
  total: number;
  done: number;
  changed: number;
  refused: number;
  refusals: Refusal[];
  status: 'queued' | 'running' | 'completed' | 'failed';
  error: string | null;
  created_at: Date;
  finished_at: Date | null;
}

const jobKey = (id: string) => `${DEVICE_BULK_TASK}:${id}`;

/**
 * Records the job over the filter's devices (`count` of them now) and queues its first
 * chunk, in the caller's transaction; its id. The devices are listed by that chunk.
 */
export async function queueBulkJob(
  tx: Db,
  input: {
    organizationId: string;
    action: BulkAction;
    target: string;
    targetName: string;
    filter: DeviceFilter;
    caller: Caller;
    requestId: string;
    count: number;
  },
): Promise<string> {
  const [row] = await tx<{ id: string }[]>`
    insert into device_bulk_jobs (organization_id, action, target, target_name, filter, caller, request_id, total)
    values (${input.organizationId}, ${input.action}, ${input.target}, ${input.targetName.slice(0, 400)},
            ${tx.json(input.filter as Parameters<typeof tx.json>[0])}, ${tx.json(input.caller)}, ${input.requestId},
            ${input.count})
    returning id`;
  await tx`
    select from graphile_worker.add_job(${DEVICE_BULK_TASK}, json_build_object('bulk_job_id', ${row!.id}::uuid),
             job_key => ${jobKey(row!.id)}::text, max_attempts => 3)`;
  return row!.id;
}

/** The job as its page shows it; null when there is none. */
export async function getBulkJob(db: Db, id: string): Promise<BulkJobRow | null> {
  const [row] = await db<BulkJobRow[]>`
    select id, organization_id, action, target, target_name, filter, total, done, changed, refused, refusals,
           status, error, created_at, finished_at
      from device_bulk_jobs where id = ${id}`;
  return row ?? null;
}

/** Ends the job as failed with the reason (a revoked key, a chunk that failed on every attempt). */
export async function failBulkJob(db: Db, id: string, error: string): Promise<void> {
  await db`
    update device_bulk_jobs set status = 'failed', error = ${error.slice(0, 1000)}, finished_at = now()
     where id = ${id} and status in ('queued', 'running')`;
}

interface ChunkRow {
  organization_id: string;
  action: BulkAction;
  target: string;
  filter: DeviceFilter;
  caller: Caller;
  request_id: string;
  status: BulkJobRow['status'];
  listed: boolean;
  done: number;
  total: number;
  kept: number;
  chunk: string[] | null;
}

const chunkOf = async (tx: Db, id: string) =>
  (
    await tx<ChunkRow[]>`
      select organization_id, action, target, filter, caller, request_id, status, device_ids is not null as listed,
             done, total, jsonb_array_length(refusals) as kept, device_ids[done + 1 : done + ${BULK_CHUNK}] as chunk
        from device_bulk_jobs where id = ${id} for no key update`
  )[0];

/**
 * The job's next chunk: the caller checked again (a revoked or expired key ends the job),
 * in the first chunk the devices its filter matches listed (the job then changes those,
 * whatever the filter matches later), each device changed as its single change, the
 * progress and the next chunk's job in the same transaction. Returns whether the job is finished.
 */
export async function runBulkChunk(sql: Sql, id: string, pollIntervalSeconds: number): Promise<boolean> {
  return sql.begin(async (tx) => {
    let job = await chunkOf(tx, id);
    if (job === undefined || job.status === 'completed' || job.status === 'failed') return true;
    const { caller, action, target } = job;
    if (caller.type === 'api_key' && !(await isKeyUsable(tx, caller.apiKeyId))) {
      await failBulkJob(tx, id, `the API key "${caller.name}" that started it was revoked or expired`);
      return true;
    }
    const operation = operationOf(action);
    // The role again (a key demoted meanwhile); the devices are the organization's own.
    await authorizeCaller(tx, caller, operation.access, () => [], job.organization_id);
    if (!job.listed) {
      let matching: Awaited<ReturnType<typeof matchingDeviceIdsQuery>>;
      try {
        matching = await matchingDeviceIdsQuery(tx, job.organization_id, job.filter, { pollIntervalSeconds });
      } catch (err) {
        // The filter no longer holds (its unit or group deleted meanwhile): no retry helps.
        if (!(err instanceof ApiError)) throw err;
        await failBulkJob(tx, id, err.message);
        return true;
      }
      await tx`
        update device_bulk_jobs set device_ids = ids, total = cardinality(ids)
          from (select array(${matching.ids}) as ids) m
         where id = ${id}`;
      job = (await chunkOf(tx, id))!;
    }
    const chunk = job.chunk ?? [];
    const outcome = await changeChunk(tx, operation, caller, job.request_id, chunk, {
      requestOf: (deviceId) => requestOf(action, target, deviceId),
      lock: lockDevices,
      change: changeOf(action, target, pollIntervalSeconds),
    });
    const refusals: Refusal[] = outcome.failed
      .slice(0, Math.max(0, KEPT_REFUSALS - job.kept))
      .map(({ item, error }) => ({ device_id: item, code: error.code, message: error.message.slice(0, 500) }));
    const done = job.done + chunk.length;
    const finished = done >= job.total;
    await tx`
      update device_bulk_jobs
         set done = ${done}, changed = changed + ${outcome.changed.length}, refused = refused + ${outcome.failed.length},
             refusals = refusals || ${tx.json(refusals as unknown as Parameters<typeof tx.json>[0])},
             status = ${finished ? 'completed' : 'running'}, finished_at = ${finished ? tx`now()` : null}
       where id = ${id}`;
    if (!finished) {
      await tx`
        select from graphile_worker.add_job(${DEVICE_BULK_TASK}, json_build_object('bulk_job_id', ${id}::uuid),
                 job_key => ${jobKey(id)}::text, max_attempts => 3)`;
    }
    return finished;
  });
}
