/**
 * The lifecycle transitions of a device, shared by the API routes and the
 * portal: each returns the device after the transition and the audit entry of the change.
 */
import type { AuditEntry } from '../access/declaration.ts';
import type { Db } from '../db/client.ts';
import { notFound } from '../http/errors.ts';
import * as lifecycle from './lifecycle_repo.ts';
import { type DeviceRow, deviceArchived, getDevice } from './repo.ts';

export type Transition = 'deprovision' | 'reprovision' | 'archive';

export async function transitionDevice(
  db: Db,
  transition: Transition,
  id: string,
  pollIntervalSeconds: number,
): Promise<{ row: DeviceRow; audit: AuditEntry }> {
  if (transition === 'reprovision') {
    const outcome = await lifecycle.reprovision(db, id);
    if (outcome === 'not_found') throw notFound('device', id);
    if (outcome === 'archived') throw deviceArchived(id, 'it cannot be reprovisioned');
  } else if (transition === 'deprovision') {
    const outcome = await lifecycle.deprovision(db, id);
    if (outcome === 'not_found') throw notFound('device', id);
    if (outcome === 'archived') throw deviceArchived(id, 'it cannot be deprovisioned');
  } else if (!(await lifecycle.archive(db, id))) {
    throw notFound('device', id);
  }
  // 404 if its organization was deleted in the meantime.
  const row = await getDevice(db, id, pollIntervalSeconds);
  if (!row) throw notFound('device', id);
  return { row, audit: { organizationId: row.organization_id, targetType: 'device', targetId: row.id } };
}
