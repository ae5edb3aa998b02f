/**
 * The organization that owns a resource, one query per kind: the single place where
 * tenant isolation learns whose an id is.
 */
import type { Db } from '../db/client.ts';
import type { ResourceKind } from './declaration.ts';

type Owner = { organization_id: string }[];

/** The owning organization of the resource, or null when there is none with that id. */
export async function organizationOf(db: Db, kind: ResourceKind, id: string): Promise<string | null> {
  const rows = await ownerQuery(db, kind, id);
  return rows[0]?.organization_id ?? null;
}

function ownerQuery(db: Db, kind: ResourceKind, id: string) {
  switch (kind) {
    case 'organization':
      return db<Owner>`select id as organization_id from organizations where id = ${id}`;
    case 'device':
      return db<Owner>`select organization_id from devices where id = ${id}`;
    case 'org_unit':
      return db<Owner>`select organization_id from org_units where id = ${id}`;
    case 'group':
      return db<Owner>`select organization_id from groups where id = ${id}`;
    case 'enrollment_session':
      return db<Owner>`select organization_id from enrollment_sessions where id = ${id}`;
    case 'iso_build':
      return db<Owner>`select organization_id from iso_builds where id = ${id}`;
    case 'api_key':
      return db<Owner>`select organization_id from api_keys where id = ${id}`;
    case 'webhook':
      return db<Owner>`select organization_id from webhooks where id = ${id}`;
    case 'webhook_delivery':
      return db<Owner>`
        select w.organization_id from webhook_deliveries d join webhooks w on w.id = d.webhook_id
        where d.id = ${id}`;
    case 'rollout':
      return db<Owner>`select organization_id from rollouts where id = ${id}`;
    case 'disk_key':
      return db<Owner>`select organization_id from disk_keys where id = ${id}`;
    case 'action':
      return db<Owner>`select organization_id from device_actions where id = ${id}`;
  }
}
