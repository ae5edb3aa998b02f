/**
 * The agent's check-in (api/agent/README.md), on its one path (checkin_path.ts): one read
 * statement (on the replica when there is a healthy one), shared by the check-ins of the
 * same turn of the event loop (batched_reads.ts), finds the device by the secret's hash and
 * returns its own inputs of its desired state, and the heartbeat is recorded for the next
 * batched write (heartbeats.ts); hardware, when sent, is stored at once in that statement
 * on the primary, with the agent version. A version sent without hardware is written only
 * when it differs from the one the read returned. The ETag is a stamp of the answer's
 * content, so it moves exactly when the answer does; the stamp of the inputs (the read's
 * own columns and the versions of everything else the answer depends on) is the key under
 * which each process remembers that content's tag (`contentTags`), so an unchanged state is
 * answered 304 without resolving the catalog at all.
 */
import { Buffer } from 'node:buffer';
import { type AppConfig, DEFAULT_INVENTORY_REFRESH_HOURS } from '../config.ts';
import type { Db } from '../db/client.ts';
import { seedDataCache } from '../db/seed_cache.ts';
import { resolveStateRow } from '../catalog/state.ts';
import type { z } from '@hono/zod-openapi';
import { isLiveDevice, requireLiveDevice } from './auth.ts';
import type { CheckinPath } from './checkin_path.ts';
import * as repo from './repo.ts';
import { checkinState } from './batched_reads.ts';
import { rotationOf } from '../disk_keys/service.ts';
import { checkinActions, markDelivered } from '../actions/service.ts';
import type { CheckinResponse } from './schemas.ts';

export type CheckinAnswer =
  | { etag: string; notModified: true }
  | { etag: string; notModified: false; body: z.infer<typeof CheckinResponse> };

/**
 * Records the check-in and answers the desired state, or `notModified` when the agent's
 * `If-None-Match` names the current ETag. Throws 401 for a secret of no device and 403 for
 * a deprovisioned or archived one; nothing is written or recorded then.
 */
export async function checkIn(
  db: Db,
  config: AppConfig,
  input: CheckinInput,
  path: CheckinPath,
): Promise<CheckinAnswer> {
  const at = Date.now();
  const { heartbeats, reads } = path;
  // Bound rather than a closure: under tsx (esbuild's keepNames) a named closure costs a
  // defineProperty on every check-in.
  const read = readCheckin.bind(null, config, input);
  // Hardware is a write: the primary. Everything else may come from the replica.
  let { row, answer } =
    input.hardware === undefined ? await reads.read(db, read) : await reads.onPrimary(path.writes, read);
  // A secret the replica does not know may be one the primary issued a moment ago (a device
  // that just bootstrapped or was reprovisioned): only the primary may call it unknown.
  if (!row && input.hardware === undefined && reads.usingReplica) ({ row, answer } = await reads.onPrimary(db, read));
  requireLiveDevice(row);
  heartbeats.record(row!.id, at);
  // The answer (a 200, or a 304 for the tag of one) carries the device's open actions: the
  // pending ones are delivered now. Only a device with actions has any.
  if (row!.actions !== null) await markDelivered(path.writes, checkinActions(row!.actions).pending);
  // With hardware the version was written in that statement; without, only a changed one is.
  if (input.hardware === undefined && input.agentVersion !== undefined && input.agentVersion !== row!.agent_version) {
    await repo.storeAgentVersion(path.writes, row!.id, input.agentVersion);
  }
  return answer!;
}

interface CheckinInput {
  secretHash: Uint8Array;
  hardware: Record<string, unknown> | undefined;
  agentVersion: string | undefined;
  ifNoneMatch: string | undefined;
  /** The hash of the inventory the agent holds (64 lowercase hex digits), if it sent one. */
  inventoryHash?: string | undefined;
}

/** The device behind the secret (storing its hardware when sent) and, when it is live, its answer. */
async function readCheckin(config: AppConfig, input: CheckinInput, source: Db) {
  const row =
    input.hardware === undefined
      ? await checkinState(source, input.secretHash)
      : await repo.checkinStateStoringHardware(source, input.secretHash, input.hardware, input.agentVersion);
  return { row, answer: row && isLiveDevice(row) ? await answerFor(source, config, row, input) : undefined };
}

/**
 * The ETag of a live device's desired state, and the state itself unless the agent has it.
 * The tag is always the content's (`contentTag`): remembered under the stamp of the read's
 * inputs when they are as before, else computed from the answer resolved now, the very
 * body that is sent when the agent's tag differs.
 */
async function answerFor(
  db: Db,
  config: AppConfig,
  row: repo.CheckinRow,
  input: { ifNoneMatch: string | undefined; inventoryHash?: string | undefined },
): Promise<CheckinAnswer> {
  // Compared with the hash on the row the read returned: no statement of its own.
  const wanted = inventoryWanted(row, input.inventoryHash);
  const inputs = `${answerStamp(config, await seedVersion(db, ''))}|${stateInputs(row)}`;
  const key = stampPair(inputs);
  const tags = contentTagsOf(db);
  const known = tags.get(key);
  if (
    !wanted &&
    known !== undefined &&
    input.ifNoneMatch !== undefined &&
    matchesIfNoneMatch(input.ifNoneMatch, known)
  ) {
    return { etag: known, notModified: true };
  }
  // The inputs moved (or this process has not seen them, or the agent holds another tag):
  // resolve from the in-memory caches and tag what would be sent.
  const { template, catalog, resolved } = await resolveStateRow(db, row);
  const body: z.infer<typeof CheckinResponse> = {
    device_id: row.id,
    blueprints: await repo.cachedTemplateBlueprints(db, template.id),
    repository_url: config.roleRepositoryUrl,
    poll_interval_seconds: config.agentPollIntervalSeconds,
    auftraege: resolved.map((s, i) => ({
      merkmal: s.merkmal,
      ansible_role: catalog[i]!.ansibleRole,
      state: s.state,
      optionen: s.optionen,
    })),
    inventory_refresh_hours: refreshHours(config),
    disk_key_rotation: await rotationOf(db, config, row.disk_key_rotation),
    actions: checkinActions(row.actions).actions,
  };
  const etag = contentTag(body);
  if (known !== etag) {
    tags.delete(key);
    tags.set(key, etag);
    if (tags.size > MAX_CONTENT_TAGS) tags.delete(tags.keys().next().value!);
  }
  // An answer asking for the inventory is another content, and always sent: the agent may
  // hold its tag from an earlier such answer whose inventory never arrived.
  if (wanted)
    return {
      etag: contentTag({ ...body, inventory: 'wanted' }),
      notModified: false,
      body: { ...body, inventory: 'wanted' },
    };
  if (input.ifNoneMatch !== undefined && matchesIfNoneMatch(input.ifNoneMatch, etag)) {
    return { etag, notModified: true };
  }
  return { etag, notModified: false, body };
}

/**
 * The ETag of an answer: a stamp of its content in a canonical form (fixed field order,
 * `optionen` with their keys sorted at every depth), with the answer's format version. The
 * device id is left out: it never changes for a device, and without it devices with the
 * same inputs share one remembered tag.
 */
function contentTag(body: z.infer<typeof CheckinResponse>): string {
  let text = `${ANSWER_FORMAT}|${body.repository_url}|${body.poll_interval_seconds}|${body.inventory_refresh_hours}|${body.inventory ?? ''}|`;
  for (const b of body.blueprints) text += `${JSON.stringify(b.merkmal)}:${JSON.stringify(b.ansible_role)},`;
  text += '|';
  for (const a of body.auftraege) {
    text += `${JSON.stringify(a.merkmal)}:${JSON.stringify(a.ansible_role)}:${a.state}:${canonicalJson(a.optionen)},`;
  }
  // The key itself never changes for a key id: the id stands for it.
  text += `|${body.disk_key_rotation?.key_id ?? ''}|`;
  // Nor does an action's type, parameters or expiry: its id stands for them.
  for (const a of body.actions) text += `${a.id},`;
  return `"${stampPair(text)}"`;
}

/** JSON with every object's keys sorted, so equal `optionen` give equal text whatever order they came in. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * Inputs stamps remembered per database client (the replica's and the primary's apart, as
 * their caches are), each with the content tag of the answer resolved for them; the oldest
 * goes first. Devices with the same inputs share an entry. A stamp forgotten (evicted, a
 * restarted process, another API process) costs one resolution from memory, never a 200:
 * the tag is the content's, the same in every process.
 */
const contentTagsPerClient = new WeakMap<object, Map<string, string>>();
const MAX_CONTENT_TAGS = 200_000;

function contentTagsOf(db: Db): Map<string, string> {
  let tags = contentTagsPerClient.get(db);
  if (!tags) contentTagsPerClient.set(db, (tags = new Map()));
  return tags;
}

/**
 * The shape of the answer: raised whenever a field is added, so an agent that cached a tag
 * of the older shape (e.g. `auftraege` without `ansible_role`) gets the new one once. The
 * roles themselves are seed data and move with `seedVersion`.
 */
const ANSWER_FORMAT = 4;

function refreshHours(config: AppConfig): number {
  return config.inventoryRefreshHours ?? DEFAULT_INVENTORY_REFRESH_HOURS;
}

/**
 * Whether the answer asks for the inventory: the agent sent the hash of the one it holds and
 * the device's row holds another (or none). An agent that sends no hash is never asked.
 */
function inventoryWanted(row: repo.CheckinRow, agentHash: string | undefined): boolean {
  if (agentHash === undefined) return false;
  const held = row.inventory_hash;
  return held === null || Buffer.from(held.buffer, held.byteOffset, held.byteLength).toString('hex') !== agentHash;
}

/**
 * Everything of the device's own that decides its desired state: its template, its org
 * unit, its groups, its own overrides (both in the order the database gives them), the
 * rollouts applied to it (what each changes is fixed when it is created), and the
 * version of its organization's org-unit tree and unit and group overrides (moved by
 * triggers on every change of them), and its open actions (null for a device without any). While these are as before the answer is as before;
 * when they moved, the answer may still be the same (an empty group created): the key of
 * `contentTags`, never the ETag itself.
 */
function stateInputs(row: repo.CheckinRow): string {
  return `${row.template_id}|${row.oe_id}|${row.organization_id}:${row.override_version}|${row.group_ids}|${row.device}|${row.rollouts}|${row.disk_key_rotation}|${row.actions ?? ''}`;
}

/**
 * The stamp of what every device's answer shares (its shape, the seed data, the
 * configuration), computed once per configuration and seed version: the inputs stamp is a
 * stamp of it and the device's own inputs.
 */
const answerStamps = new WeakMap<AppConfig, { seedVersion: string; stamp: string }>();
function answerStamp(config: AppConfig, version: string): string {
  let known = answerStamps.get(config);
  if (known?.seedVersion !== version) {
    known = {
      seedVersion: version,
      stamp: stamp(
        `${ANSWER_FORMAT}|${version}|${config.roleRepositoryUrl}|${config.agentPollIntervalSeconds}|${refreshHours(config)}`,
      ),
    };
    answerStamps.set(config, known);
  }
  return known.stamp;
}

/** The seed catalog, templates and blueprints change only with a migration: its version stands for them. */
const seedVersion = seedDataCache(async (db) => {
  const [row] = await db<{ version: string | null }[]>`select max(version) as version from schema_migrations`;
  return row?.version ?? '';
});

/**
 * Two 53-bit stamps of `text` (differently seeded), 28 hex digits: with a key shared by
 * every device of the same inputs, one stamp's collisions would be within reach of a fleet.
 */
function stampPair(text: string): string {
  return `${stamp(text).padStart(14, '0')}${stamp(text, 0x9e3779b9).padStart(14, '0')}`;
}

/** A 53-bit hash (cyrb53) as hex: an ETag needs no cryptographic strength, only to change with its input. */
function stamp(text: string, seed = 0): string {
  let h1 = 0xdeadbeef ^ seed;
  let h2 = 0x41c6ce57 ^ seed;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ ch, 2654435761);
    h2 = Math.imul(h2 ^ ch, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return (4294967296 * (2097151 & h2) + (h1 >>> 0)).toString(16);
}

/**
 * RFC 9110 §13.1.2: `*`, or a list of entity tags compared weakly (a `W/` prefix does not
 * matter).
 */
function matchesIfNoneMatch(header: string, etag: string): boolean {
  if (header.trim() === '*') return true;
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}
