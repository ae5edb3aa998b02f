/**
 * Portal sessions: a random token in the `fleet_session` cookie, stored only
 * as its SHA-256 hash; 8 hours; ended at sign-out, and at once when the organization key
 * it was opened with is revoked or expires (every request checks), or when the operator
 * token it was opened with is no longer the service's. Each session has its own CSRF
 * token, which every form carries.
 */
import type { Context } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import type { Caller } from '../access/declaration.ts';
import type { HandlerDeps } from '../access/app_env.ts';
import type { Db, Sql } from '../db/client.ts';
import { hashSecret, randomToken, secretsEqual } from '../http/crypto.ts';
import { constantTimeEqual } from '@oslojs/crypto/subtle';

// Shared by the app's and the portal's contexts (the portal's adds the session).
type Ctx = Context<any>;

export const SESSION_COOKIE = 'fleet_session';
const SESSION_HOURS = 8;

export interface PortalSession {
  tokenHash: Uint8Array;
  csrfToken: string;
  caller: Caller;
  /** The organization the session works in; null for an operator who has not chosen yet. */
  organizationId: string | null;
  /** Its name, shown in the header. */
  organizationName: string | null;
}

interface SessionRow {
  csrf_token: string;
  organization_id: string | null;
  api_key_id: string | null;
  operator_token_hash: Uint8Array | null;
  key_name: string | null;
  key_role: 'admin' | 'viewer' | null;
  organization_name: string | null;
}

export function cookieOptions(c: Ctx) {
  return {
    path: '/portal',
    httpOnly: true,
    sameSite: 'Strict' as const,
    secure: (c.get('deps') as HandlerDeps).config.publicBaseUrl.startsWith('https:'),
  };
}

/** Opens a session for a key (its id and organization) or for the operator; sets the cookie. */
export async function openSession(
  c: Ctx,
  db: Db,
  who: { apiKeyId: string; organizationId: string } | { operatorToken: string },
): Promise<void> {
  const token = randomToken();
  const csrf = randomToken();
  await db`delete from portal_sessions where expires_at < now()`;
  await db`
    insert into portal_sessions (token_hash, csrf_token, api_key_id, operator_token_hash, organization_id, expires_at)
    values (${hashSecret(token)}, ${csrf},
            ${'apiKeyId' in who ? who.apiKeyId : null},
            ${'operatorToken' in who ? hashSecret(who.operatorToken) : null},
            ${'organizationId' in who ? who.organizationId : null},
            now() + make_interval(hours => ${SESSION_HOURS}))`;
  setCookie(c, SESSION_COOKIE, token, { ...cookieOptions(c), maxAge: SESSION_HOURS * 3600 });
}

/**
 * The request's session if it is still valid: not expired, its key neither revoked nor
 * expired, its operator token still the service's. One read, no lock: a sign-out or a
 * revoke never waits for the session's requests under way, and each request (and each
 * write again inside its transaction) sees one that has answered.
 */
export async function currentSession(c: Ctx, db: Db): Promise<PortalSession | null> {
  const token = getCookie(c, SESSION_COOKIE);
  if (token === undefined || token.length > 100) return null;
  const tokenHash = hashSecret(token);
  const [row] = await db<SessionRow[]>`
    select s.csrf_token, s.organization_id, s.api_key_id, s.operator_token_hash, k.name as key_name, k.role as key_role,
           o.name as organization_name
    from portal_sessions s
    left join api_keys k on k.id = s.api_key_id
    left join organizations o on o.id = s.organization_id
    where s.token_hash = ${tokenHash} and s.expires_at > now()
      and (s.api_key_id is null or (k.revoked_at is null and (k.expires_at is null or k.expires_at > now())))`;
  if (!row) return null;
  if (row.api_key_id === null) {
    const current = hashSecret((c.get('deps') as HandlerDeps).config.adminToken);
    if (row.operator_token_hash === null || !constantTimeEqual(row.operator_token_hash, current)) return null;
    return {
      tokenHash,
      csrfToken: row.csrf_token,
      caller: { type: 'operator' },
      organizationId: row.organization_id,
      organizationName: row.organization_name,
    };
  }
  return {
    tokenHash,
    csrfToken: row.csrf_token,
    organizationId: row.organization_id,
    organizationName: row.organization_name,
    caller: {
      type: 'api_key',
      apiKeyId: row.api_key_id,
      name: row.key_name!,
      role: row.key_role!,
      organizationId: row.organization_id!,
    },
  };
}

/** Signs out at once: no request of the session that starts after this is served. */
export async function endSession(c: Ctx, sql: Sql, session: PortalSession | null): Promise<void> {
  if (session) await sql`delete from portal_sessions where token_hash = ${session.tokenHash}`;
  deleteCookie(c, SESSION_COOKIE, cookieOptions(c));
}

/** An operator session picks the organization it works in. */
export async function chooseOrganization(db: Db, session: PortalSession, organizationId: string): Promise<void> {
  await db`update portal_sessions set organization_id = ${organizationId} where token_hash = ${session.tokenHash}`;
}

/** The form's CSRF token is the session's (constant-time comparison). */
export function csrfMatches(session: PortalSession, sent: unknown): boolean {
  return typeof sent === 'string' && secretsEqual(sent, session.csrfToken);
}
