/**
 * SQL of the installer's handshake: the credential (classic code or enrollment session),
 * the device an activation loads or creates, the template assignment, the bootstrap
 * token and the workspace-resolved blueprints of a template.
 */
import type { Db } from '../db/client.ts';
import { hashSecret, randomToken } from '../http/crypto.ts';
import { isUuid } from '../http/uuid.ts';
import { normalizeActivationCode } from '../organizations/activation_code.ts';
import type { TemplateRow } from '../templates/repo.ts';

/** Who vouches for the installer: the organization's classic code or one enrollment session. */
export type Credential =
  | { kind: 'code'; organizationId: string }
  | { kind: 'session'; organizationId: string; sessionId: string; templateId: string };

interface SessionRow {
  id: string;
  organization_id: string;
  template_id: string;
}

function fromSession(row: SessionRow | undefined): Credential | null {
  return row
    ? { kind: 'session', organizationId: row.organization_id, sessionId: row.id, templateId: row.template_id }
    : null;
}

async function findClassicCode(db: Db, code: string): Promise<Credential | null> {
  const normalized = normalizeActivationCode(code);
  if (normalized === null) return null;
  const [row] = await db<{ organization_id: string }[]>`
    select organization_id from activation_codes where code = ${normalized}`;
  return row ? { kind: 'code', organizationId: row.organization_id } : null;
}

/**
 * The credential of an activation. A UUID is only ever an enrollment session (never a
 * fall-back to the classic path). A session is claimed in the one statement that checks
 * it: revocation, expiry and quota are tested on the row the update locks, so however
 * many activations race, `devices_used` never passes `max_devices`. Null: refused, and
 * nothing was written.
 */
export async function claimCredential(db: Db, code: string): Promise<Credential | null> {
  if (!isUuid(code)) return findClassicCode(db, code);
  const [row] = await db<SessionRow[]>`
    update enrollment_sessions set devices_used = devices_used + 1
    where id = ${code} and revoked_at is null and expires_at > now() and devices_used < max_devices
    returning id, organization_id, template_id`;
  return fromSession(row);
}

/** The code names an enrollment session, in whatever state: its holder is no guesser. */
export async function isKnownSession(db: Db, code: string): Promise<boolean> {
  if (!isUuid(code)) return false;
  const [row] = await db`select 1 from enrollment_sessions where id = ${code}`;
  return row !== undefined;
}

/**
 * The credential of a resolve: checked again, but the quota is not counted a second
 * time (the device was counted at its activation). The session row is share-locked so
 * a concurrent revoke is ordered before or after the whole resolve.
 */
export async function checkCredential(db: Db, code: string): Promise<Credential | null> {
  if (!isUuid(code)) return findClassicCode(db, code);
  const [row] = await db<SessionRow[]>`
    select id, organization_id, template_id from enrollment_sessions
    where id = ${code} and revoked_at is null and expires_at > now()
    for share`;
  return fromSession(row);
}

/**
 * Loads the organization's live device with this serial, or creates it, and puts it in
 * the protected org unit "Neue Geräte" either way. One statement on the partial unique
 * index `devices_live_serial`, so two installers racing on one serial get one device.
 * A hostname or session given now replaces the stored one; absent ones keep it.
 * A device that holds an agent secret is under management and is left as it is: null.
 * The same statement announces `device.activated` to the organization's webhooks.
 */
export async function upsertActivatedDevice(
  db: Db,
  input: { organizationId: string; serial: string; hostname: string | null; sessionId: string | null },
): Promise<string | null> {
  const [row] = await db<{ id: string }[]>`
    with device as (
      insert into devices (organization_id, serial, hostname, oe_id, enrollment_session_id)
      values (
        ${input.organizationId}, ${input.serial}, ${input.hostname},
        (select id from org_units where organization_id = ${input.organizationId} and protected),
        ${input.sessionId})
      on conflict (organization_id, serial) where archived_at is null do update
      set oe_id = excluded.oe_id,
          hostname = coalesce(excluded.hostname, devices.hostname),
          enrollment_session_id = coalesce(excluded.enrollment_session_id, devices.enrollment_session_id)
      where devices.agent_secret_hash is null
      returning id, organization_id, serial, hostname, oe_id, enrollment_session_id
    )
    select id, emit_webhook_event(organization_id, 'device.activated', jsonb_build_object(
      'device_id', id, 'serial', serial, 'hostname', hostname, 'oe_id', oe_id,
      'enrollment_session_id', enrollment_session_id))::text
    from device`;
  return row?.id ?? null;
}

/** Every template, in the stable order of the template list. */
export async function allTemplates(db: Db): Promise<TemplateRow[]> {
  return db<TemplateRow[]>`
    select id, name, backend, workspace, partitioning, installation, is_default, created_at
    from templates order by created_at, id`;
}

/**
 * Records the assignment of a device that is not under management. `not_found`: no live
 * device of the organization; `enrolled`: it holds an agent secret, and nothing changed.
 */
export async function assignTemplate(
  db: Db,
  input: { deviceId: string; organizationId: string; templateId: string },
): Promise<'assigned' | 'not_found' | 'enrolled'> {
  const [row] = await db<{ enrolled: boolean }[]>`
    with device as (
      select id, agent_secret_hash is not null as enrolled from devices
      where id = ${input.deviceId} and organization_id = ${input.organizationId} and archived_at is null
      for update
    ), assigned as (
      update devices set template_id = ${input.templateId}
      from device where devices.id = device.id and not device.enrolled
      returning devices.id
    )
    select enrolled from device`;
  return row === undefined ? 'not_found' : row.enrolled ? 'enrolled' : 'assigned';
}

const BOOTSTRAP_TOKEN_DAYS = 7;

/**
 * A fresh one-time bootstrap token for the device, stored only as its SHA-256 hash. One
 * row per device: writing it voids any earlier token; bootstrap deletes it when used.
 */
export async function issueBootstrapToken(db: Db, deviceId: string): Promise<string> {
  const token = randomToken();
  await db`
    insert into bootstrap_tokens (device_id, token_hash, expires_at)
    values (${deviceId}, ${hashSecret(token)}, now() + make_interval(days => ${BOOTSTRAP_TOKEN_DAYS}))
    on conflict (device_id) do update
    set token_hash = excluded.token_hash, expires_at = excluded.expires_at, created_at = excluded.created_at`;
  return token;
}

export interface MerkmalBlueprintRow {
  merkmal: string;
  ansible_role: string;
}

/**
 * The workspace Merkmale of a template resolved to Ansible roles for its backend,
 * ordered by Merkmal key. A Merkmal without a blueprint for the backend is left out.
 */
export async function templateBlueprints(db: Db, templateId: string): Promise<MerkmalBlueprintRow[]> {
  return db<MerkmalBlueprintRow[]>`
    select wm.merkmal, bp.ansible_role
    from templates t
    join workspace_merkmale wm on wm.workspace = t.workspace
    join blueprints bp on bp.merkmal = wm.merkmal and bp.backend = t.backend
    where t.id = ${templateId}
    order by wm.merkmal`;
}

export interface TemplateContextRow {
  workspace: { key: string; name: string };
  backend: { key: string; name: string; distribution: string };
}

/** The workspace and backend records a template names. */
export async function templateContext(
  db: Db,
  template: Pick<TemplateRow, 'workspace' | 'backend'>,
): Promise<TemplateContextRow> {
  const [row] = await db<TemplateContextRow[]>`
    select jsonb_build_object('key', w.key, 'name', w.name) as workspace,
           jsonb_build_object('key', b.key, 'name', b.name, 'distribution', b.distribution) as backend
    from workspaces w, backends b
    where w.key = ${template.workspace} and b.key = ${template.backend}`;
  return row!;
}
