/**
 * The fleet overview at /portal: the organization's fleet status as the API's
 * fleet-status reads it (the same service function), each figure a link to the device
 * list filtered to the devices it counts; the rollouts under way; and the ISO builds in
 * progress.
 */
import { Hono } from 'hono';
import { readFleetStatus } from '../devices/fleet_status.ts';
import * as deviceOps from '../devices/operations.ts';
import type { Convergence, DeviceStatus } from '../devices/repo.ts';
import { DISK_ENCRYPTION_STATES } from '../devices/disk_encryption.ts';
import * as isoOps from '../iso_builds/operations.ts';
import { type IsoBuildRow, listIsoBuildsInProgress } from '../iso_builds/repo.ts';
import { type PortalEnv, portalRead } from './access.ts';
import { render, takeFlash } from './http.tsx';
import { formatNumber, formatTime, t } from './i18n/index.ts';
import { convergenceLabel, diskEncryptionLabel, statusLabel } from './labels.ts';
import { Layout } from './layout.tsx';
import { RolloutsUnderWay, rolloutsUnderWay } from './rollouts.tsx';
import { SecurityFigures } from './security.tsx';

/** The device list showing these devices. */
function devicesWhere(filter: Record<string, string>): string {
  const query = new URLSearchParams(filter).toString();
  return query === '' ? '/portal/devices' : `/portal/devices?${query}`;
}

/** The statuses fleet-status counts (archived devices are not in it), in its order. */
const countedStatuses = ['enrolled', 'active', 'stale', 'deprovisioned'] as const satisfies readonly DeviceStatus[];
const convergences = ['converged', 'pending', 'failed'] as const satisfies readonly Convergence[];

/** A figure: a link to the devices it counts, plain when it counts none or the list cannot filter them. */
function Figure(props: { n: number; href: string | null; label: string }) {
  return props.n === 0 || props.href === null ? (
    <span>{formatNumber(props.n)}</span>
  ) : (
    <a href={props.href} aria-label={props.label}>
      {formatNumber(props.n)}
    </a>
  );
}

/** How many builds in progress the overview lists; the ISO builds page has them all. */
const ISO_BUILDS_SHOWN = 5;

/** The builds queued or running, oldest first, and where to start one when there is none. */
function IsoBuildsInProgress(props: { builds: Array<IsoBuildRow & { in_progress: number }> }) {
  const { overview: text } = t();
  const { builds } = props;
  const total = builds[0]?.in_progress ?? 0;
  const percent = (p: number) => formatNumber(p / 100, { style: 'percent' });
  return (
    <section data-section="iso-builds">
      <h2>{text.isoBuilds.heading}</h2>
      {builds.length === 0 ? (
        <p class="empty">
          {text.isoBuilds.none} <a href="/portal/iso-builds">{text.isoBuilds.all}</a>.
        </p>
      ) : (
        <>
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">{text.isoBuilds.created}</th>
                  <th scope="col">{text.isoBuilds.status}</th>
                  <th scope="col">{text.isoBuilds.progress}</th>
                </tr>
              </thead>
              <tbody>
                {builds.map((b) => (
                  <tr data-build={b.id}>
                    <td>{formatTime(b.created_at)}</td>
                    <td data-field="status" data-status={b.status}>
                      {b.status === 'running' ? text.isoBuilds.statuses.running : text.isoBuilds.statuses.pending}
                    </td>
                    <td data-field="progress">
                      <progress
                        max={100}
                        value={b.progress}
                        aria-label={text.isoBuilds.progressLabel(percent(b.progress))}
                      >
                        {percent(b.progress)}
                      </progress>{' '}
                      {percent(b.progress)}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <p>
            {total > builds.length ? `${text.isoBuilds.more(formatNumber(builds.length), formatNumber(total))} ` : null}
            <a href="/portal/iso-builds">{text.isoBuilds.allBuilds}</a>
          </p>
        </>
      )}
    </section>
  );
}

export function overviewRoutes() {
  const app = new Hono<PortalEnv>();

  app.get('/', async (c) => {
    const session = c.get('session');
    const org = session.organizationId!;
    const db = await portalRead(c, deviceOps.getFleetStatus, { param: { id: org } });
    const isoDb = await portalRead(c, isoOps.listIsoBuilds, { param: { id: org } });
    const [status, underWay, builds] = await Promise.all([
      readFleetStatus(db, org, {}, c.get('deps').config.agentPollIntervalSeconds),
      rolloutsUnderWay(c),
      listIsoBuildsInProgress(isoDb, org, ISO_BUILDS_SHOWN),
    ]);
    const { devices } = status;
    const { overview: text } = t();
    return render(
      c,
      <Layout title={text.title} session={session} flash={takeFlash(c)}>
        <h2>{text.devicesHeading}</h2>
        <ul class="figures" aria-label={text.byStatus}>
          <li data-figure="total">
            <a class="figure" href="/portal/devices">
              {formatNumber(devices.total)}
            </a>
            {text.total}
          </li>
          {countedStatuses.map((s) => (
            <li data-figure={s}>
              <span class="figure">
                <Figure
                  n={devices[s]}
                  href={devicesWhere({ status: s })}
                  label={text.figureLabel(formatNumber(devices[s]), statusLabel(s))}
                />
              </span>
              {statusLabel(s)}
            </li>
          ))}
        </ul>
        <h2>{text.diskEncryptionHeading}</h2>
        <ul class="figures" aria-label={text.diskEncryptionHeading} data-section="disk-encryption">
          {DISK_ENCRYPTION_STATES.map((k) => (
            <li data-figure={`disk-${k}`}>
              <span class="figure">
                <Figure
                  n={status.disk_encryption[k]}
                  href={devicesWhere({ disk_encryption: k })}
                  label={text.figureLabel(formatNumber(status.disk_encryption[k]), diskEncryptionLabel(k))}
                />
              </span>
              {diskEncryptionLabel(k)}
            </li>
          ))}
        </ul>
        <SecurityFigures updates={status.updates} />
        <h2>{text.catalogHeading}</h2>
        <p class="muted">{text.catalogIntro}</p>
        {status.merkmale.length === 0 ? (
          <p class="empty">{text.catalogEmpty}</p>
        ) : (
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">{text.merkmal}</th>
                  <th scope="col" class="number">
                    {text.present}
                  </th>
                  <th scope="col" class="number">
                    {text.absent}
                  </th>
                  {convergences.map((v) => (
                    <th scope="col" class="number">
                      {convergenceLabel(v)}
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {status.merkmale.map((m) => (
                  <tr data-merkmal={m.merkmal}>
                    <td>
                      {m.name} <span class="muted">({m.merkmal})</span>
                    </td>
                    <td class="number" data-field="present">
                      {formatNumber(m.present)}
                    </td>
                    <td class="number" data-field="absent">
                      {formatNumber(m.absent)}
                    </td>
                    {convergences.map((v) => (
                      <td class="number" data-field={v}>
                        <Figure
                          n={m[v]}
                          href={devicesWhere({ merkmal: m.merkmal, convergence: v })}
                          label={text.merkmalFigureLabel(m.name, formatNumber(m[v]), convergenceLabel(v))}
                        />
                      </td>
                    ))}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        <RolloutsUnderWay rollouts={underWay.rollouts} names={underWay.names} session={session} />
        <IsoBuildsInProgress builds={builds} />
      </Layout>,
    );
  });
  return app;
}
