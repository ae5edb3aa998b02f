/**
 * The device page's vulnerabilities: the device's CVEs as the API lists them (the same
 * declaration and service function), worst urgency first; before the device's first
 * inventory, what to expect instead.
 */
import type { Context } from 'hono';
import * as deviceOps from '../devices/operations.ts';
import { type DeviceVulnerability, pageDeviceVulnerabilities } from '../vulnerabilities/repo.ts';
import { type PortalEnv, portalRead } from './access.ts';
import { formatNumber, t } from './i18n/index.ts';
import { devicesAffectedBy, MatchStatusLabel, UrgencyBadge } from './security.tsx';

/** How many rows the device page shows, the worst first. */
const SHOWN = 100;

export type DeviceVulnerabilities = { items: DeviceVulnerability[]; more: boolean } | null;

/** The device's CVEs (unimportant ones left out, as the API does by default); null before its first inventory. */
export async function loadDeviceVulnerabilities(c: Context<PortalEnv>, id: string): Promise<DeviceVulnerabilities> {
  const db = await portalRead(c, deviceOps.listDeviceVulnerabilities, { param: { id } });
  const page = await pageDeviceVulnerabilities(db, id, {}, undefined, SHOWN);
  return page === null ? null : { items: page.items, more: page.next_cursor !== null };
}

export function DeviceVulnerabilitiesSection(props: { vulnerabilities: DeviceVulnerabilities }) {
  const text = t().security.device;
  const v = props.vulnerabilities;
  return (
    <section data-section="vulnerabilities">
      <h2>{text.heading}</h2>
      {v === null ? (
        <p class="empty" data-empty="no-inventory">
          {text.noInventory}
        </p>
      ) : v.items.length === 0 ? (
        <p class="empty" data-empty="none">
          {text.none}
        </p>
      ) : (
        <>
          <div class="table-wrap">
            <table class="vulnerabilities">
              <thead>
                <tr>
                  <th scope="col">{text.columns.cve}</th>
                  <th scope="col">{text.columns.urgency}</th>
                  <th scope="col">{text.columns.status}</th>
                  <th scope="col">{text.columns.source}</th>
                  <th scope="col">{text.columns.installed}</th>
                  <th scope="col">{text.columns.fixed}</th>
                  <th scope="col">{text.columns.binaries}</th>
                </tr>
              </thead>
              <tbody>
                {v.items.map((row) => (
                  <tr data-cve={row.cve} data-source={row.source}>
                    <td class="mono">
                      <a href={devicesAffectedBy(row.cve)}>{row.cve}</a>
                    </td>
                    <td data-field="urgency">
                      <UrgencyBadge urgency={row.urgency} />
                    </td>
                    <td data-field="status">
                      <MatchStatusLabel status={row.status} />
                    </td>
                    <td data-field="source">{row.source}</td>
                    <td class="mono" data-field="installed">
                      {row.installed_version}
                    </td>
                    <td class="mono" data-field="fixed">
                      {row.fixed_version ?? text.noFix}
                    </td>
                    <td data-field="binaries">{row.binaries.join(', ')}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          {v.more ? (
            <p class="muted">
              {text.more(formatNumber(v.items.length))} <a href="/portal/security">{text.all}</a>
            </p>
          ) : null}
        </>
      )}
    </section>
  );
}
