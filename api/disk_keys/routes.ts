/**
 * Disk recovery keys: the installer's and agent's escrow, and the admins' list and reveal.
 * Reading a key is an audited write (a POST with a reason), never a GET.
 */
import { z } from '@hono/zod-openapi';
import type { MiddlewareHandler } from 'hono';
import type { HandlerDeps } from '../access/app_env.ts';
import { recordAudit } from '../access/middleware.ts';
import { defineRoute, newRouter } from '../access/route.ts';
import { deviceExists } from '../devices/lifecycle_repo.ts';
import { notFound } from '../http/errors.ts';
import { IdParams, iso, json, jsonBody } from '../http/openapi.ts';
import { collectionOf, PageQuery } from '../http/pagination.ts';
import type * as repo from './repo.ts';
import { listKeys } from './repo.ts';
import * as ops from './operations.ts';
import { DiskKey, type DiskKeyType, EscrowRequest, RevealRequest, RevealResponse } from './schemas.ts';
import { escrow, escrowingDevice, reveal } from './service.ts';

const tags = ['Disk encryption'];

function serializeDiskKey(row: repo.DiskKeyRow): DiskKeyType {
  return {
    id: row.id,
    luks_uuid: row.luks_uuid,
    keyslot: row.keyslot,
    escrowed_at: iso(row.escrowed_at),
    verified_at: iso(row.verified_at),
    revealed_at: iso(row.revealed_at),
    status: row.status,
  };
}

/** The credential is checked before the body: an unknown one is 401 whatever the body. */
const escrowingCredential: MiddlewareHandler<{
  Variables: { escrowDevice: repo.CredentialDevice; deps: HandlerDeps };
}> = async (c, next) => {
  c.set('escrowDevice', await escrowingDevice(c.get('deps').sql, c.req.header('authorization')));
  await next();
};

const escrowRoute = defineRoute({
  method: 'post',
  path: '/agent/disk-keys',
  operationId: 'escrowDiskKey',
  tags,
  summary: "Escrow a disk's recovery key (installer's late command, agent's rotation)",
  description:
    '`Authorization: Bearer` the bootstrap token of the Runtime Blueprint (the late command, before the first ' +
    'boot; the token stays usable for the bootstrap) or the agent secret. The key is stored sealed (AES-256-GCM) ' +
    "and never shown again except by an admin's reveal. A retry of the same slot replaces the stored key. With " +
    '`replaces` (a key of the same device) the old key becomes `rotated`. An unknown credential is 401 ' +
    '`invalid_agent_secret`, an expired bootstrap token 401 `invalid_bootstrap_token`; a `recovery_key` not in ' +
    "systemd's 8 × 8 format is 400; without `DISK_KEY_ENCRYPTION_KEY` 422 `disk_encryption_unavailable`.",
  access: 'agent',
  middleware: [escrowingCredential] as const,
  errors: [
    'invalid_agent_secret',
    'invalid_bootstrap_token',
    'device_deprovisioned',
    'device_archived',
    'disk_encryption_unavailable',
  ],
  request: { body: jsonBody(EscrowRequest) },
  responses: { 201: json(DiskKey, 'The escrowed key (without the key)') },
});

const listRoute = defineRoute({
  method: 'get',
  path: '/devices/{id}/disk-keys',
  operationId: 'listDiskKeys',
  tags,
  summary: "A device's escrowed disk recovery keys, without the keys",
  description: 'Oldest first. Operator and organization admins only: a viewer key is 403.',
  operation: ops.listDiskKeys,
  errors: ['not_found'],
  request: { params: IdParams, query: PageQuery },
  responses: { 200: json(collectionOf(DiskKey, 'DiskKeyList'), 'A page of keys') },
});

const revealRoute = defineRoute({
  method: 'post',
  path: '/disk-keys/{id}/reveal',
  operationId: 'revealDiskKey',
  tags,
  summary: 'Reveal a recovery key, with a reason',
  description:
    'Returns the recovery key; audited as `disk_key.reveal` with the reason and sent as webhook ' +
    '`disk_key.revealed` (`device_id, key_id, reason`, never the key). A revealed key that is still in use is ' +
    "rotated at the device's next check-in. `reason`: 3–500 characters. Without `DISK_KEY_ENCRYPTION_KEY` 422 " +
    '`disk_encryption_unavailable`.',
  operation: ops.revealDiskKey,
  errors: ['not_found', 'disk_encryption_unavailable'],
  request: { params: IdParams, body: jsonBody(RevealRequest) },
  responses: {
    200: {
      ...json(RevealResponse, 'The recovery key'),
      headers: { 'Cache-Control': { schema: { type: 'string' }, description: '`no-store`' } },
    },
  },
});

const Cursor = z.tuple([z.string(), z.string()]);

function decodeKeyCursor(cursor: string | undefined): { at: Date; id: string } | null {
  if (cursor === undefined) return null;
  try {
    const [at, id] = Cursor.parse(JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')));
    const date = new Date(at);
    if (Number.isNaN(date.getTime()) || !/^[0-9a-f-]{36}$/.test(id)) return null;
    return { at: date, id };
  } catch {
    return null;
  }
}

export function diskKeyRoutes() {
  return newRouter()
    .openapi(escrowRoute, async (c) => {
      const { sql, config } = c.get('deps');
      const row = await escrow(sql, config, c.get('escrowDevice'), c.req.valid('json'));
      return c.json(serializeDiskKey(row), 201);
    })
    .openapi(listRoute, async (c) => {
      const db = c.get('db');
      const { id } = c.req.valid('param');
      const { limit, cursor } = c.req.valid('query');
      const [exists, rows] = await Promise.all([
        deviceExists(db, id),
        listKeys(db, id, decodeKeyCursor(cursor), limit),
      ]);
      if (!exists) throw notFound('device', id);
      const page = rows.slice(0, limit);
      const last = page.at(-1);
      const next =
        rows.length > limit && last
          ? Buffer.from(JSON.stringify([last.escrowed_at.toISOString(), last.id])).toString('base64url')
          : null;
      return c.json({ items: page.map(serializeDiskKey), next_cursor: next }, 200);
    })
    .openapi(revealRoute, async (c) => {
      const { id } = c.req.valid('param');
      const { reason } = c.req.valid('json');
      const result = await reveal(c.get('db'), c.get('deps').config, id, reason);
      recordAudit(c, result.audit);
      c.header('Cache-Control', 'no-store');
      return c.json({ recovery_key: result.recoveryKey }, 200);
    });
}
