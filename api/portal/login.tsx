/**
 * Sign-in and sign-out: an organization key, or the operator token, which
 * then chooses an organization. Failed sign-ins count against the client address by the
 * activation limit's counter (its own, `portal:` + address); past the limit a wrong key is
 * refused with 429, while a right one still signs in.
 */
import { Hono } from 'hono';
import { getCookie, setCookie } from 'hono/cookie';
import { clientAddress, guessLimit } from '../activation/rate_limit.ts';
import { API_KEY_PREFIX, findUsableKey, touchApiKey } from '../access/keys.ts';
import type { AppEnv } from '../access/app_env.ts';
import { randomToken, secretsEqual } from '../http/crypto.ts';
import { ApiError } from '../http/errors.ts';
import { isUuid } from '../http/uuid.ts';
import { getOrganization, listOrganizations } from '../organizations/repo.ts';
import type { PortalEnv } from './access.ts';
import { formFields, render, redirectWith } from './http.tsx';
import { t } from './i18n/index.ts';
import { CsrfField, Layout } from './layout.tsx';
import { chooseOrganization, cookieOptions, endSession, openSession } from './session.ts';

/** Before a session exists, the sign-in form's CSRF token is a double-submit cookie. */
const LOGIN_CSRF_COOKIE = 'fleet_login_csrf';

function LoginPage(props: { csrf: string; error?: string }) {
  const { login } = t();
  return (
    <Layout title={login.title}>
      {props.error ? (
        <p class="flash error" role="alert">
          {props.error}
        </p>
      ) : null}
      <p>
        {login.intro.before}
        <code>fpk_…</code>
        {login.intro.after}
      </p>
      <form method="post" action="/portal/login">
        <input type="hidden" name="_csrf" value={props.csrf} />
        <label for="key">{login.keyLabel}</label>
        <input id="key" name="key" type="password" autocomplete="off" required size={60} />
        <p>
          <button type="submit">{login.submit}</button>
        </p>
      </form>
    </Layout>
  );
}

export function loginRoutes() {
  const app = new Hono<AppEnv>();

  app.get('/login', async (c) => {
    const csrf = randomToken();
    setCookie(c, LOGIN_CSRF_COOKIE, csrf, { ...cookieOptions(c), maxAge: 3600 });
    return render(c, <LoginPage csrf={csrf} />);
  });

  app.post('/login', async (c) => {
    const { sql, config } = c.get('deps');
    const fields = await formFields(c);
    const cookie = getCookie(c, LOGIN_CSRF_COOKIE);
    if (cookie === undefined || fields._csrf === undefined || !secretsEqual(cookie, fields._csrf)) {
      return render(
        c,
        <Layout title={t().login.expiredTitle}>
          {t().login.expired} <a href="/portal/login">{t().login.again}</a>
        </Layout>,
        403,
      );
    }
    const key = (fields.key ?? '').trim();
    // Unlike activation, the credential is checked before the limit refuses: a right
    // organization key or the operator token carries at least 128 random bits, so letting
    // it in at the limit tells a guesser nothing, and a guesser behind the admins' NAT
    // cannot lock them out. Only a wrong key counts, and past the limit it is refused
    // (one atomic statement per guess, so a burst cannot pass the limit either).
    const limit = guessLimit(sql, `portal:${clientAddress(c, config.activation.trustProxy)}`, config.activation);
    if (key !== '' && secretsEqual(key, config.adminToken)) {
      await openSession(c, sql, { operatorToken: key });
      return redirectWith(c, '/portal/organization');
    }
    const found = key.startsWith(API_KEY_PREFIX) && key.length <= 200 ? await findUsableKey(sql, key) : null;
    if (found === null) {
      try {
        await limit.countGuess();
      } catch (error) {
        if (!(error instanceof ApiError && error.code === 'too_many_requests')) throw error;
        const retryAfter = error.headers?.['Retry-After'] ?? '1';
        c.header('Retry-After', retryAfter);
        const text = t().login.tooMany(retryAfter);
        return render(c, <LoginPage csrf={cookie} error={text} />, 429);
      }
      return render(c, <LoginPage csrf={cookie} error={t().login.wrongKey} />, 401);
    }
    await openSession(c, sql, { apiKeyId: found.id, organizationId: found.organization_id });
    // A sign-in is a use of the key, as an API call with it is (at most once a minute).
    if (found.stale_use) await touchApiKey(sql, found.id);
    return redirectWith(c, '/portal/devices', { kind: 'ok', text: t().login.signedInAs(found.name) });
  });
  return app;
}

/** Sign-out and the operator's choice of organization (the session middleware has run). */
export function sessionRoutes() {
  const app = new Hono<PortalEnv>();

  app.post('/logout', async (c) => {
    await endSession(c, c.get('deps').sql, c.get('session'));
    return c.redirect('/portal/login', 303);
  });

  app.get('/organization', async (c) => {
    const session = c.get('session');
    if (session.caller.type !== 'operator') return c.redirect('/portal/devices', 303);
    const orgs = await listOrganizations(c.get('deps').sql, null, 500);
    const { login } = t();
    return render(
      c,
      <Layout title={login.chooseTitle} session={session}>
        {orgs.length === 0 ? (
          <p class="empty">{login.noOrganizations}</p>
        ) : (
          <form method="post" action="/portal/organization">
            <CsrfField session={session} />
            <label for="organization_id">{login.organization}</label>
            <select id="organization_id" name="organization_id">
              {orgs.slice(0, 500).map((o) => (
                <option value={o.id} selected={o.id === session.organizationId}>
                  {o.name}
                </option>
              ))}
            </select>{' '}
            <button type="submit">{login.choose}</button>
          </form>
        )}
      </Layout>,
    );
  });

  app.post('/organization', async (c) => {
    const session = c.get('session');
    if (session.caller.type !== 'operator') return c.redirect('/portal/devices', 303);
    const { organization_id: id = '' } = await formFields(c);
    const sql = c.get('deps').sql;
    if (!isUuid(id) || !(await getOrganization(sql, id))) {
      return redirectWith(c, '/portal/organization', { kind: 'error', text: t().login.unknownOrganization });
    }
    await chooseOrganization(sql, session, id);
    return redirectWith(c, '/portal/devices');
  });
  return app;
}
