/**
 * The device list's filter as the portal's pages carry it in their query: read from a
 * query (the list, a bulk action's confirmation and its form) and written back to links.
 */
import { type DeviceFilter, merkmalFilterable } from '../devices/organize_repo.ts';
import type { Convergence, DeviceStatus } from '../devices/repo.ts';
import { isUuid } from '../http/uuid.ts';
import { MATCH_STATUSES } from '../vulnerabilities/repo.ts';
import { DISK_ENCRYPTION_STATES } from '../devices/disk_encryption.ts';

/** The statuses the list can show (it omits archived devices), in the filter's order. */
export const listedStatuses = [
  'active',
  'stale',
  'enrolled',
  'deprovisioned',
] as const satisfies readonly DeviceStatus[];
export const convergences = ['failed', 'pending', 'converged'] as const satisfies readonly Convergence[];

/** A CVE id as the device list's `cve` filter takes it. */
const CVE_ID = /^CVE-\d{4}-\d{4,30}$/i;

/** The value if it is one of these, else none. */
export function oneOf<T extends string>(values: readonly T[], value: string | undefined): T | undefined {
  return values.find((v) => v === value);
}

/** The filter of a query; what is not a valid value is no filter. */
export function listFilterOf(q: Record<string, string | undefined>): DeviceFilter {
  const convergence = oneOf(convergences, q.convergence);
  const cve = q.cve && CVE_ID.test(q.cve) ? q.cve.toUpperCase() : undefined;
  return {
    oe_id: q.oe_id && isUuid(q.oe_id) ? q.oe_id : undefined,
    group_id: q.group_id && isUuid(q.group_id) ? q.group_id : undefined,
    stale: q.stale === 'true' ? true : undefined,
    status: oneOf(listedStatuses, q.status),
    convergence,
    // A Merkmal is filtered by its own convergence where the list can (the overview's links); else left out.
    merkmal: merkmalFilterable(convergence) && q.merkmal && q.merkmal.length <= 100 ? q.merkmal : undefined,
    q: q.q?.trim() ? q.q.trim().slice(0, 100) : undefined,
    package: q.package?.trim() ? q.package.trim().slice(0, 200) : undefined,
    security_updates: q.security_updates === 'true' ? true : undefined,
    reboot_required: q.reboot_required === 'true' ? true : undefined,
    cve,
    cve_status: cve === undefined ? undefined : oneOf(MATCH_STATUSES, q.cve_status),
    disk_encryption: oneOf(DISK_ENCRYPTION_STATES, q.disk_encryption),
  };
}

/** The filter as query parameters, in a fixed order (the links' and the hidden fields'). */
export function filterParams(filter: DeviceFilter): URLSearchParams {
  return new URLSearchParams(Object.entries(filter).flatMap(([k, v]) => (v === undefined ? [] : [[k, String(v)]])));
}
