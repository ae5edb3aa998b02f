/** Labels the portal's pages share, so a state reads the same on every page. */
import type { ReportedEvent } from '../catalog/outcomes.ts';
import type { Convergence, DeviceStatus } from '../devices/repo.ts';

/** A Merkmal's state: `present`, `absent`, or none (no override at that step). */
export const stateLabel = (s: string | null) =>
  s === 'present' ? 'vorhanden' : s === 'absent' ? 'nicht vorhanden' : '–';

/** A device's status, in the order the list's filter offers them. */
export const statusLabel: Record<DeviceStatus, string> = {
  active: 'aktiv',
  stale: 'veraltet',
  enrolled: 'registriert',
  deprovisioned: 'deprovisioniert',
  archived: 'archiviert',
};

/** A Merkmal's or a device's convergence, worst last. */
export const convergenceLabel: Record<Convergence, string> = {
  converged: 'umgesetzt',
  pending: 'ausstehend',
  failed: 'fehlgeschlagen',
};

/** The agent's report of a Merkmal. */
export const reportLabel: Record<ReportedEvent, string> = {
  applied: 'angewendet',
  apply_failed: 'Anwenden fehlgeschlagen',
  removed: 'entfernt',
  remove_failed: 'Entfernen fehlgeschlagen',
};

/**
 * The agent's message in a report's `detail`: the text itself, or the `message` of an
 * object (what the device agent sends, beside its role and whether anything changed),
 * else the JSON; null without one.
 */
export function reportMessage(detail: unknown): string | null {
  if (detail === null || detail === undefined) return null;
  if (typeof detail === 'string') return detail;
  if (typeof detail === 'object' && !Array.isArray(detail)) {
    const message = (detail as Record<string, unknown>).message;
    if (typeof message === 'string') return message;
    if (message === null) return null;
  }
  return JSON.stringify(detail);
}
