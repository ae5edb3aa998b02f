/**
 * The customer portal at /portal: server-rendered pages from the same app,
 * usable without JavaScript. Every page but sign-in needs a valid session; every POST
 * carries the session's CSRF token (403 and nothing changed otherwise).
 */
import { Hono, type MiddlewareHandler } from 'hono';
import { deleteCookie } from 'hono/cookie';
import type { AppEnv } from '../access/app_env.ts';
import { limitBodySize } from '../http/body.ts';
import { ApiError } from '../http/errors.ts';
import type { PortalEnv } from './access.ts';
import { auditRoutes } from './audit.tsx';
import { deviceRoutes } from './devices.tsx';
import { deviceBulkRoutes } from './device_bulk.tsx';
import { formFields, render } from './http.tsx';
import { Layout } from './layout.tsx';
import { loginRoutes, sessionRoutes } from './login.tsx';
import { organizationRoutes } from './organization.tsx';
import { overviewRoutes } from './overview.tsx';
import { credentialRoutes } from './credentials.tsx';
import { enrollmentRoutes } from './enrollment.tsx';
import { rolloutRoutes } from './rollouts.tsx';
import { scopeCatalogRoutes } from './scope_catalog.tsx';
import { webhookRoutes } from './webhooks.tsx';
import { csrfMatches, currentSession, SESSION_COOKIE, cookieOptions } from './session.ts';
import { rolloutRefreshJs } from './script.ts';
import { portalCss } from './style.ts';

const MAX_FORM_BYTES = 64 * 1024;

const errorTitle: Record<number, string> = {
  403: 'Keine Berechtigung',
  404: 'Nicht gefunden',
  429: 'Zu viele Anfragen',
};

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
  portal.get('/style.css', (c) =>
    c.body(portalCss, 200, { 'Content-Type': 'text/css; charset=utf-8', 'Cache-Control': STATIC_CACHE }),
  );
  portal.get('/rollouts.js', (c) =>
    c.body(rolloutRefreshJs, 200, { 'Content-Type': 'text/javascript; charset=utf-8', 'Cache-Control': STATIC_CACHE }),
  );

  const limit = limitBodySize(MAX_FORM_BYTES, () => {
    throw new ApiError('payload_too_large', 'the form is too large');
  });
  portal.use('*', (c, next) => (c.req.method === 'POST' ? limit(c, next) : next()));
  portal.route('/', loginRoutes() as unknown as Hono<PortalEnv>);

  // Everything below needs a valid session, and a POST the session's CSRF token.
  portal.use('*', async (c, next) => {
    const session = await currentSession(c, c.get('deps').sql);
    if (session === null) {
      deleteCookie(c, SESSION_COOKIE, cookieOptions(c));
      if (c.req.method === 'GET') return c.redirect('/portal/login', 303);
      return render(
        c,
        <Layout title="Nicht angemeldet">
          Ihre Sitzung ist abgelaufen oder beendet. <a href="/portal/login">Anmelden</a>
        </Layout>,
        401,
      );
    }
    if (c.req.method === 'POST' && !csrfMatches(session, (await formFields(c))._csrf)) {
      return render(
        c,
        <Layout title="Anfrage abgelehnt" session={session}>
          Das Formular ist ungültig oder abgelaufen (CSRF-Token fehlt oder ist falsch). Nichts wurde geändert.{' '}
          <a href="/portal/devices">Zurück</a>
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
  portal.route('/', deviceBulkRoutes());
  portal.route('/', deviceRoutes());
  portal.route('/', enrollmentRoutes());
  portal.route('/', scopeCatalogRoutes());
  portal.route('/', rolloutRoutes());
  portal.route('/', organizationRoutes());
  portal.route('/', credentialRoutes());
  portal.route('/', webhookRoutes());
  portal.route('/', auditRoutes());

  portal.all('*', (c) =>
    render(
      c,
      <Layout title="Nicht gefunden">
        Diese Seite gibt es nicht. <a href="/portal/devices">Zu den Geräten</a>
      </Layout>,
      404,
    ),
  );
  portal.onError(async (err, c) => {
    const session = c.var.session ?? null;
    if (err instanceof ApiError && err.status === 401) return c.redirect('/portal/login', 303);
    if (err instanceof ApiError && err.status < 500) {
      for (const [name, value] of Object.entries(err.headers ?? {})) c.header(name, value);
      return render(
        c,
        <Layout title={errorTitle[err.status] ?? 'Anfrage abgelehnt'} session={session}>
          <p>
            {err.status === 403
              ? 'Ihre Rolle erlaubt diese Aktion nicht. Nichts wurde geändert.'
              : err.status === 404
                ? 'Das gesuchte Objekt gibt es nicht (oder nicht in Ihrer Organisation).'
                : err.message}
          </p>
          <p>
            <a href="/portal/devices">Zu den Geräten</a>
          </p>
        </Layout>,
        err.status,
      );
    }
    c.get('deps').log.error('portal error', { request_id: c.get('requestId'), error: err.name, detail: err.message });
    return render(
      c,
      <Layout title="Fehler">Ein unerwarteter Fehler ist aufgetreten (Anfrage {c.get('requestId')}).</Layout>,
      500,
    );
  });
  return portal as unknown as Hono<AppEnv>;
}
