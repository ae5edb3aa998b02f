/** SQL of organizations, their default org unit and their classic activation code. */
import { afterCursor } from '../db/keyset.ts';
import { type Db, transaction } from '../db/client.ts';
import { notFound } from '../http/errors.ts';
import type { Cursor } from '../http/pagination.ts';
import { generateActivationCode } from './activation_code.ts';
import type { OrganizationCreateInput, OrganizationPatchInput } from './schemas.ts';

const DEFAULT_ORG_UNIT_NAME = 'Neue Geräte';

export interface OrganizationRow {
  id: string;
  name: string;
  kontakt_name: string | null;
  adresse: string | null;
  telefon: string | null;
  kontakt_email: string | null;
  notizen: string | null;
  default_oe_id: string;
  created_at: Date;
}

const contactColumns = ['kontakt_name', 'adresse', 'telefon', 'kontakt_email', 'notizen'] as const;

function selectOrganizations(db: Db) {
  return db`
    select o.id, o.name, o.kontakt_name, o.adresse, o.telefon, o.kontakt_email, o.notizen,
           ou.id as default_oe_id, o.created_at
    from organizations o
    join org_units ou on ou.organization_id = o.id and ou.protected`;
}

/** Creates the organization with its protected org unit and activation code, atomically. */
export async function createOrganization(sql: Db, input: OrganizationCreateInput): Promise<OrganizationRow> {
  return transaction(sql, async (tx) => {
    const values = {
      name: input.name,
      kontakt_name: input.kontakt_name ?? null,
      adresse: input.adresse ?? null,
      telefon: input.telefon ?? null,
      kontakt_email: input.kontakt_email ?? null,
      notizen: input.notizen ?? null,
    };
    const [org] = await tx`
      insert into organizations ${tx(values, 'name', ...contactColumns)}
      returning id`;
    await tx`
      insert into org_units (organization_id, parent_id, name, protected)
      values (${org!.id}, null, ${DEFAULT_ORG_UNIT_NAME}, true)`;
    await tx`
      insert into activation_codes (organization_id, code)
      values (${org!.id}, ${generateActivationCode()})`;
    return (await getOrganization(tx, org!.id))!;
  });
}

export async function getOrganization(db: Db, id: string): Promise<OrganizationRow | null> {
  const [row] = await db<OrganizationRow[]>`${selectOrganizations(db)} where o.id = ${id}`;
  return row ?? null;
}

/** Throws 404 `not_found` unless the organization exists. */
export async function requireOrganization(db: Db, id: string): Promise<void> {
  const [row] = await db`select 1 from organizations where id = ${id}`;
  if (!row) throw notFound('organization', id);
}

/** A page of organizations; `only` restricts it to one (an organization key sees just its own). */
export async function listOrganizations(
  db: Db,
  cursor: Cursor | null,
  limit: number,
  only: string | null = null,
): Promise<OrganizationRow[]> {
  return db<OrganizationRow[]>`
    ${selectOrganizations(db)}
    where ${afterCursor(db, cursor, 'asc', 'o')} and ${only === null ? db`true` : db`o.id = ${only}`}
    order by o.created_at, o.id
    limit ${limit + 1}`;
}

export async function updateOrganization(
  db: Db,
  id: string,
  patch: OrganizationPatchInput,
): Promise<OrganizationRow | null> {
  const columns = (['name', ...contactColumns] as const).filter((c) => patch[c] !== undefined);
  if (columns.length > 0) {
    const [row] = await db`update organizations set ${db(patch, ...columns)} where id = ${id} returning id`;
    if (!row) return null;
  }
  return getOrganization(db, id);
}

export interface ActivationCodeRow {
  code: string;
  created_at: Date;
}

export async function getActivationCode(db: Db, organizationId: string): Promise<ActivationCodeRow | null> {
  const [row] = await db<ActivationCodeRow[]>`
    select code, created_at from activation_codes where organization_id = ${organizationId}`;
  return row ?? null;
}

/** Replaces the code in place: the old one stops working with this statement. */
export async function rotateActivationCode(db: Db, organizationId: string): Promise<ActivationCodeRow | null> {
  const [row] = await db<ActivationCodeRow[]>`
    update activation_codes set code = ${generateActivationCode()}, created_at = now_ms()
    where organization_id = ${organizationId}
    returning code, created_at`;
  return row ?? null;
}
