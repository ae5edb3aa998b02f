/** The badges that show a device's status and a convergence the same way on every page. */
import type { Convergence, DeviceStatus } from '../devices/repo.ts';
import { convergenceLabel, statusLabel } from './labels.ts';

export function ConvergenceBadge(props: { convergence: Convergence | null }) {
  const { convergence } = props;
  if (convergence === null) return <span class="muted">–</span>;
  return (
    <span class={`badge ${convergence}`} data-convergence={convergence}>
      {convergenceLabel(convergence)}
    </span>
  );
}

export function StatusBadge(props: { status: DeviceStatus }) {
  return (
    <span class={`badge status-${props.status}`} data-status={props.status}>
      {statusLabel(props.status)}
    </span>
  );
}
