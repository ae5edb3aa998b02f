/** Labels the portal's pages share, so a state reads the same on every page (in the request's language). */
import type { ReportedEvent } from '../catalog/outcomes.ts';
import type { Convergence, DeviceStatus } from '../devices/repo.ts';
import type { DiskEncryptionState } from '../devices/disk_encryption.ts';
import { t } from './i18n/index.ts';

/** A Merkmal's state: `present`, `absent`, or none (no override at that step). */
export const stateLabel = (s: string | null) =>
  s === 'present' ? t().common.state.present : s === 'absent' ? t().common.state.absent : t().common.state.none;

/** A device's status. */
export const statusLabel = (s: DeviceStatus) => t().common.status[s];

/** A Merkmal's or a device's convergence. */
export const convergenceLabel = (c: Convergence) => t().common.convergence[c];

/** A device's disk encryption state, as fleet status counts it. */
export const diskEncryptionLabel = (s: DiskEncryptionState) => t().common.diskEncryption[s];

/** The agent's report of a Merkmal. */
export const reportLabel = (e: ReportedEvent) => t().common.report[e];

export const isReportedEvent = (type: string): type is ReportedEvent => Object.hasOwn(t().common.report, type);

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
