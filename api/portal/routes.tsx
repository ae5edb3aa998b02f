/**
 * The customer portal at /portal: server-rendered pages from the same app,
 * usable without JavaScript. Every page but sign-in needs a valid session; every POST
 * carries the session's CSRF token (403 and nothing changed otherwise).
 */
import { Hono, type MiddlewareHandler } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import type { AppEnv } from '../access/app_env.ts';
import { limitBodySize } from '../http/body.ts';
import { ApiError } from '../http/errors.ts';
import type { PortalEnv } from './access.ts';
import { auditRoutes } from './audit.tsx';
import { deviceRoutes } from './devices.tsx';
import { deviceActionRoutes, SCRIPT_FORM_BYTES, takesScript } from './device_actions.tsx';
import { deviceBulkRoutes } from './device_bulk.tsx';
import { deviceActionBulkRoutes } from './device_actions_bulk.tsx';
import { deviceEventRoutes } from './device_events.tsx';
import { formFields, render } from './http.tsx';
import { t } from './i18n/index.ts';
import { isLanguage, LANGUAGE_COOKIE, pickLanguage, withLanguage } from './i18n/language.ts';
import { Layout } from './layout.tsx';
import { refusalText } from './refusals.ts';
import { loginRoutes, sessionRoutes } from './login.tsx';
import { organizationRoutes } from './organization.tsx';
import { overviewRoutes } from './overview.tsx';
import { diskKeyRoutes } from './disk_keys.tsx';
import { credentialRoutes } from './credentials.tsx';
import { enrollmentRoutes } from './enrollment.tsx';
import { rolloutRoutes } from './rollouts.tsx';
import { scopeCatalogRoutes } from './scope_catalog.tsx';
import { securityRoutes } from './security.tsx';
import { webhookRoutes } from './webhooks.tsx';
import { csrfMatches, currentSession, SESSION_COOKIE, cookieOptions } from './session.ts';
import { rolloutRefreshJs } from './script.ts';
import { portalCss } from './style.ts';

const MAX_FORM_BYTES = 64 * 1024;

/**
 * The portal needs no frame, no font or image from elsewhere, no inline script or style:
 * its one style sheet, its one script (a rollout page's refresh, which reads the page
 * again from this site) and its own forms. A page is never framed (clickjacking of a
 * write button).
 */
const CONTENT_SECURITY_POLICY =
  "default-src 'none'; style-src 'self'; img-src 'self'; script-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/** The portal's static files: the same for everyone, cached an hour. */
const STATIC_CACHE = 'public, max-age=3600';

/**
 * Every portal answer, error pages and redirects included, carries the same security
 * headers; one that set no caching rule of its own (only the static files do) is
 * `no-store`, since its pages show an organization's data to whoever holds the session.
 */
const securityHeaders: MiddlewareHandler<PortalEnv> = async (c, next) => {
  await next();
  const headers = c.res.headers;
  headers.set('Content-Security-Policy', CONTENT_SECURITY_POLICY);
  headers.set('X-Frame-Options', 'DENY');
  headers.set('X-Content-Type-Options', 'nosniff');
  headers.set('Referrer-Policy', 'same-origin');
  if (!headers.has('Cache-Control')) headers.set('Cache-Control', 'no-store');
};

export function portalRoutes() {
  const portal = new Hono<PortalEnv>();

  portal.use('*', securityHeaders);
  // Every page renders in one language, the switch's cookie first, then Accept-Language.
  portal.use('*', (c, next) => {
    const language = pickLanguage(getCookie(c, LANGUAGE_COOKIE), c.req.header('Accept-Language'));
    const url = new URL(c.req.url);
    return withLanguage({ language, path: `${url.pathname}${url.search}` }, async () => {
      await next();
      c.res.headers.set('Content-Language', language);
      c.res.headers.append('Vary', 'Accept-Language, Cookie');
    });
  });
  // The header's switch: keeps the choice a year and goes back to the page it came from.
  portal.get('/language/:lang', (c) => {
    const lang = c.req.param('lang');
    if (!isLanguage(lang)) return c.notFound();
    setCookie(c, LANGUAGE_COOKIE, lang, {
      path: '/portal',
      httpOnly: true,
      sameSite: 'Lax',
      secure: new URL(c.req.url).protocol === 'https:',
      maxAge: 365 * 24 * 3600,
    });
    return c.redirect(backToPortal(c.req.query('back')), 303);
  });
  portal.get('/style.css', (c) =>
    c.body(portalCss, 200, { 'Content-Type': 'text/css; charset=utf-8', 'Cache-Control': STATIC_CACHE }),
  );
  portal.get('/rollouts.js', (c) =>
    c.body(rolloutRefreshJs, 200, { 'Content-Type': 'text/javascript; charset=utf-8', 'Cache-Control': STATIC_CACHE }),
  );

  const tooLarge = () => {
    throw new ApiError('payload_too_large', t().common.errors.formTooLarge);
  };
  const limit = limitBodySize(MAX_FORM_BYTES, tooLarge);
  const scriptLimit = limitBodySize(SCRIPT_FORM_BYTES, tooLarge);
  portal.use('*', (c, next) =>
    c.req.method !== 'POST' ? next() : takesScript(c.req.path) ? scriptLimit(c, next) : limit(c, next),
  );
  portal.route('/', loginRoutes() as unknown as Hono<PortalEnv>);

  // Everything below needs a valid session, and a POST the session's CSRF token.
  portal.use('*', async (c, next) => {
    const session = await currentSession(c, c.get('deps').sql);
    if (session === null) {
      deleteCookie(c, SESSION_COOKIE, cookieOptions(c));
      if (c.req.method === 'GET') return c.redirect('/portal/login', 303);
      return render(
        c,
        <Layout title={t().common.errors.signedOutTitle}>
          {t().common.errors.signedOut} <a href="/portal/login">{t().common.errors.signIn}</a>
        </Layout>,
        401,
      );
    }
    if (c.req.method === 'POST' && !csrfMatches(session, (await formFields(c))._csrf)) {
      return render(
        c,
        <Layout title={t().common.errors.refused} session={session}>
          {t().common.errors.csrf} <a href="/portal/devices">{t().common.errors.back}</a>
        </Layout>,
        403,
      );
    }
    c.set('session', session);
    const path = c.req.path;
    if (session.organizationId === null && path !== '/portal/organization' && path !== '/portal/logout') {
      return c.redirect('/portal/organization', 303);
    }
    await next();
  });
  portal.route('/', sessionRoutes());
  portal.route('/', overviewRoutes());
  // The bulk pages first: their paths (/devices/bulk…) would match the device pages' :id.
  portal.route('/', deviceActionBulkRoutes());
  portal.route('/', deviceBulkRoutes());
  portal.route('/', deviceRoutes());
  portal.route('/', deviceActionRoutes());
  portal.route('/', deviceEventRoutes());
  portal.route('/', enrollmentRoutes());
  portal.route('/', scopeCatalogRoutes());
  portal.route('/', rolloutRoutes());
  portal.route('/', securityRoutes());
  portal.route('/', organizationRoutes());
  portal.route('/', credentialRoutes());
  portal.route('/', webhookRoutes());
  portal.route('/', diskKeyRoutes());
  portal.route('/', auditRoutes());

  portal.all('*', (c) =>
    render(
      c,
      <Layout title={t().common.errors.titles[404] ?? ''}>
        {t().common.errors.noPage} <a href="/portal/devices">{t().common.errors.toDevices}</a>
      </Layout>,
      404,
    ),
  );
  portal.onError(async (err, c) => {
    const session = c.var.session ?? null;
    const { errors } = t().common;
    if (err instanceof ApiError && err.status === 401) return c.redirect('/portal/login', 303);
    if (err instanceof ApiError && err.status < 500) {
      for (const [name, value] of Object.entries(err.headers ?? {})) c.header(name, value);
      return render(
        c,
        <Layout title={errors.titles[err.status] ?? errors.refused} session={session}>
          <p>{err.status === 403 ? errors.forbidden : err.status === 404 ? errors.notFound : refusalText(err)}</p>
          <p>
            <a href="/portal/devices">{errors.toDevices}</a>
          </p>
        </Layout>,
        err.status,
      );
    }
    c.get('deps').log.error('portal error', { request_id: c.get('requestId'), error: err.name, detail: err.message });
    return render(c, <Layout title={errors.unexpectedTitle}>{errors.unexpected(c.get('requestId'))}</Layout>, 500);
  });
  return portal as unknown as Hono<AppEnv>;
}

/** A path of this portal (with its query) to go back to, else the overview: never another host. */
function backToPortal(back: string | undefined): string {
  return back !== undefined && /^\/portal(\/[A-Za-z0-9_-]+)*\/?(\?[^#\s\\]*)?$/.test(back) ? back : '/portal';
}
