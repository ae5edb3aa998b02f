/**
 * The device page's software: what its last inventory says (OS, kernel, reboot needed),
 * its pending updates with the security ones marked, and its packages, searchable by a
 * name prefix and paged. Read with the API's own functions.
 */
import type { InventoryPage } from '../inventory/routes.ts';
import { formatTime, t } from './i18n/index.ts';

export function SoftwareSection(props: { deviceId: string; page: InventoryPage | null; q: string | undefined }) {
  const text = t().deviceDetails.software;
  const { page } = props;
  if (page === null) {
    return (
      <>
        <h2>{text.title}</h2>
        <p class="muted" data-field="no-inventory">
          {text.none}
        </p>
      </>
    );
  }
  const { inventory, packages, nextCursor } = page;
  const base = `/portal/devices/${props.deviceId}`;
  const moreHref = nextCursor
    ? `${base}?${new URLSearchParams({ ...(props.q ? { pkg_q: props.q } : {}), pkg_cursor: nextCursor })}#packages`
    : null;
  return (
    <>
      <h2>{text.title}</h2>
      <div class="table-wrap">
        <table>
          <tbody>
            <tr>
              <th scope="row">{text.os}</th>
              <td>
                {inventory.os.id} {inventory.os.version_id} {inventory.os.codename ? `(${inventory.os.codename})` : ''}
              </td>
            </tr>
            <tr>
              <th scope="row">{text.kernel}</th>
              <td>{inventory.kernel}</td>
            </tr>
            <tr>
              <th scope="row">{text.packagesCount}</th>
              <td>{inventory.packages_count}</td>
            </tr>
            <tr>
              <th scope="row">{text.rebootRequired}</th>
              <td data-field="reboot-required">
                {inventory.reboot_required ? <strong>{text.rebootNeeded}</strong> : text.rebootNotNeeded}
              </td>
            </tr>
            <tr>
              <th scope="row">{text.inventoryAt}</th>
              <td>{formatTime(new Date(inventory.inventory_at))}</td>
            </tr>
          </tbody>
        </table>
      </div>
      <h3>{text.pending}</h3>
      {inventory.pending.length === 0 ? (
        <p class="muted">{text.pendingNone}</p>
      ) : (
        <>
          <p>{text.pendingCount(inventory.pending.length, inventory.security_pending_count)}</p>
          <div class="table-wrap">
            <table data-table="pending">
              <thead>
                <tr>
                  <th scope="col">{text.packageName}</th>
                  <th scope="col">{text.installed}</th>
                  <th scope="col">{text.candidate}</th>
                  <th scope="col">{text.security}</th>
                </tr>
              </thead>
              <tbody>
                {inventory.pending.map((p) => (
                  <tr data-package={p.name} data-security={p.security ? 'true' : 'false'}>
                    <td>{p.name}</td>
                    <td>{p.installed || '–'}</td>
                    <td>{p.candidate}</td>
                    <td>{p.security ? <strong>{text.security}</strong> : ''}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
      <h3 id="packages">{text.packages}</h3>
      <form method="get" action={`${base}#packages`}>
        <label>
          {text.search} <input type="search" name="pkg_q" value={props.q ?? ''} maxlength={200} />
        </label>{' '}
        <button type="submit">{text.searchButton}</button>
      </form>
      {packages.length === 0 ? (
        <p class="muted">{text.noPackages}</p>
      ) : (
        <div class="table-wrap">
          <table data-table="packages">
            <thead>
              <tr>
                <th scope="col">{text.packageName}</th>
                <th scope="col">{text.arch}</th>
                <th scope="col">{text.version}</th>
                <th scope="col">{text.source}</th>
              </tr>
            </thead>
            <tbody>
              {packages.map((p) => (
                <tr data-package={p.name}>
                  <td>{p.name}</td>
                  <td>{p.arch}</td>
                  <td>{p.version}</td>
                  <td>
                    {p.source} {p.source_version !== p.version ? <span class="muted">({p.source_version})</span> : null}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {moreHref ? (
        <p>
          <a href={moreHref}>{text.more}</a>
        </p>
      ) : null}
    </>
  );
}
