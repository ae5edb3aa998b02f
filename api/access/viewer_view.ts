/**
 * What a `viewer` key reads (api/README.md, Access): everything of its organization but the
 * installer's credentials. An enrollment session id is such a credential, wherever it
 * shows, so the access middleware leaves every field named here out of each answer a
 * viewer gets, at any depth: the one place the viewer's view is made, for every route
 * that exists now or later. The schemas mark the fields (`credentialField`), so the
 * OpenAPI document says so.
 */
import type { z } from '@hono/zod-openapi';

/** Fields whose value is an installer credential. */
const CREDENTIAL_FIELDS: ReadonlySet<string> = new Set(['enrollment_session_id']);

const VIEWER_OMITS = 'Left out of what a `viewer` key reads: the id is an installer credential.';

/**
 * The schema of a response field that carries an installer credential: optional in the
 * document (a viewer's answer lacks it), with the reason in its description.
 */
export function credentialField<T extends z.ZodType>(name: string, schema: T, description?: string) {
  if (!CREDENTIAL_FIELDS.has(name)) throw new Error(`${name} is not listed in CREDENTIAL_FIELDS`);
  return schema.optional().openapi({ description: description ? `${description} ${VIEWER_OMITS}` : VIEWER_OMITS });
}

/** The value without any credential field, at any depth; other values are kept as they are. */
function withoutCredentials(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutCredentials);
  if (typeof value !== 'object' || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) if (!CREDENTIAL_FIELDS.has(key)) out[key] = withoutCredentials(v);
  return out;
}

/** The JSON response as a viewer may read it; any other response is returned as it is. */
export async function viewerResponse(res: Response): Promise<Response> {
  if (!res.headers.get('content-type')?.includes('application/json') || res.body === null) return res;
  const body = withoutCredentials(await res.json());
  const headers = new Headers(res.headers);
  headers.delete('content-length');
  return new Response(JSON.stringify(body), { status: res.status, statusText: res.statusText, headers });
}
