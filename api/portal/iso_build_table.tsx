/**
 * The table of an organization's ISO builds: source (template or enrollment session),
 * progress and status, size, SHA-256, expiry, and, before the download, a clear mark when
 * the image was built from the development base image and does not boot.
 */
import type { IsoBuildRow } from '../iso_builds/repo.ts';
import { formatBytes, formatNumber, formatTime, t } from './i18n/index.ts';

function Source(props: { build: IsoBuildRow; templateName: string | null; admin: boolean }) {
  const { build: b } = props;
  const { isoBuilds: text } = t();
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
  const { isoBuilds: text } = t();
  return (
    <>
      <p class="muted">{text.replaces}</p>
      <div class="table-wrap">
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
                  <progress max={100} value={b.progress} aria-label={text.progressLabel(formatNumber(b.progress))}>
                    {text.percent(formatNumber(b.progress))}
                  </progress>{' '}
                  {text.percent(formatNumber(b.progress))}
                </td>
                <td data-field="status">
                  {text.statuses[b.status] ?? b.status}
                  {b.error ? ` (${b.error})` : ''}
                </td>
                <td class="number" data-field="size">
                  {b.size_bytes === null ? '–' : formatBytes(b.size_bytes)}
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
      </div>
    </>
  );
}
