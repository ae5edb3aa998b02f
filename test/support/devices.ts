/**
 * SQL builders for devices, org units and groups: tests of organizing features create
 * devices directly instead of going through activation, so they depend on nothing else.
 */
import type { Sql } from '../../api/db/client.ts';
import { sequence } from './builders.ts';

/** The seeded templates (CONTRACT §4). */
export const TEMPLATE_IDS = {
  debianStandard: '6d1f4c2a-3b5e-4f70-9a1d-0c2e8b7a5d01',
  ubuntuStandard: '6d1f4c2a-3b5e-4f70-9a1d-0c2e8b7a5d02',
  debianEncrypted: '6d1f4c2a-3b5e-4f70-9a1d-0c2e8b7a5d03',
} as const;

export interface InsertDeviceOptions {
  organizationId: string;
  /** Default: the organization's protected unit "Neue Geräte". */
  oeId?: string;
  /** Default: a random serial. */
  serial?: string;
  /** Default: null (not yet resolved: the default template of the preferred backend). */
  templateId?: string | null;
  hostname?: string | null;
  archived?: boolean;
  deprovisioned?: boolean;
}

export interface InsertedDevice {
  id: string;
  organization_id: string;
  oe_id: string;
  serial: string;
}

let counter = 0;

export async function insertDevice(sql: Sql, options: InsertDeviceOptions): Promise<InsertedDevice> {
  const serial = options.serial ?? `SN-${sequence(++counter)}-${crypto.randomUUID().slice(0, 8)}`;
  // created_at strictly increases within the organization, so lists ordered by
  // (created_at, id) show devices in the order a test inserted them.
  const [row] = await sql<InsertedDevice[]>`
    insert into devices (organization_id, serial, hostname, oe_id, template_id, archived_at, deprovisioned_at, created_at)
    values (
      ${options.organizationId}, ${serial}, ${options.hostname ?? null},
      coalesce(${options.oeId ?? null}::uuid,
               (select id from org_units where organization_id = ${options.organizationId} and protected)),
      ${options.templateId ?? null},
      ${options.archived ? sql`now_ms()` : null},
      ${options.deprovisioned ? sql`now_ms()` : null},
      greatest(now_ms(), (select max(created_at) + interval '1 millisecond' from devices where organization_id = ${options.organizationId})))
    returning id, organization_id, oe_id, serial`;
  return row!;
}

/** An org unit (SQL, no checks): `parentId` null or absent = top level. */
export async function insertOrgUnit(
  sql: Sql,
  organizationId: string,
  name: string,
  parentId: string | null = null,
): Promise<string> {
  const [row] = await sql<{ id: string }[]>`
    insert into org_units (organization_id, parent_id, name) values (${organizationId}, ${parentId}, ${name})
    returning id`;
  return row!.id;
}

/** A chain of `depth` nested units under `parentId`; returns their ids, outermost first. */
export async function insertOrgUnitChain(
  sql: Sql,
  organizationId: string,
  depth: number,
  parentId: string | null = null,
): Promise<string[]> {
  const ids: string[] = [];
  let parent = parentId;
  for (let i = 0; i < depth; i++) {
    parent = await insertOrgUnit(sql, organizationId, `Ebene ${i + 1}`, parent);
    ids.push(parent);
  }
  return ids;
}

export async function insertGroup(
  sql: Sql,
  organizationId: string,
  name = `Gruppe ${sequence(++counter)}`,
): Promise<string> {
  const [row] = await sql<{ id: string }[]>`
    insert into groups (organization_id, name) values (${organizationId}, ${name}) returning id`;
  return row!.id;
}

export async function addToGroup(sql: Sql, groupId: string, deviceId: string): Promise<void> {
  await sql`
    insert into group_members (group_id, device_id, organization_id)
    select ${groupId}, d.id, d.organization_id from devices d where d.id = ${deviceId}`;
}
