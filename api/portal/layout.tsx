/** The portal's one layout: header with navigation and sign-out, flash message, content. */
import type { Child } from 'hono/jsx';
import { canWrite } from './access.ts';
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
  return (
    <html lang="de">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        {props.refreshSeconds ? <meta http-equiv="refresh" content={String(props.refreshSeconds)} /> : null}
        <title>{props.title} – Fleet-Portal</title>
        <link rel="stylesheet" href="/portal/style.css" />
        {(props.scripts ?? []).map((src) => (
          <script src={src} defer />
        ))}
      </head>
      <body>
        <header>
          <strong>Fleet-Portal</strong>
          {s?.organizationId ? (
            <nav aria-label="Hauptnavigation">
              <a href="/portal">Übersicht</a>
              <a href="/portal/devices">Geräte</a>
              <a href="/portal/org-units">Organisationseinheiten</a>
              <a href="/portal/groups">Gruppen</a>
              <a href="/portal/rollouts">Rollouts</a>
              {admin ? <a href="/portal/enrollment-sessions">Enrollment-Sessions</a> : null}
              <a href="/portal/iso-builds">ISO-Builds</a>
              {admin ? <a href="/portal/api-keys">API-Schlüssel</a> : null}
              {admin ? <a href="/portal/audit">Audit-Log</a> : null}
              {admin ? <a href="/portal/webhooks">Webhooks</a> : null}
            </nav>
          ) : null}
          {s ? (
            <form method="post" action="/portal/logout">
              <CsrfField session={s} />
              <span>
                {s.caller.type === 'operator'
                  ? 'Betreiber'
                  : `${s.caller.name} (${s.caller.role === 'admin' ? 'Admin' : 'Leser'})`}
              </span>{' '}
              {s.organizationName ? (
                <span data-field="organization">
                  · Organisation: <strong>{s.organizationName}</strong>
                </span>
              ) : null}{' '}
              {s.caller.type === 'operator' ? <a href="/portal/organization">Organisation wechseln</a> : null}{' '}
              <button type="submit" class="secondary">
                Abmelden
              </button>
            </form>
          ) : null}
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
