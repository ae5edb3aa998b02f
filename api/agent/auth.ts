/**
 * The agent's credential: issuing agent secrets, the bearer checks of check-in and report,
 * and the one rule of which devices may still call in (`agentRefusal`).
 *
 * The check-in's (`agentSecretHash`) only checks the shape of `Authorization: Bearer
 * <secret>` and hands the SHA-256 of the secret to the handler; it does not query the
 * database. The handler folds the lookup (one probe of the unique index on
 * `devices.agent_secret_hash`) into its first statement, so a check-in stays at one SQL
 * round trip. An unknown secret and a secret of a device that never existed are the same
 * case to the database (no row), so the answer and the work done are the same; no
 * per-device comparison happens in TypeScript.
 */
import type { MiddlewareHandler } from 'hono';
import type { Db } from '../db/client.ts';
import type { HandlerDeps } from '../access/app_env.ts';
import { bearerToken } from '../http/auth.ts';
import { hashSecret, randomToken } from '../http/crypto.ts';
import { ApiError } from '../http/errors.ts';

/** Issued secrets are 32 random bytes in base64url without padding: 43 characters. */
const AGENT_SECRET_BYTES = 32;
const agentSecretShape = /^[A-Za-z0-9_-]{43}$/;

export function issueAgentSecret(): { secret: string; hash: Uint8Array } {
  const secret = randomToken(AGENT_SECRET_BYTES);
  return { secret, hash: hashSecret(secret) };
}

function invalidAgentSecret(): ApiError {
  return new ApiError(
    'invalid_agent_secret',
    'a valid agent secret is required (Authorization: Bearer <agent_secret>)',
    {
      headers: { 'WWW-Authenticate': 'Bearer' },
    },
  );
}

/** The SHA-256 of the bearer agent secret; a missing or malformed one is 401 before the body is even read. */
export function agentSecretHash(authorization: string | undefined): Uint8Array {
  const secret = bearerToken(authorization);
  if (secret === null || !agentSecretShape.test(secret)) throw invalidAgentSecret();
  return hashSecret(secret);
}

/**
 * For calls that look the device up anyway (the report): the secret is checked against the
 * database before the body is validated, so an unknown secret is 401 whatever the body.
 */
export function liveAgentDevice<D extends AgentDeviceState>(
  find: (db: Db, hash: Uint8Array) => Promise<D | undefined>,
) {
  const middleware: MiddlewareHandler<{ Variables: { agentDevice: D; deps: HandlerDeps } }> = async (c, next) => {
    const hash = agentSecretHash(c.req.header('authorization'));
    c.set('agentDevice', requireLiveDevice(await find(c.get('deps').sql, hash)));
    await next();
  };
  return middleware;
}

/** What the agent's calls need to know about the device behind a secret. */
export interface AgentDeviceState {
  id: string;
  deprovisioned_at: Date | null;
  archived_at: Date | null;
}

/** Why a device's agent may no longer call in, the one rule of every agent call; null: it may. */
export type AgentRefusal = 'device_archived' | 'device_deprovisioned';

/**
 * Whether the device may still use its agent (check-in, report, bootstrap), and if not why.
 * Archived wins over deprovisioned: it is the later, final state.
 */
function agentRefusal(device: AgentDeviceState): AgentRefusal | null {
  if (device.archived_at !== null) return 'device_archived';
  if (device.deprovisioned_at !== null) return 'device_deprovisioned';
  return null;
}

export function isLiveDevice(device: AgentDeviceState): boolean {
  return agentRefusal(device) === null;
}

/** The 403 messages of an agent's calls; bootstrap names its own remedy. */
const callingIn: Record<AgentRefusal, string> = {
  device_archived: 'this device is archived; its agent may no longer call in',
  device_deprovisioned: 'this device is deprovisioned; an admin must reprovision it before its agent can call in again',
};

/** 401 for no device, 403 (with `messages`) for a device whose agent may no longer call in. */
export function requireLiveDevice<T extends AgentDeviceState>(
  device: T | undefined | null,
  messages: Record<AgentRefusal, string> = callingIn,
): T {
  if (!device) throw invalidAgentSecret();
  const refusal = agentRefusal(device);
  if (refusal !== null) throw new ApiError(refusal, messages[refusal]);
  return device;
}
