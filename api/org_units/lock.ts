/**
 * The per-organization write lock. Changes to an organization's org-unit tree and to its
 * Merkmal overrides take it for the rest of their transaction, so concurrent moves cannot
 * build a cycle between them and the before/after state behind selection events is not
 * changed underneath by another selection. Reads (the catalog listing, the agent's
 * check-in) never take it.
 */
import type { Db } from '../db/client.ts';

export async function lockOrganization(db: Db, organizationId: string): Promise<void> {
  await db`select pg_advisory_xact_lock(hashtextextended(${'fleet:organization:' + organizationId}, 0))`;
}
