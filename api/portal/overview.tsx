/**
 * The fleet overview at /portal: the organization's fleet status as the API's
 * fleet-status reads it (the same service function), each figure a link to the device
 * list filtered to the devices it counts; and the rollouts under way.
 */
import { Hono } from 'hono';
import { readFleetStatus } from '../devices/fleet_status.ts';
import * as deviceOps from '../devices/operations.ts';
import type { Convergence, DeviceStatus } from '../devices/repo.ts';
import { type PortalEnv, portalRead } from './access.ts';
import { render, takeFlash } from './http.tsx';
import { convergenceLabel, statusLabel } from './labels.ts';
import { Layout } from './layout.tsx';
import { RolloutsUnderWay, rolloutsUnderWay } from './rollouts.tsx';

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
    <span>{props.n}</span>
  ) : (
    <a href={props.href} aria-label={props.label}>
      {props.n}
    </a>
  );
}

export function overviewRoutes() {
  const app = new Hono<PortalEnv>();

  app.get('/', async (c) => {
    const session = c.get('session');
    const org = session.organizationId!;
    const db = await portalRead(c, deviceOps.getFleetStatus, { param: { id: org } });
    const [status, underWay] = await Promise.all([
      readFleetStatus(db, org, {}, c.get('deps').config.agentPollIntervalSeconds),
      rolloutsUnderWay(c),
    ]);
    const { devices } = status;
    return render(
      c,
      <Layout title="Übersicht" session={session} flash={takeFlash(c)}>
        <h2>Geräte</h2>
        <ul class="figures" aria-label="Geräte nach Status">
          <li data-figure="total">
            <a class="figure" href="/portal/devices">
              {devices.total}
            </a>
            Geräte (ohne archivierte)
          </li>
          {countedStatuses.map((s) => (
            <li data-figure={s}>
              <span class="figure">
                <Figure n={devices[s]} href={devicesWhere({ status: s })} label={`${devices[s]} ${statusLabel(s)}`} />
              </span>
              {statusLabel(s)}
            </li>
          ))}
        </ul>
        <h2>Auftragskatalog</h2>
        <p class="muted">
          Über die aktiven und veralteten Geräte: wie viele ein Merkmal haben sollen (vorhanden) oder nicht, und wie
          weit das umgesetzt ist – seit der letzten Änderung ihres Zustands.
        </p>
        {status.merkmale.length === 0 ? (
          <p class="empty">Der Auftragskatalog ist leer.</p>
        ) : (
          <table>
            <thead>
              <tr>
                <th scope="col">Merkmal</th>
                <th scope="col" class="number">
                  vorhanden
                </th>
                <th scope="col" class="number">
                  nicht vorhanden
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
                    {m.present}
                  </td>
                  <td class="number" data-field="absent">
                    {m.absent}
                  </td>
                  {convergences.map((v) => (
                    <td class="number" data-field={v}>
                      <Figure
                        n={m[v]}
                        // The list filters a Merkmal's failed and pending devices, not its converged ones.
                        href={v === 'converged' ? null : devicesWhere({ merkmal: m.merkmal, convergence: v })}
                        label={`${m.name}: ${m[v]} ${convergenceLabel(v)}`}
                      />
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        )}
        <RolloutsUnderWay rollouts={underWay.rollouts} names={underWay.names} session={session} />
      </Layout>,
    );
  });
  return app;
}
