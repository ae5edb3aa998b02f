/**
 * The organization's API keys (create with a role and an optional expiry, revoke after a
 * confirmation); the webhooks are in webhooks.tsx. A new key or signing secret is shown
 * once, in the answer to the POST itself (never in a cookie or a URL; Cache-Control
 * no-store), and never again.
 * Changes go through the services the API routes call, with the routes' audit actions.
 */
import { Hono } from 'hono';
import * as keyOps from '../api_keys/operations.ts';
import { getApiKey, listApiKeys } from '../api_keys/repo.ts';
import { ApiKeyCreate } from '../api_keys/schemas.ts';
import { createKey, revokeKey } from '../api_keys/service.ts';
import { ApiError } from '../http/errors.ts';
import { type PortalEnv, portalRead, postWrite } from './access.ts';
import { formFields, invalidInput, redirectWith, render, takeFlash, writeAndRedirect } from './http.tsx';
import { formatTime, t } from './i18n/index.ts';
import { CsrfField, Layout } from './layout.tsx';
import { refusalText } from './refusals.ts';

/** Runs a create whose result page shows a secret; a refusal goes back to the form as a message. */
async function createOrBack<T>(c: Parameters<typeof redirectWith>[0], back: string, create: () => Promise<T>) {
  try {
    return { result: await create() };
  } catch (err) {
    if (err instanceof ApiError && [400, 409, 422].includes(err.status)) {
      return { response: redirectWith(c, back, { kind: 'error', text: refusalText(err) }) };
    }
    throw err;
  }
}

export function credentialRoutes() {
  const app = new Hono<PortalEnv>();

  app.get('/api-keys', async (c) => {
    const session = c.get('session');
    const org = session.organizationId!;
    const db = await portalRead(c, keyOps.listApiKeys, { param: { id: org } });
    const keys = await listApiKeys(db, org, null, 500);
    const { credentials: text } = t();
    return render(
      c,
      <Layout title={text.title} session={session} flash={takeFlash(c)}>
        <form method="post" action="/portal/api-keys">
          <CsrfField session={session} />
          <h2>{text.new}</h2>
          <label for="name">{text.name}</label>
          <input id="name" name="name" required maxlength={200} />
          <label for="role">{text.role}</label>
          <select id="role" name="role">
            <option value="viewer">{text.roleOptions.viewer}</option>
            <option value="admin">{text.roleOptions.admin}</option>
          </select>
          <label for="expires_on">{text.expiresOn}</label>
          <input id="expires_on" name="expires_on" type="date" />
          <p>
            <button type="submit">{text.create}</button>
          </p>
        </form>
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">{text.name}</th>
                <th scope="col">{text.role}</th>
                <th scope="col">{text.prefix}</th>
                <th scope="col">{text.lastUsed}</th>
                <th scope="col">{text.expires}</th>
                <th scope="col">{text.revoked}</th>
              </tr>
            </thead>
            <tbody>
              {keys.slice(0, 500).map((k) => (
                <tr>
                  <td>{k.name}</td>
                  <td>{text.roles[k.role]}</td>
                  <td>
                    <code>{k.prefix}</code>
                  </td>
                  <td>{formatTime(k.last_used_at)}</td>
                  <td>{formatTime(k.expires_at)}</td>
                  <td>
                    {k.revoked_at ? (
                      formatTime(k.revoked_at)
                    ) : (
                      <a href={`/portal/api-keys/${k.id}/revoke`}>{text.revokeLink}</a>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </Layout>,
    );
  });

  postWrite(app, '/api-keys', keyOps.createApiKey, async (c, write) => {
    const session = c.get('session');
    const org = session.organizationId!;
    const fields = await formFields(c);
    const done = await createOrBack(c, '/portal/api-keys', () => {
      const parsed = ApiKeyCreate.safeParse({
        name: fields.name,
        role: fields.role,
        ...(fields.expires_on ? { expires_at: `${fields.expires_on}T23:59:59Z` } : {}),
      });
      if (!parsed.success) throw invalidInput(parsed.error);
      return write({ param: { id: org } }, (tx) =>
        createKey(tx, org, parsed.data).then(({ row, key, audit }) => ({ audit, result: { row, key } })),
      );
    });
    if (done.response) return done.response;
    const { row, key } = done.result;
    const { credentials: text } = t();
    return render(
      c,
      <Layout title={text.createdTitle} session={session}>
        <p>
          {text.created.before(row.name, text.roles[row.role])}
          <strong>{text.created.once}</strong>
          {text.created.after}
        </p>
        <label for="key">{text.key}</label>
        <input id="key" readonly value={key} size={60} />
        <p>
          <a href="/portal/api-keys">{text.back}</a>
        </p>
      </Layout>,
      201,
    );
  });

  app.get('/api-keys/:id/revoke', async (c) => {
    const session = c.get('session');
    const id = c.req.param('id').toLowerCase();
    const db = await portalRead(c, keyOps.revokeApiKey, { param: { id } });
    const key = await getApiKey(db, id);
    const { credentials: text } = t();
    return render(
      c,
      <Layout title={text.revokeTitle} session={session}>
        <p>
          {text.revokeQuestion.before(key!.name)}
          <code>{key!.prefix}</code>
          {text.revokeQuestion.after}
        </p>
        <form method="post" action={`/portal/api-keys/${id}/revoke`}>
          <CsrfField session={session} />
          <button type="submit" class="danger">
            {text.revoke}
          </button>{' '}
          <a href="/portal/api-keys">{text.cancel}</a>
        </form>
      </Layout>,
    );
  });

  postWrite(app, '/api-keys/:id/revoke', keyOps.revokeApiKey, async (c, write) => {
    const id = c.req.param('id').toLowerCase();
    return writeAndRedirect(c, '/portal/api-keys', t().credentials.revokedFlash, () =>
      write({ param: { id } }, (tx) => revokeKey(tx, id).then(({ audit }) => ({ audit, result: null }))),
    );
  });

  return app;
}
