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
import { formatNumber, t } from './i18n/index.ts';
import { stateLabel } from './labels.ts';
import { CsrfField, Layout } from './layout.tsx';
import { portalWorded } from './refusals.ts';
import type { PortalSession } from './session.ts';
import { subtreeOf, unitChoices, unitPaths } from './org_unit_paths.ts';
import { loadScopeCatalog, ScopeCatalog } from './scope_catalog.tsx';

/**
 * Runs a write and rethrows a refusal of the domain in the portal's words (the catalog's
 * `refusals`, by the API's error code); other refusals keep the API's own message.
 */
async function inPortalWords<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    const { refusals } = t().organization;
    const text = Object.hasOwn(refusals, err.code) ? refusals[err.code as keyof typeof refusals] : undefined;
    if (text) throw portalWorded(new ApiError(err.code, text, { status: err.status }));
    throw err;
  }
}

/** A service's answer as portalWrite takes it: the audit entry, no result to show. */
const noResult = ({ audit }: { audit: AuditEntry }) => ({ audit, result: null });

/** A form's parent field: '' is the top level. */
const parentOf = (value: string | undefined) => (value ? value : null);

/** Devices (not archived: directly and in the subtree) and overrides per org unit, members and overrides per group. */
async function countsAndOverrides(db: Db, organizationId: string) {
  const [unitDevices, groupMembers, unitOverrides, groupOverrides] = await Promise.all([
    orgUnits.countDevicesOfUnits(db, organizationId, null),
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

/** The org unit select of a form: the top level, then each unit by its path, leaving out `without` and every unit below it. */
function ParentSelect(props: { id: string; units: OrgUnitRow[]; selected: string | null; without?: string }) {
  const excluded = props.without === undefined ? new Set<string>() : subtreeOf(props.units, props.without);
  return (
    <select id={props.id} name="parent_id">
      <option value="" selected={props.selected === null}>
        {t().organization.units.topLevel}
      </option>
      {unitChoices(props.units)
        .filter(({ unit }) => !excluded.has(unit.id))
        .map(({ unit, path }) => (
          <option value={unit.id} selected={unit.id === props.selected}>
            {path}
          </option>
        ))}
    </select>
  );
}

/** The rename form of a unit's or a group's page: posts to `{base}/rename`. */
function RenameForm(props: { base: string; session: PortalSession; name: string }) {
  const { organization: text } = t();
  return (
    <form method="post" action={`${props.base}/rename`}>
      <CsrfField session={props.session} />
      <h2>{text.rename}</h2>
      <label for="name">{text.newName}</label>
      <input id="name" name="name" required maxlength={200} value={props.name} />
      <p>
        <button type="submit">{text.rename}</button>
      </p>
    </form>
  );
}

/** The delete form of a unit's or a group's page, with what deleting does: posts to `{base}/delete`. */
function DeleteForm(props: { base: string; session: PortalSession; hint: string }) {
  const { organization: text } = t();
  return (
    <form method="post" action={`${props.base}/delete`}>
      <CsrfField session={props.session} />
      <h2>{text.delete}</h2>
      <p>{props.hint}</p>
      <button type="submit" class="danger">
        {text.deleteForGood}
      </button>
    </form>
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
    const { organization: text } = t();
    return render(
      c,
      <Layout title={text.units.title} session={session} flash={takeFlash(c)}>
        {write ? (
          <form method="post" action="/portal/org-units">
            <CsrfField session={session} />
            <h2>{text.units.new}</h2>
            <label for="name">{text.name}</label>
            <input id="name" name="name" required maxlength={200} />
            <label for="parent_id">{text.units.parent}</label>
            <ParentSelect id="parent_id" units={units} selected={null} />
            <p>
              <button type="submit">{text.create}</button>
            </p>
          </form>
        ) : null}
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">{text.units.unit}</th>
                <th scope="col">{text.units.devices}</th>
                <th scope="col">{text.units.devicesTotal}</th>
                <th scope="col">{text.overrides}</th>
                {write ? <th scope="col">{text.action}</th> : null}
              </tr>
            </thead>
            <tbody>
              {unitChoices(units).map(({ unit: u, depth }) => (
                <tr>
                  <td>
                    {/* Indented by empty boxes, not a style attribute: the policy allows no inline style. */}
                    {Array.from({ length: depth }, () => (
                      <span class="indent" />
                    ))}
                    <a href={`/portal/org-units/${u.id}`}>{u.name}</a>
                    {u.protected ? text.units.standard : ''}
                  </td>
                  <td>{extra.unitDevices.get(u.id)?.devices ?? 0}</td>
                  <td>
                    {/* The list's unit filter is the subtree: the total is what the link lists. */}
                    <a href={`/portal/devices?oe_id=${u.id}`}>{extra.unitDevices.get(u.id)?.devices_total ?? 0}</a>
                  </td>
                  <td>{(extra.unitOverrides.get(u.id) ?? []).join(', ') || '–'}</td>
                  {write ? <td>{u.protected ? '–' : <a href={`/portal/org-units/${u.id}`}>{text.edit}</a>}</td> : null}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </Layout>,
    );
  });

  app.get('/org-units/:id', async (c) => {
    const session = c.get('session');
    const id = c.req.param('id').toLowerCase();
    const db = await portalRead(c, orgUnitOps.getOrgUnit, { param: { id } });
    const unit = await orgUnits.requireOrgUnit(db, id);
    const [units, counts, catalog] = await Promise.all([
      orgUnits.listOrgUnits(db, unit.organization_id, null, 10_000),
      orgUnits.countDevicesOfUnits(db, unit.organization_id, [unit.id]),
      loadScopeCatalog(db, unit.organization_id, 'org-units', unit.id, c.get('deps').config.agentPollIntervalSeconds),
    ]);
    const write = canWrite(session);
    const { devices = 0, devices_total = 0 } = counts.get(unit.id) ?? {};
    const base = `/portal/org-units/${unit.id}`;
    const { organization: text } = t();
    return render(
      c,
      <Layout title={text.units.pageTitle(unit.name)} session={session} flash={takeFlash(c)}>
        <p>
          <a href="/portal/org-units">{text.units.back}</a>
        </p>
        <div class="table-wrap">
          <table>
            <tbody>
              <tr>
                <th scope="row">{text.name}</th>
                <td>{unit.name}</td>
              </tr>
              <tr>
                <th scope="row">{text.units.path}</th>
                <td data-field="path">{unitPaths(units).get(unit.id) ?? unit.name}</td>
              </tr>
              <tr>
                <th scope="row">{text.units.devices}</th>
                <td data-field="devices">{formatNumber(devices)}</td>
              </tr>
              <tr>
                <th scope="row">{text.units.devicesTotal}</th>
                <td data-field="devices_total">
                  {/* The list's unit filter is the subtree: the total is what the link lists. */}
                  <a href={`/portal/devices?oe_id=${unit.id}`}>{formatNumber(devices_total)}</a>
                </td>
              </tr>
            </tbody>
          </table>
        </div>
        <ScopeCatalog scope="org-units" id={unit.id} name={unit.name} catalog={catalog} controls={write} />
        {write && !unit.protected ? (
          <>
            <RenameForm base={base} session={session} name={unit.name} />
            <form method="post" action={`${base}/move`}>
              <CsrfField session={session} />
              <h2>{text.units.move}</h2>
              <label for="parent_id">{text.units.newParent}</label>
              <ParentSelect id="parent_id" units={units} selected={unit.parent_id} without={unit.id} />
              <p>
                <button type="submit">{text.units.move}</button>
              </p>
            </form>
            <DeleteForm base={base} session={session} hint={text.units.deleteHint} />
          </>
        ) : null}
      </Layout>,
    );
  });

  postWrite(app, '/org-units', orgUnitOps.createOrgUnit, async (c, write) => {
    const org = c.get('session').organizationId!;
    const fields = await formFields(c);
    return writeAndRedirect(c, '/portal/org-units', t().organization.units.created, () => {
      const parsed = OrgUnitCreate.safeParse({ name: fields.name, parent_id: parentOf(fields.parent_id) });
      if (!parsed.success) throw invalidInput(parsed.error);
      return write({ param: { id: org }, json: parsed.data }, async (tx) =>
        inPortalWords(() => createUnit(tx, org, parsed.data).then(noResult)),
      );
    });
  });

  /** Rename and move: the API's PATCH with one field each. */
  for (const [verb, field, success] of [
    ['rename', 'name', 'renamed'],
    ['move', 'parent_id', 'moved'],
  ] as const) {
    postWrite(app, `/org-units/:id/${verb}`, orgUnitOps.updateOrgUnit, async (c, write) => {
      const id = c.req.param('id').toLowerCase();
      const fields = await formFields(c);
      const value = field === 'name' ? fields.name : parentOf(fields.parent_id);
      return writeAndRedirect(c, `/portal/org-units/${id}`, t().organization.units[success], async () => {
        const parsed = OrgUnitPatch.safeParse({ [field]: value });
        if (!parsed.success) throw invalidInput(parsed.error);
        await write({ param: { id }, json: parsed.data }, async (tx, caller) =>
          inPortalWords(() => updateUnit(tx, id, parsed.data, caller, recordEffectiveChange).then(noResult)),
        );
      });
    });
  }

  postWrite(app, '/org-units/:id/delete', orgUnitOps.deleteOrgUnit, async (c, write) => {
    const id = c.req.param('id').toLowerCase();
    return writeAndRedirect(c, '/portal/org-units', t().organization.units.deleted, () =>
      write({ param: { id } }, async (tx, caller) =>
        inPortalWords(() => deleteUnit(tx, id, caller, recordEffectiveChange).then(noResult)),
      ),
    );
  });

  app.get('/groups', async (c) => {
    const session = c.get('session');
    const org = session.organizationId!;
    const db = await portalRead(c, groupOps.listGroups, { param: { id: org } });
    const [list, extra] = await Promise.all([groups.listGroups(db, org, null, 10_000), countsAndOverrides(db, org)]);
    const write = canWrite(session);
    const { organization: text } = t();
    return render(
      c,
      <Layout title={text.groups.title} session={session} flash={takeFlash(c)}>
        {write ? (
          <form method="post" action="/portal/groups">
            <CsrfField session={session} />
            <h2>{text.groups.new}</h2>
            <label for="name">{text.name}</label>
            <input id="name" name="name" required maxlength={200} />
            <p>
              <button type="submit">{text.create}</button>
            </p>
          </form>
        ) : null}
        {list.length === 0 ? (
          <p class="empty">
            {text.groups.none}
            {write ? text.groups.noneAdmin : text.groups.noneViewer}
          </p>
        ) : (
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">{text.groups.group}</th>
                  <th scope="col">{text.groups.members}</th>
                  <th scope="col">{text.overrides}</th>
                  {write ? <th scope="col">{text.action}</th> : null}
                </tr>
              </thead>
              <tbody>
                {list.slice(0, 10_000).map((g) => (
                  <tr>
                    <td>
                      <a href={`/portal/groups/${g.id}`}>{g.name}</a>
                    </td>
                    <td>
                      <a href={`/portal/devices?group_id=${g.id}`}>{extra.groupMembers.get(g.id) ?? 0}</a>
                    </td>
                    <td>{(extra.groupOverrides.get(g.id) ?? []).join(', ') || '–'}</td>
                    {write ? (
                      <td>
                        <a href={`/portal/groups/${g.id}`}>{text.edit}</a>
                      </td>
                    ) : null}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </Layout>,
    );
  });

  app.get('/groups/:id', async (c) => {
    const session = c.get('session');
    const id = c.req.param('id').toLowerCase();
    const db = await portalRead(c, groupOps.getGroup, { param: { id } });
    const group = await groups.requireGroup(db, id);
    const poll = c.get('deps').config.agentPollIntervalSeconds;
    const [members, memberCounts, catalog] = await Promise.all([
      groups.listGroupDevices(db, id, null, 1000, poll),
      groups.countMembersByGroup(db, group.organization_id),
      loadScopeCatalog(db, group.organization_id, 'groups', group.id, poll),
    ]);
    const write = canWrite(session);
    const base = `/portal/groups/${group.id}`;
    const { organization: text } = t();
    return render(
      c,
      <Layout title={text.groups.pageTitle(group.name)} session={session} flash={takeFlash(c)}>
        <p>
          <a href="/portal/groups">{text.groups.back}</a>
        </p>
        <div class="table-wrap">
          <table>
            <tbody>
              <tr>
                <th scope="row">{text.name}</th>
                <td>{group.name}</td>
              </tr>
              <tr>
                <th scope="row">{text.groups.devices}</th>
                <td data-field="devices">
                  <a href={`/portal/devices?group_id=${group.id}`}>{formatNumber(memberCounts.get(group.id) ?? 0)}</a>
                </td>
              </tr>
            </tbody>
          </table>
        </div>
        <ScopeCatalog scope="groups" id={group.id} name={group.name} catalog={catalog} controls={write} />
        <h2>{text.groups.members}</h2>
        {write ? (
          <form method="post" action={`${base}/members`}>
            <CsrfField session={session} />
            <label for="device">{text.groups.addDevice}</label>
            <input id="device" name="device" required maxlength={200} />
            <p>
              <button type="submit">{text.groups.add}</button>
            </p>
          </form>
        ) : null}
        {members.length === 0 ? (
          <p class="empty">{write ? text.groups.noMembers : text.groups.noMembersViewer}</p>
        ) : (
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">{text.groups.serial}</th>
                  <th scope="col">{text.groups.hostname}</th>
                  {write ? <th scope="col">{text.action}</th> : null}
                </tr>
              </thead>
              <tbody>
                {members.slice(0, 1000).map((d) => (
                  <tr>
                    <td>
                      <a href={`/portal/devices/${d.id}`}>{d.serial}</a>
                    </td>
                    <td>{d.hostname ?? '–'}</td>
                    {write ? (
                      <td>
                        <form method="post" action={`${base}/members/${d.id}/remove`}>
                          <CsrfField session={session} />
                          <button type="submit">{text.groups.remove}</button>
                        </form>
                      </td>
                    ) : null}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
        {write ? (
          <>
            <RenameForm base={base} session={session} name={group.name} />
            <DeleteForm base={base} session={session} hint={text.groups.deleteHint} />
          </>
        ) : null}
      </Layout>,
    );
  });

  postWrite(app, '/groups', groupOps.createGroup, async (c, write) => {
    const org = c.get('session').organizationId!;
    const fields = await formFields(c);
    return writeAndRedirect(c, '/portal/groups', t().organization.groups.created, () => {
      const parsed = GroupCreate.safeParse({ name: fields.name });
      if (!parsed.success) throw invalidInput(parsed.error);
      return write({ param: { id: org } }, (tx) =>
        inPortalWords(() => groupService.createGroup(tx, org, parsed.data).then(noResult)),
      );
    });
  });

  postWrite(app, '/groups/:id/rename', groupOps.updateGroup, async (c, write) => {
    const id = c.req.param('id').toLowerCase();
    const fields = await formFields(c);
    return writeAndRedirect(c, `/portal/groups/${id}`, t().organization.groups.renamed, () => {
      const parsed = GroupPatch.safeParse({ name: fields.name });
      if (!parsed.success) throw invalidInput(parsed.error);
      return write({ param: { id } }, (tx) =>
        inPortalWords(() => groupService.updateGroup(tx, id, parsed.data).then(noResult)),
      );
    });
  });

  postWrite(app, '/groups/:id/delete', groupOps.deleteGroup, async (c, write) => {
    const id = c.req.param('id').toLowerCase();
    return writeAndRedirect(c, '/portal/groups', t().organization.groups.deleted, () =>
      write({ param: { id } }, (tx, caller) =>
        groupService.deleteGroup(tx, id, caller, recordEffectiveChange).then(noResult),
      ),
    );
  });

  /** A device of the session's organization by serial (exact) or id; else a message, not a 404 page. */
  async function deviceOf(db: Db, organizationId: string, given: string): Promise<string> {
    const value = given.trim();
    const id = await findDeviceBySerialOrId(db, organizationId, value);
    if (id === null) throw new ApiError('invalid_request', t().organization.groups.noDevice(value.slice(0, 80)));
    return id;
  }

  // The device is named by serial or id and found within the session's organization, inside the write.
  postWrite(app, '/groups/:id/members', groupOps.addGroupMember, async (c, write) => {
    const id = c.req.param('id').toLowerCase();
    const org = c.get('session').organizationId!;
    const fields = await formFields(c);
    return writeAndRedirect(c, `/portal/groups/${id}`, t().organization.groups.added, () =>
      write({ param: { id } }, async (tx, caller) =>
        inPortalWords(async () => {
          const deviceId = await deviceOf(tx, org, fields.device ?? '');
          return noResult(await groupService.changeMember(tx, 'add', id, deviceId, caller, recordEffectiveChange));
        }),
      ),
    );
  });

  postWrite(app, '/groups/:id/members/:device/remove', groupOps.removeGroupMember, async (c, write) => {
    const id = c.req.param('id').toLowerCase();
    const device = c.req.param('device').toLowerCase();
    return writeAndRedirect(c, `/portal/groups/${id}`, t().organization.groups.removed, () =>
      write({ param: { id, device_id: device } }, (tx, caller) =>
        groupService.changeMember(tx, 'remove', id, device, caller, recordEffectiveChange).then(noResult),
      ),
    );
  });

  return app;
}
