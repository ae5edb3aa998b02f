/** The portal's one layout: header with navigation and sign-out, flash message, content. */
import type { Child } from 'hono/jsx';
import { canWrite } from './access.ts';
import { currentLanguage, currentPath, t } from './i18n/index.ts';
import { LANGUAGES } from './i18n/language.ts';
import type { PortalSession } from './session.ts';

export interface Flash {
  kind: 'ok' | 'error';
  text: string;
}

export function CsrfField(props: { session: PortalSession }) {
  return <input type="hidden" name="_csrf" value={props.session.csrfToken} />;
}

export function Layout(props: {
  title: string;
  session?: PortalSession | null;
  flash?: Flash | null;
  refreshSeconds?: number;
  /** The portal's own scripts this page loads (from this site; the page works without them). */
  scripts?: string[];
  children?: Child;
}) {
  const s = props.session;
  const admin = s ? canWrite(s) : false;
  const { layout } = t().common;
  return (
    <html lang={currentLanguage()}>
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        {props.refreshSeconds ? <meta http-equiv="refresh" content={String(props.refreshSeconds)} /> : null}
        <title>
          {props.title} – {layout.portal}
        </title>
        <link rel="stylesheet" href="/portal/style.css" />
        {(props.scripts ?? []).map((src) => (
          <script src={src} defer />
        ))}
      </head>
      <body>
        <header>
          <strong>{layout.portal}</strong>
          {s?.organizationId ? (
            <nav aria-label={layout.mainNavigation}>
              <a href="/portal">{layout.nav.overview}</a>
              <a href="/portal/devices">{layout.nav.devices}</a>
              <a href="/portal/org-units">{layout.nav.orgUnits}</a>
              <a href="/portal/groups">{layout.nav.groups}</a>
              <a href="/portal/rollouts">{layout.nav.rollouts}</a>
              <a href="/portal/security">{t().security.nav}</a>
              {admin ? <a href="/portal/enrollment-sessions">{layout.nav.enrollmentSessions}</a> : null}
              <a href="/portal/iso-builds">{layout.nav.isoBuilds}</a>
              {admin ? <a href="/portal/api-keys">{layout.nav.apiKeys}</a> : null}
              {admin ? <a href="/portal/audit">{layout.nav.audit}</a> : null}
              {admin ? <a href="/portal/webhooks">{layout.nav.webhooks}</a> : null}
            </nav>
          ) : null}
          {s ? (
            <form method="post" action="/portal/logout">
              <CsrfField session={s} />
              <span>
                {s.caller.type === 'operator'
                  ? layout.operator
                  : `${s.caller.name} (${s.caller.role === 'admin' ? layout.roles.admin : layout.roles.viewer})`}
              </span>{' '}
              {s.organizationName ? (
                <span data-field="organization">
                  · {layout.organization}: <strong>{s.organizationName}</strong>
                </span>
              ) : null}{' '}
              {s.caller.type === 'operator' ? <a href="/portal/organization">{layout.switchOrganization}</a> : null}{' '}
              <button type="submit" class="secondary">
                {layout.signOut}
              </button>
            </form>
          ) : null}
          <LanguageSwitch />
        </header>
        <main>
          <h1>{props.title}</h1>
          {props.flash ? (
            <p class={props.flash.kind === 'error' ? 'flash error' : 'flash'} aria-live="polite">
              {props.flash.text}
            </p>
          ) : null}
          {props.children}
        </main>
      </body>
    </html>
  );
}

/** Each language by its own name; the other one a link that keeps the choice in a cookie and comes back here. */
function LanguageSwitch() {
  const { language } = t().common;
  const back = encodeURIComponent(currentPath());
  return (
    <nav class="languages" aria-label={language.label}>
      {LANGUAGES.map((lang) =>
        lang === currentLanguage() ? (
          <strong lang={lang} aria-current="true">
            {language.names[lang]}
          </strong>
        ) : (
          <a href={`/portal/language/${lang}?back=${back}`} lang={lang} hreflang={lang} data-language={lang}>
            {language.names[lang]}
          </a>
        ),
      )}
    </nav>
  );
}
