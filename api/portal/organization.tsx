/**
 * The organization's structure: org units as a tree with their devices and overrides
 * (create, rename, move, delete) and groups with members and overrides (create, rename,
 * delete, add and remove a device), each with its catalog (scope_catalog.tsx); the audit log
 * is in audit.tsx. Every change goes through the
 * services the API routes call, checked and audited by the routes' own declarations.
 */
import { Hono } from 'hono';
import type { AuditEntry } from '../access/declaration.ts';
import { recordEffectiveChange } from '../catalog/effective_changes.ts';
import { listOrganizationOverrides } from '../catalog/repo.ts';
import type { Db } from '../db/client.ts';
import { findDeviceBySerialOrId } from '../devices/repo.ts';
import * as groupOps from '../groups/operations.ts';
import * as groups from '../groups/repo.ts';
import * as groupService from '../groups/service.ts';
import { GroupCreate, GroupPatch } from '../groups/schemas.ts';
import { ApiError } from '../http/errors.ts';
import * as orgUnitOps from '../org_units/operations.ts';
import * as orgUnits from '../org_units/repo.ts';
import type { OrgUnitRow } from '../org_units/repo.ts';
import { OrgUnitCreate, OrgUnitPatch } from '../org_units/schemas.ts';
import { createUnit, deleteUnit, updateUnit } from '../org_units/service.ts';
import { canWrite, type PortalEnv, portalRead, postWrite } from './access.ts';
import { formFields, invalidInput, render, takeFlash, writeAndRedirect } from './http.tsx';
import { stateLabel } from './labels.ts';
import { CsrfField, Layout } from './layout.tsx';
import { loadScopeCatalog, ScopeCatalog } from './scope_catalog.tsx';

/** The domain's refusals in the portal's words. */
const GERMAN: Partial<Record<string, string>> = {
  protected_org_unit:
    'Die Organisationseinheit „Neue Geräte“ ist geschützt: Sie kann nicht umbenannt, verschoben oder gelöscht werden.',
  org_unit_not_empty:
    'Die Organisationseinheit ist nicht leer: Verschieben oder löschen Sie zuerst ihre Unter-Einheiten und Geräte. Nichts wurde geändert.',
  org_unit_cycle:
    'Eine Organisationseinheit kann nicht unter sich selbst oder eine ihrer Unter-Einheiten verschoben werden. Nichts wurde geändert.',
  name_taken:
    'Dieser Name ist hier schon vergeben (Groß- und Kleinschreibung zählen nicht): Wählen Sie einen anderen. Nichts wurde geändert.',
  organization_mismatch: 'Die übergeordnete Einheit gehört zu einer anderen Organisation.',
  device_archived: 'Ein archiviertes Gerät kann keiner Gruppe beitreten.',
};

/** Runs a write and rethrows a refusal of the domain with its German message. */
async function inGerman<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (err) {
    const text = err instanceof ApiError ? GERMAN[err.code] : undefined;
    if (err instanceof ApiError && text) throw new ApiError(err.code, text, { status: err.status });
    throw err;
  }
}

/** A service's answer as portalWrite takes it: the audit entry, no result to show. */
const noResult = ({ audit }: { audit: AuditEntry }) => ({ audit, result: null });

/** A form's parent field: '' is the top level. */
const parentOf = (value: string | undefined) => (value ? value : null);

/** Devices (not archived) and overrides per org unit, members and overrides per group. */
async function countsAndOverrides(db: Db, organizationId: string) {
  const [unitDevices, groupMembers, unitOverrides, groupOverrides] = await Promise.all([
    orgUnits.countDevicesByOrgUnit(db, organizationId),
    groups.countMembersByGroup(db, organizationId),
    listOrganizationOverrides(db, 'org-units', organizationId),
    listOrganizationOverrides(db, 'groups', organizationId),
  ]);
  const overrides = (rows: typeof unitOverrides) => {
    const map = new Map<string, string[]>();
    for (const r of rows) map.set(r.id, [...(map.get(r.id) ?? []), `${r.merkmal}: ${stateLabel(r.state)}`]);
    return map;
  };
  return {
    unitDevices,
    groupMembers,
    unitOverrides: overrides(unitOverrides),
    groupOverrides: overrides(groupOverrides),
  };
}

/** The units in tree order (depth-first by name), each with its depth. */
function treeOrder(units: OrgUnitRow[]): Array<[OrgUnitRow, number]> {
  const children = new Map<string | null, OrgUnitRow[]>();
  for (const u of units) children.set(u.parent_id, [...(children.get(u.parent_id) ?? []), u]);
  const out: Array<[OrgUnitRow, number]> = [];
  const walk = (parent: string | null, depth: number) => {
    for (const u of (children.get(parent) ?? []).sort((a, b) => a.name.localeCompare(b.name, 'de'))) {
      out.push([u, depth]);
      if (depth < 100) walk(u.id, depth + 1);
    }
  };
  walk(null, 0);
  return out;
}

/** The org unit select of a form: the top level, then the tree. */
function ParentSelect(props: { id: string; units: OrgUnitRow[]; selected: string | null; without?: string }) {
  return (
    <select id={props.id} name="parent_id">
      <option value="" selected={props.selected === null}>
        – oberste Ebene –
      </option>
      {treeOrder(props.units)
        .filter(([u]) => u.id !== props.without)
        .map(([u, depth]) => (
          <option value={u.id} selected={u.id === props.selected}>
            {'\u00a0'.repeat(depth * 2)}
            {u.name}
          </option>
        ))}
    </select>
  );
}

export function organizationRoutes() {
  const app = new Hono<PortalEnv>();

  app.get('/org-units', async (c) => {
    const session = c.get('session');
    const org = session.organizationId!;
    const db = await portalRead(c, orgUnitOps.listOrgUnits, { param: { id: org } });
    const [units, extra] = await Promise.all([
      orgUnits.listOrgUnits(db, org, null, 10_000),
      countsAndOverrides(db, org),
    ]);
    const write = canWrite(session);
    return render(
      c,
      <Layout title="Organisationseinheiten" session={session} flash={takeFlash(c)}>
        {write ? (
          <form method="post" action="/portal/org-units">
            <CsrfField session={session} />
            <h2>Neue Organisationseinheit</h2>
            <label for="name">Name</label>
            <input id="name" name="name" required maxlength={200} />
            <label for="parent_id">Übergeordnete Einheit</label>
            <ParentSelect id="parent_id" units={units} selected={null} />
            <p>
              <button type="submit">Anlegen</button>
            </p>
          </form>
        ) : null}
        <table>
          <thead>
            <tr>
              <th scope="col">Organisationseinheit</th>
              <th scope="col">Geräte</th>
              <th scope="col">Vorgaben</th>
              {write ? <th scope="col">Aktion</th> : null}
            </tr>
          </thead>
          <tbody>
            {treeOrder(units).map(([u, depth]) => (
              <tr>
                <td>
                  {/* Indented by empty boxes, not a style attribute: the policy allows no inline style. */}
                  {Array.from({ length: depth }, () => (
                    <span class="indent" />
                  ))}
                  {u.name}
                  {u.protected ? ' (Standard)' : ''}
                </td>
                <td>
                  <a href={`/portal/devices?oe_id=${u.id}`}>{extra.unitDevices.get(u.id) ?? 0}</a>
                </td>
                <td>{(extra.unitOverrides.get(u.id) ?? []).join(', ') || '–'}</td>
                {write ? <td>{u.protected ? '–' : <a href={`/portal/org-units/${u.id}`}>Bearbeiten …</a>}</td> : null}
              </tr>
            ))}
          </tbody>
        </table>
      </Layout>,
    );
  });

  app.get('/org-units/:id', async (c) => {
    const session = c.get('session');
    const id = c.req.param('id').toLowerCase();
    const db = await portalRead(c, orgUnitOps.updateOrgUnit, { param: { id } });
    const unit = await orgUnits.requireOrgUnit(db, id);
    const [units, catalog] = await Promise.all([
      orgUnits.listOrgUnits(db, unit.organization_id, null, 10_000),
      loadScopeCatalog(db, unit.organization_id, 'org-units', unit.id, c.get('deps').config.agentPollIntervalSeconds),
    ]);
    const base = `/portal/org-units/${unit.id}`;
    return render(
      c,
      <Layout title={`Organisationseinheit ${unit.name}`} session={session} flash={takeFlash(c)}>
        <p>
          <a href="/portal/org-units">Zurück zu allen Organisationseinheiten</a>
        </p>
        <ScopeCatalog scope="org-units" id={unit.id} name={unit.name} catalog={catalog} />
        <form method="post" action={`${base}/rename`}>
          <CsrfField session={session} />
          <h2>Umbenennen</h2>
          <label for="name">Neuer Name</label>
          <input id="name" name="name" required maxlength={200} value={unit.name} />
          <p>
            <button type="submit">Umbenennen</button>
          </p>
        </form>
        <form method="post" action={`${base}/move`}>
          <CsrfField session={session} />
          <h2>Verschieben</h2>
          <label for="parent_id">Neue übergeordnete Einheit</label>
          <ParentSelect id="parent_id" units={units} selected={unit.parent_id} without={unit.id} />
          <p>
            <button type="submit">Verschieben</button>
          </p>
        </form>
        <form method="post" action={`${base}/delete`}>
          <CsrfField session={session} />
          <h2>Löschen</h2>
          <p>Nur eine Einheit ohne Unter-Einheiten und ohne Geräte kann gelöscht werden; ihre Vorgaben gehen mit.</p>
          <button type="submit" class="danger">
            Endgültig löschen
          </button>
        </form>
      </Layout>,
    );
  });

  postWrite(app, '/org-units', orgUnitOps.createOrgUnit, async (c, write) => {
    const org = c.get('session').organizationId!;
    const fields = await formFields(c);
    return writeAndRedirect(c, '/portal/org-units', 'Organisationseinheit angelegt.', () => {
      const parsed = OrgUnitCreate.safeParse({ name: fields.name, parent_id: parentOf(fields.parent_id) });
      if (!parsed.success) throw invalidInput(parsed.error);
      return write({ param: { id: org }, json: parsed.data }, async (tx) =>
        inGerman(() => createUnit(tx, org, parsed.data).then(noResult)),
      );
    });
  });

  /** Rename and move: the API's PATCH with one field each. */
  for (const [verb, field, success] of [
    ['rename', 'name', 'Organisationseinheit umbenannt.'],
    ['move', 'parent_id', 'Organisationseinheit verschoben.'],
  ] as const) {
    postWrite(app, `/org-units/:id/${verb}`, orgUnitOps.updateOrgUnit, async (c, write) => {
      const id = c.req.param('id').toLowerCase();
      const fields = await formFields(c);
      const value = field === 'name' ? fields.name : parentOf(fields.parent_id);
      return writeAndRedirect(c, `/portal/org-units/${id}`, success, async () => {
        const parsed = OrgUnitPatch.safeParse({ [field]: value });
        if (!parsed.success) throw invalidInput(parsed.error);
        await write({ param: { id }, json: parsed.data }, async (tx, caller) =>
          inGerman(() => updateUnit(tx, id, parsed.data, caller, recordEffectiveChange).then(noResult)),
        );
      });
    });
  }

  postWrite(app, '/org-units/:id/delete', orgUnitOps.deleteOrgUnit, async (c, write) => {
    const id = c.req.param('id').toLowerCase();
    return writeAndRedirect(c, '/portal/org-units', 'Organisationseinheit gelöscht.', () =>
      write({ param: { id } }, async (tx, caller) =>
        inGerman(() => deleteUnit(tx, id, caller, recordEffectiveChange).then(noResult)),
      ),
    );
  });

  app.get('/groups', async (c) => {
    const session = c.get('session');
    const org = session.organizationId!;
    const db = await portalRead(c, groupOps.listGroups, { param: { id: org } });
    const [list, extra] = await Promise.all([groups.listGroups(db, org, null, 10_000), countsAndOverrides(db, org)]);
    const write = canWrite(session);
    return render(
      c,
      <Layout title="Gruppen" session={session} flash={takeFlash(c)}>
        {write ? (
          <form method="post" action="/portal/groups">
            <CsrfField session={session} />
            <h2>Neue Gruppe</h2>
            <label for="name">Name</label>
            <input id="name" name="name" required maxlength={200} />
            <p>
              <button type="submit">Anlegen</button>
            </p>
          </form>
        ) : null}
        {list.length === 0 ? (
          <p class="empty">
            Noch keine Gruppen{write ? ': legen Sie oben die erste an.' : ' (ein Admin der Organisation legt sie an).'}
          </p>
        ) : (
          <table>
            <thead>
              <tr>
                <th scope="col">Gruppe</th>
                <th scope="col">Mitglieder</th>
                <th scope="col">Vorgaben</th>
                {write ? <th scope="col">Aktion</th> : null}
              </tr>
            </thead>
            <tbody>
              {list.slice(0, 10_000).map((g) => (
                <tr>
                  <td>{g.name}</td>
                  <td>
                    <a href={`/portal/devices?group_id=${g.id}`}>{extra.groupMembers.get(g.id) ?? 0}</a>
                  </td>
                  <td>{(extra.groupOverrides.get(g.id) ?? []).join(', ') || '–'}</td>
                  {write ? (
                    <td>
                      <a href={`/portal/groups/${g.id}`}>Bearbeiten …</a>
                    </td>
                  ) : null}
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Layout>,
    );
  });

  app.get('/groups/:id', async (c) => {
    const session = c.get('session');
    const id = c.req.param('id').toLowerCase();
    const db = await portalRead(c, groupOps.updateGroup, { param: { id } });
    const group = await groups.requireGroup(db, id);
    const poll = c.get('deps').config.agentPollIntervalSeconds;
    const [members, catalog] = await Promise.all([
      groups.listGroupDevices(db, id, null, 1000, poll),
      loadScopeCatalog(db, group.organization_id, 'groups', group.id, poll),
    ]);
    const base = `/portal/groups/${group.id}`;
    return render(
      c,
      <Layout title={`Gruppe ${group.name}`} session={session} flash={takeFlash(c)}>
        <p>
          <a href="/portal/groups">Zurück zu allen Gruppen</a>
        </p>
        <ScopeCatalog scope="groups" id={group.id} name={group.name} catalog={catalog} />
        <h2>Mitglieder</h2>
        <form method="post" action={`${base}/members`}>
          <CsrfField session={session} />
          <label for="device">Gerät hinzufügen (Seriennummer oder Geräte-ID)</label>
          <input id="device" name="device" required maxlength={200} />
          <p>
            <button type="submit">Hinzufügen</button>
          </p>
        </form>
        {members.length === 0 ? (
          <p class="empty">Noch keine Mitglieder: fügen Sie oben ein Gerät hinzu.</p>
        ) : (
          <table>
            <thead>
              <tr>
                <th scope="col">Seriennummer</th>
                <th scope="col">Hostname</th>
                <th scope="col">Aktion</th>
              </tr>
            </thead>
            <tbody>
              {members.slice(0, 1000).map((d) => (
                <tr>
                  <td>
                    <a href={`/portal/devices/${d.id}`}>{d.serial}</a>
                  </td>
                  <td>{d.hostname ?? '–'}</td>
                  <td>
                    <form method="post" action={`${base}/members/${d.id}/remove`}>
                      <CsrfField session={session} />
                      <button type="submit">Entfernen</button>
                    </form>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        <form method="post" action={`${base}/rename`}>
          <CsrfField session={session} />
          <h2>Umbenennen</h2>
          <label for="name">Neuer Name</label>
          <input id="name" name="name" required maxlength={200} value={group.name} />
          <p>
            <button type="submit">Umbenennen</button>
          </p>
        </form>
        <form method="post" action={`${base}/delete`}>
          <CsrfField session={session} />
          <h2>Löschen</h2>
          <p>Die Mitgliedschaften und Vorgaben der Gruppe gehen mit.</p>
          <button type="submit" class="danger">
            Endgültig löschen
          </button>
        </form>
      </Layout>,
    );
  });

  postWrite(app, '/groups', groupOps.createGroup, async (c, write) => {
    const org = c.get('session').organizationId!;
    const fields = await formFields(c);
    return writeAndRedirect(c, '/portal/groups', 'Gruppe angelegt.', () => {
      const parsed = GroupCreate.safeParse({ name: fields.name });
      if (!parsed.success) throw invalidInput(parsed.error);
      return write({ param: { id: org } }, (tx) =>
        inGerman(() => groupService.createGroup(tx, org, parsed.data).then(noResult)),
      );
    });
  });

  postWrite(app, '/groups/:id/rename', groupOps.updateGroup, async (c, write) => {
    const id = c.req.param('id').toLowerCase();
    const fields = await formFields(c);
    return writeAndRedirect(c, `/portal/groups/${id}`, 'Gruppe umbenannt.', () => {
      const parsed = GroupPatch.safeParse({ name: fields.name });
      if (!parsed.success) throw invalidInput(parsed.error);
      return write({ param: { id } }, (tx) =>
        inGerman(() => groupService.updateGroup(tx, id, parsed.data).then(noResult)),
      );
    });
  });

  postWrite(app, '/groups/:id/delete', groupOps.deleteGroup, async (c, write) => {
    const id = c.req.param('id').toLowerCase();
    return writeAndRedirect(c, '/portal/groups', 'Gruppe gelöscht.', () =>
      write({ param: { id } }, (tx, caller) =>
        groupService.deleteGroup(tx, id, caller, recordEffectiveChange).then(noResult),
      ),
    );
  });

  /** A device of the session's organization by serial (exact) or id; else a message, not a 404 page. */
  async function deviceOf(db: Db, organizationId: string, given: string): Promise<string> {
    const value = given.trim();
    const id = await findDeviceBySerialOrId(db, organizationId, value);
    if (id === null) throw new ApiError('invalid_request', `Kein Gerät „${value.slice(0, 80)}“ in Ihrer Organisation.`);
    return id;
  }

  // The device is named by serial or id and found within the session's organization, inside the write.
  postWrite(app, '/groups/:id/members', groupOps.addGroupMember, async (c, write) => {
    const id = c.req.param('id').toLowerCase();
    const org = c.get('session').organizationId!;
    const fields = await formFields(c);
    return writeAndRedirect(c, `/portal/groups/${id}`, 'Gerät zur Gruppe hinzugefügt.', () =>
      write({ param: { id } }, async (tx, caller) =>
        inGerman(async () => {
          const deviceId = await deviceOf(tx, org, fields.device ?? '');
          return noResult(await groupService.changeMember(tx, 'add', id, deviceId, caller, recordEffectiveChange));
        }),
      ),
    );
  });

  postWrite(app, '/groups/:id/members/:device/remove', groupOps.removeGroupMember, async (c, write) => {
    const id = c.req.param('id').toLowerCase();
    const device = c.req.param('device').toLowerCase();
    return writeAndRedirect(c, `/portal/groups/${id}`, 'Gerät aus der Gruppe entfernt.', () =>
      write({ param: { id, device_id: device } }, (tx, caller) =>
        groupService.changeMember(tx, 'remove', id, device, caller, recordEffectiveChange).then(noResult),
      ),
    );
  });

  return app;
}
