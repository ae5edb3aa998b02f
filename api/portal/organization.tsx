/**
 * The organization's structure and administration, read-only in this first version of the
 * portal: org units as a tree with their devices and overrides, groups with members and
 * overrides, API keys, the audit log and webhooks. Changes to these are made through the
 * API for now (the pages say so); the device page selects at the device's org unit.
 */
import { Hono } from 'hono';
import { listApiKeys } from '../api_keys/repo.ts';
import { listAuditEvents } from '../audit/repo.ts';
import type { Db } from '../db/client.ts';
import { listGroups } from '../groups/repo.ts';
import { listOrgUnits, type OrgUnitRow } from '../org_units/repo.ts';
import { listWebhooks } from '../webhooks/repo.ts';
import { type PortalEnv, portalRead } from './access.ts';
import { formatTime, render, takeFlash } from './http.tsx';
import { Layout } from './layout.tsx';

const state = (s: string) => (s === 'present' ? 'vorhanden' : 'nicht vorhanden');

/** Devices (not archived) and overrides per org unit or group, in two queries. */
async function countsAndOverrides(db: Db, organizationId: string) {
  const [unitDevices, groupMembers, unitOverrides, groupOverrides] = await Promise.all([
    db<{ id: string; n: number }[]>`
      select oe_id as id, count(*)::int as n from devices
      where organization_id = ${organizationId} and archived_at is null group by oe_id`,
    db<{ id: string; n: number }[]>`
      select gm.group_id as id, count(*)::int as n from group_members gm
      where gm.organization_id = ${organizationId} group by gm.group_id`,
    db<{ id: string; merkmal: string; state: string }[]>`
      select o.org_unit_id as id, o.merkmal, o.state from org_unit_merkmale o
      join org_units u on u.id = o.org_unit_id where u.organization_id = ${organizationId} order by o.merkmal`,
    db<{ id: string; merkmal: string; state: string }[]>`
      select o.group_id as id, o.merkmal, o.state from group_merkmale o
      join groups g on g.id = o.group_id where g.organization_id = ${organizationId} order by o.merkmal`,
  ]);
  const overrides = (rows: typeof unitOverrides) => {
    const map = new Map<string, string[]>();
    for (const r of rows) map.set(r.id, [...(map.get(r.id) ?? []), `${r.merkmal}: ${state(r.state)}`]);
    return map;
  };
  return {
    unitDevices: new Map(unitDevices.map((r) => [r.id, r.n])),
    groupMembers: new Map(groupMembers.map((r) => [r.id, r.n])),
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

const apiNote = (what: string) => (
  <p class="muted">
    {what} ändern Sie derzeit über die API (siehe <a href="/api/v1/docs">API-Dokumentation</a>).
  </p>
);

export function organizationRoutes() {
  const app = new Hono<PortalEnv>();

  app.get('/org-units', async (c) => {
    const session = c.get('session');
    const org = session.organizationId!;
    const db = await portalRead(c, 'org_viewer', [['organization', org]]);
    const [units, extra] = await Promise.all([listOrgUnits(db, org, null, 10_000), countsAndOverrides(db, org)]);
    return render(
      c,
      <Layout title="Organisationseinheiten" session={session} flash={takeFlash(c)}>
        {apiNote('Anlegen, Umbenennen, Verschieben und Löschen von Organisationseinheiten')}
        <table>
          <thead>
            <tr>
              <th scope="col">Organisationseinheit</th>
              <th scope="col">Geräte</th>
              <th scope="col">Vorgaben</th>
            </tr>
          </thead>
          <tbody>
            {treeOrder(units).map(([u, depth]) => (
              <tr>
                <td style={`padding-left: ${0.5 + depth * 1.5}rem`}>
                  {u.name}
                  {u.protected ? ' (Standard)' : ''}
                </td>
                <td>
                  <a href={`/portal/devices?oe_id=${u.id}`}>{extra.unitDevices.get(u.id) ?? 0}</a>
                </td>
                <td>{(extra.unitOverrides.get(u.id) ?? []).join(', ') || '–'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </Layout>,
    );
  });

  app.get('/groups', async (c) => {
    const session = c.get('session');
    const org = session.organizationId!;
    const db = await portalRead(c, 'org_viewer', [['organization', org]]);
    const [groups, extra] = await Promise.all([listGroups(db, org, null, 10_000), countsAndOverrides(db, org)]);
    return render(
      c,
      <Layout title="Gruppen" session={session} flash={takeFlash(c)}>
        {apiNote('Gruppen und ihre Mitglieder')}
        {groups.length === 0 ? (
          <p class="empty">Noch keine Gruppen: legen Sie eine über die API an (POST /organizations/…/groups).</p>
        ) : (
          <table>
            <thead>
              <tr>
                <th scope="col">Gruppe</th>
                <th scope="col">Mitglieder</th>
                <th scope="col">Vorgaben</th>
              </tr>
            </thead>
            <tbody>
              {groups.slice(0, 10_000).map((g) => (
                <tr>
                  <td>{g.name}</td>
                  <td>
                    <a href={`/portal/devices?group_id=${g.id}`}>{extra.groupMembers.get(g.id) ?? 0}</a>
                  </td>
                  <td>{(extra.groupOverrides.get(g.id) ?? []).join(', ') || '–'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Layout>,
    );
  });

  app.get('/api-keys', async (c) => {
    const session = c.get('session');
    const org = session.organizationId!;
    const db = await portalRead(c, 'org_admin', [['organization', org]]);
    const keys = await listApiKeys(db, org, null, 500);
    return render(
      c,
      <Layout title="API-Schlüssel" session={session} flash={takeFlash(c)}>
        {apiNote('Erstellen und Widerrufen von Schlüsseln')}
        <table>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Rolle</th>
              <th scope="col">Präfix</th>
              <th scope="col">Zuletzt benutzt</th>
              <th scope="col">Läuft ab</th>
              <th scope="col">Widerrufen</th>
            </tr>
          </thead>
          <tbody>
            {keys.slice(0, 500).map((k) => (
              <tr>
                <td>{k.name}</td>
                <td>{k.role === 'admin' ? 'Admin' : 'Leser'}</td>
                <td>
                  <code>{k.prefix}</code>
                </td>
                <td>{formatTime(k.last_used_at)}</td>
                <td>{formatTime(k.expires_at)}</td>
                <td>{formatTime(k.revoked_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </Layout>,
    );
  });

  app.get('/audit', async (c) => {
    const session = c.get('session');
    const org = session.organizationId!;
    const db = await portalRead(c, 'org_admin', [['organization', org]]);
    const events = await listAuditEvents(db, { organizationId: org, beforeSeq: null, limit: 100 });
    return render(
      c,
      <Layout title="Audit-Log" session={session} flash={takeFlash(c)}>
        <p class="muted">Die letzten 100 Änderungen, neueste zuerst.</p>
        <table>
          <thead>
            <tr>
              <th scope="col">Zeit</th>
              <th scope="col">Wer</th>
              <th scope="col">Aktion</th>
              <th scope="col">Ziel</th>
            </tr>
          </thead>
          <tbody>
            {events.slice(0, 100).map((e) => (
              <tr>
                <td>{formatTime(e.created_at)}</td>
                <td>
                  {e.actor.type === 'api_key' ? e.actor.name : e.actor.type === 'operator' ? 'Betreiber' : 'System'}
                </td>
                <td>
                  <code>{e.action}</code>
                </td>
                <td>
                  {e.target_type} {e.target_id ?? ''}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </Layout>,
    );
  });

  app.get('/webhooks', async (c) => {
    const session = c.get('session');
    const org = session.organizationId!;
    const db = await portalRead(c, 'org_admin', [['organization', org]]);
    const hooks = await listWebhooks(db, org, null, 500);
    return render(
      c,
      <Layout title="Webhooks" session={session} flash={takeFlash(c)}>
        {apiNote('Webhooks')}
        {hooks.length === 0 ? (
          <p class="empty">Noch keine Webhooks.</p>
        ) : (
          <table>
            <thead>
              <tr>
                <th scope="col">URL</th>
                <th scope="col">Ereignisse</th>
                <th scope="col">Status</th>
              </tr>
            </thead>
            <tbody>
              {hooks.slice(0, 500).map((h) => (
                <tr>
                  <td>{h.url}</td>
                  <td>{h.events.join(', ')}</td>
                  <td>{h.disabled_at ? `deaktiviert seit ${formatTime(h.disabled_at)}` : 'aktiv'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Layout>,
    );
  });
  return app;
}
