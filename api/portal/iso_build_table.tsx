/**
 * The table of an organization's ISO builds: source (template or enrollment session),
 * progress and status, size, SHA-256, expiry, and, before the download, a clear mark when
 * the image was built from the development base image and does not boot.
 */
import type { IsoBuildRow } from '../iso_builds/repo.ts';
import { formatTime } from './i18n/index.ts';

/** The strings of this module, in one place. */
const text = {
  created: 'Angelegt',
  source: 'Quelle',
  progress: 'Fortschritt',
  status: 'Status',
  size: 'Größe',
  sha256: 'SHA-256',
  expires: 'Läuft ab',
  download: 'Download',
  downloadLink: 'ISO herunterladen',
  downloadDev: 'Test-ISO herunterladen (bootet nicht)',
  viewerNoDownload: 'nur für Admins',
  session: 'Enrollment-Session',
  code: 'Aktivierungscode der Organisation',
  template: (name: string) => `Template ${name}`,
  defaultTemplate: 'Standard-Template',
  development:
    'Entwicklungs-Image: gebaut aus dem Entwicklungs-Basis-Image, NICHT bootfähig. Auf dem Build-Host fehlt ISO_BASE_IMAGE.',
  replaces:
    'Ein neuer fertiger Build ersetzt den vorigen fertigen (Datei und Eintrag); ein fertiger Build bleibt 7 Tage abrufbar.',
  progressLabel: (p: number) => `Fortschritt ${p} %`,
} as const;

const statusLabel: Record<IsoBuildRow['status'], string> = {
  pending: 'wartet',
  running: 'läuft',
  completed: 'fertig',
  failed: 'fehlgeschlagen',
};

/** Bytes in MB (decimal, as a download shows them), German digits. */
const megabytes = (bytes: number) => `${(bytes / 1_000_000).toLocaleString('de-DE', { maximumFractionDigits: 1 })} MB`;

function Source(props: { build: IsoBuildRow; templateName: string | null; admin: boolean }) {
  const { build: b } = props;
  const template = props.templateName ? text.template(props.templateName) : text.defaultTemplate;
  if (b.enrollment_session_id === null) {
    return (
      <span data-source="activation_code">
        {text.code} <span class="muted">({template})</span>
      </span>
    );
  }
  // A session id is an installer's credential: a viewer is not shown it, an admin its first characters.
  return (
    <span data-source="enrollment_session">
      {props.admin ? (
        <a href="/portal/enrollment-sessions">
          {text.session} {b.enrollment_session_id.slice(0, 8)}…
        </a>
      ) : (
        text.session
      )}{' '}
      <span class="muted">({template})</span>
    </span>
  );
}

export function IsoBuildTable(props: { builds: IsoBuildRow[]; templateName: Map<string, string>; admin: boolean }) {
  return (
    <>
      <p class="muted">{text.replaces}</p>
      <table>
        <thead>
          <tr>
            <th scope="col">{text.created}</th>
            <th scope="col">{text.source}</th>
            <th scope="col">{text.progress}</th>
            <th scope="col">{text.status}</th>
            <th scope="col" class="number">
              {text.size}
            </th>
            <th scope="col">{text.sha256}</th>
            <th scope="col">{text.expires}</th>
            <th scope="col">{text.download}</th>
          </tr>
        </thead>
        <tbody>
          {props.builds.map((b) => (
            <tr data-build={b.id} data-development-base={b.development_base ? 'true' : 'false'}>
              <td>{formatTime(b.created_at)}</td>
              <td data-field="source">
                <Source
                  build={b}
                  templateName={b.template_id ? (props.templateName.get(b.template_id) ?? b.template_id) : null}
                  admin={props.admin}
                />
              </td>
              <td>
                <progress max={100} value={b.progress} aria-label={text.progressLabel(b.progress)}>
                  {b.progress} %
                </progress>{' '}
                {b.progress} %
              </td>
              <td data-field="status">
                {statusLabel[b.status] ?? b.status}
                {b.error ? ` (${b.error})` : ''}
              </td>
              <td class="number" data-field="size">
                {b.size_bytes === null ? '–' : megabytes(b.size_bytes)}
              </td>
              <td data-field="sha256">{b.sha256 ? <code class="mono">{b.sha256}</code> : '–'}</td>
              <td data-field="expires">{formatTime(b.expires_at)}</td>
              <td data-field="download">
                {b.status === 'completed' && b.development_base ? (
                  <p class="warning" role="note" data-warning="development-base">
                    {text.development}
                  </p>
                ) : null}
                {b.status !== 'completed' ? (
                  '–'
                ) : props.admin ? (
                  <a href={`/portal/iso-builds/${b.id}/download`} download>
                    {b.development_base ? text.downloadDev : text.downloadLink}
                  </a>
                ) : (
                  <span class="muted">{text.viewerNoDownload}</span>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}
