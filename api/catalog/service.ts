/**
 * Select, deselect and unset of a catalog Merkmal at a scope, shared by the API routes and
 * the portal: the change (with its events naming the actor) and its audit entry.
 */
import { actorOf, type AuditEntry, type Caller } from '../access/declaration.ts';
import type { Db } from '../db/client.ts';
import * as repo from './repo.ts';
import type { CatalogOverrideType } from './schemas.ts';

const targetTypes = { devices: 'device', 'org-units': 'org_unit', groups: 'group' } as const;

export async function changeSelection(
  db: Db,
  scope: repo.Scope,
  id: string,
  merkmal: string,
  change: repo.Change,
  caller: Caller,
): Promise<{ override: CatalogOverrideType | null; audit: AuditEntry }> {
  const { override, organizationId } = await repo.changeOverride(db, scope, id, merkmal, change, actorOf(caller));
  const details = change.kind === 'set' ? { merkmal, state: change.state, optionen: change.optionen } : { merkmal };
  return { override, audit: { organizationId, targetType: targetTypes[scope], targetId: id, details } };
}
