/**
 * The portal's organization pages (CONTRACT §21 with §9, §12, §13, §16): org units, groups,
 * API keys and webhooks changed through forms. For each write: the change and its audit
 * row with the session's key as actor; without the CSRF token, or as a viewer, 403 and
 * nothing changed; a refusal of the domain shown as a German message; another
 * organization's id 404. A new key or signing secret is shown once and on no later page.
 */
import { describe, expect, it } from 'vitest';
import { createApiKey } from '../support/access.ts';
import { ADMIN_TOKEN, useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { insertDevice, insertOrgUnit, TEMPLATE_IDS } from '../support/devices.ts';
import { PortalClient } from '../support/portal_client.ts';

const ctx = useTestApp();

/** A browser-like client (as in portal.test.ts): keeps cookies, sends forms, does not follow redirects. */
class Browser extends PortalClient {
  constructor() {
    super(ctx.app, `10.1.0.${Math.floor(Math.random() * 250) + 1}`);
  }

  /** Posts a form with the CSRF token of `page` (a page the session can open). */
  async post(path: string, form: Record<string, string> = {}, page = '/portal/devices') {
    return this.request('POST', path, { _csrf: Browser.csrf((await this.get(page)).text), ...form });
  }

  /** The page a POST redirected to, with its flash message. */
  async follow(res: { location: string | null }) {
    return this.get(res.location!);
  }

  static async signedIn(key: string) {
    const b = new Browser();
    expect((await b.signIn(key)).status).toBe(303);
    return b;
  }
}

async function fleet() {
  const org = await createOrganization(ctx);
  const unit = await insertOrgUnit(ctx.sql, org.id, 'Schule');
  const device = await insertDevice(ctx.sql, {
    organizationId: org.id,
    oeId: unit,
    serial: `OP-${crypto.randomUUID().slice(0, 6)}`,
    templateId: TEMPLATE_IDS.debianStandard,
  });
  const adminKey = await createApiKey(ctx, org.id, 'admin', { name: 'Portal-Admin' });
  const viewerKey = await createApiKey(ctx, org.id, 'viewer', { name: 'Portal-Leser' });
  const admin = await Browser.signedIn(adminKey.key);
  const viewer = await Browser.signedIn(viewerKey.key);
  return { org, unit, device, adminKey, admin, viewer };
}

/** Everything of the organization a write could touch, to compare before and after. */
async function snapshot(organizationId: string) {
  return ctx.sql`
    select
      (select json_agg(u order by u.id) from (select id, name, parent_id from org_units where organization_id = ${organizationId}) u) as units,
      (select json_agg(g order by g.id) from (select id, name from groups where organization_id = ${organizationId}) g) as groups,
      (select count(*)::int from group_members where organization_id = ${organizationId}) as members,
      (select json_agg(k order by k.id) from (select id, revoked_at from api_keys where organization_id = ${organizationId}) k) as keys,
      (select count(*)::int from webhooks where organization_id = ${organizationId}) as webhooks,
      (select count(*)::int from webhook_events where organization_id = ${organizationId}) as webhook_events,
      (select count(*)::int from audit_events where organization_id = ${organizationId}) as audits`;
}

async function lastAudit(organizationId: string) {
  const [row] = await ctx.sql`select action, actor, target_id, details from audit_events
    where organization_id = ${organizationId} order by seq desc limit 1`;
  return row!;
}

/** Each write the pages offer, given a fleet: its path, form, audit action and success check. */
type Write = {
  name: string;
  path: (f: Awaited<ReturnType<typeof fleet>>) => Promise<string> | string;
  form: (f: Awaited<ReturnType<typeof fleet>>) => Record<string, string>;
  audit: string;
  check: (f: Awaited<ReturnType<typeof fleet>>) => Promise<void>;
};

const one = async <T>(q: Promise<T[]>) => (await q)[0];

async function newGroup(organizationId: string, name = 'Labor') {
  const [g] =
    await ctx.sql`insert into groups (organization_id, name) values (${organizationId}, ${name}) returning id`;
  return g!.id as string;
}

const writes: Write[] = [
  {
    name: 'create an org unit under another',
    path: () => '/portal/org-units',
    form: (f) => ({ name: 'Klasse 5a', parent_id: f.unit }),
    audit: 'org_unit.create',
    check: async (f) => {
      expect(
        await one(ctx.sql`select parent_id from org_units where name = 'Klasse 5a' and organization_id = ${f.org.id}`),
      ).toEqual({ parent_id: f.unit });
    },
  },
  {
    name: 'rename an org unit',
    path: (f) => `/portal/org-units/${f.unit}/rename`,
    form: () => ({ name: 'Gymnasium' }),
    audit: 'org_unit.update',
    check: async (f) => {
      expect(await one(ctx.sql`select name from org_units where id = ${f.unit}`)).toEqual({ name: 'Gymnasium' });
    },
  },
  {
    name: 'move an org unit',
    path: async (f) => {
      const other = await insertOrgUnit(ctx.sql, f.org.id, 'Verwaltung');
      return `/portal/org-units/${other}/move`;
    },
    form: (f) => ({ parent_id: f.unit }),
    audit: 'org_unit.update',
    check: async (f) => {
      expect(
        await one(ctx.sql`select parent_id from org_units where name = 'Verwaltung' and organization_id = ${f.org.id}`),
      ).toEqual({ parent_id: f.unit });
    },
  },
  {
    name: 'delete an empty org unit',
    path: async (f) => `/portal/org-units/${await insertOrgUnit(ctx.sql, f.org.id, 'Leer')}/delete`,
    form: () => ({}),
    audit: 'org_unit.delete',
    check: async (f) => {
      expect(await ctx.sql`select 1 from org_units where name = 'Leer' and organization_id = ${f.org.id}`).toHaveLength(
        0,
      );
    },
  },
  {
    name: 'create a group',
    path: () => '/portal/groups',
    form: () => ({ name: 'Informatik' }),
    audit: 'group.create',
    check: async (f) => {
      expect(
        await ctx.sql`select 1 from groups where name = 'Informatik' and organization_id = ${f.org.id}`,
      ).toHaveLength(1);
    },
  },
  {
    name: 'rename a group',
    path: async (f) => `/portal/groups/${await newGroup(f.org.id)}/rename`,
    form: () => ({ name: 'Physik' }),
    audit: 'group.update',
    check: async (f) => {
      expect(await ctx.sql`select name from groups where organization_id = ${f.org.id}`).toEqual([{ name: 'Physik' }]);
    },
  },
  {
    name: 'delete a group',
    path: async (f) => `/portal/groups/${await newGroup(f.org.id)}/delete`,
    form: () => ({}),
    audit: 'group.delete',
    check: async (f) => {
      expect(await ctx.sql`select 1 from groups where organization_id = ${f.org.id}`).toHaveLength(0);
    },
  },
  {
    name: 'add a device to a group by serial',
    path: async (f) => `/portal/groups/${await newGroup(f.org.id)}/members`,
    form: (f) => ({ device: f.device.serial }),
    audit: 'group.add_device',
    check: async (f) => {
      expect(await ctx.sql`select device_id from group_members where organization_id = ${f.org.id}`).toEqual([
        { device_id: f.device.id },
      ]);
    },
  },
  {
    name: 'remove a device from a group',
    path: async (f) => {
      const g = await newGroup(f.org.id);
      await ctx.sql`insert into group_members (group_id, device_id, organization_id) values (${g}, ${f.device.id}, ${f.org.id})`;
      return `/portal/groups/${g}/members/${f.device.id}/remove`;
    },
    form: () => ({}),
    audit: 'group.remove_device',
    check: async (f) => {
      expect(await ctx.sql`select 1 from group_members where organization_id = ${f.org.id}`).toHaveLength(0);
    },
  },
  {
    name: 'revoke an API key',
    path: async (f) =>
      `/portal/api-keys/${(await createApiKey(ctx, f.org.id, 'viewer', { name: 'Skript' })).id}/revoke`,
    form: () => ({}),
    audit: 'api_key.revoke',
    check: async (f) => {
      expect(
        await one(
          ctx.sql`select revoked_at is not null as r from api_keys where name = 'Skript' and organization_id = ${f.org.id}`,
        ),
      ).toEqual({ r: true });
    },
  },
  {
    name: 'delete a webhook',
    path: async (f) => {
      const res = await ctx.request('POST', `/api/v1/organizations/${f.org.id}/webhooks`, {
        body: { url: 'https://hooks.example.com/a', events: ['device.activated'] },
      });
      return `/portal/webhooks/${res.body.id}/delete`;
    },
    form: () => ({}),
    audit: 'webhook.delete',
    check: async (f) => {
      expect(await ctx.sql`select 1 from webhooks where organization_id = ${f.org.id}`).toHaveLength(0);
    },
  },
  {
    name: 'send a webhook a test event',
    path: async (f) => {
      const res = await ctx.request('POST', `/api/v1/organizations/${f.org.id}/webhooks`, {
        body: { url: 'https://hooks.example.com/t', events: ['iso_build.failed'] },
      });
      return `/portal/webhooks/${res.body.id}/test`;
    },
    form: () => ({}),
    audit: 'webhook.test',
    check: async (f) => {
      const delivered = await ctx.sql`
        select d.status from webhook_deliveries d join webhooks w on w.id = d.webhook_id
        where w.organization_id = ${f.org.id} and d.event = 'webhook.test'`;
      expect(delivered).toEqual([{ status: 'pending' }]);
    },
  },
];

describe.each(writes)('$name', (w) => {
  it('changes the row and records the audit event with the session key as actor', async () => {
    const f = await fleet();
    const res = await f.admin.post(await w.path(f), w.form(f));
    expect(res.status).toBe(303);
    expect((await f.admin.follow(res)).text).toMatch(/class="flash"/);
    await w.check(f);
    expect(await lastAudit(f.org.id)).toMatchObject({
      action: w.audit,
      actor: { type: 'api_key', api_key_id: f.adminKey.id, name: 'Portal-Admin' },
    });
  });

  it('without the CSRF token: 403 and nothing changed', async () => {
    const f = await fleet();
    const path = await w.path(f);
    const before = await snapshot(f.org.id);
    const res = await f.admin.request('POST', path, w.form(f));
    expect(res.status).toBe(403);
    expect(await snapshot(f.org.id)).toEqual(before);
  });

  it('as a viewer: 403 and nothing changed', async () => {
    const f = await fleet();
    const path = await w.path(f);
    const before = await snapshot(f.org.id);
    const res = await f.viewer.post(path, w.form(f));
    expect(res.status).toBe(403);
    expect(await snapshot(f.org.id)).toEqual(before);
  });

  it("on another organization's id: 404 and nothing changed", async () => {
    const f = await fleet();
    const path = await w.path(f);
    if (!/[0-9a-f-]{36}/.test(path)) return; // a create names no id but the session's organization
    const other = await fleet();
    const before = await snapshot(f.org.id);
    const res = await other.admin.post(path, w.form(f));
    expect(res.status).toBe(404);
    expect(await snapshot(f.org.id)).toEqual(before);
  });
});

describe('refusals of the domain are shown in German and change nothing', () => {
  it('deleting an org unit that still has a device', async () => {
    const f = await fleet();
    const before = await snapshot(f.org.id);
    const res = await f.admin.post(`/portal/org-units/${f.unit}/delete`);
    expect(res.status).toBe(303);
    const page = await f.admin.follow(res);
    expect(page.text).toContain('class="flash error"');
    expect(page.text).toContain('Die Organisationseinheit ist nicht leer');
    expect(await snapshot(f.org.id)).toEqual(before);
  });

  it('moving an org unit under its own child', async () => {
    const f = await fleet();
    const child = await insertOrgUnit(ctx.sql, f.org.id, 'Klasse', f.unit);
    const before = await snapshot(f.org.id);
    const page = await f.admin.follow(await f.admin.post(`/portal/org-units/${f.unit}/move`, { parent_id: child }));
    expect(page.text).toContain('nicht unter sich selbst oder eine ihrer Unter-Einheiten');
    expect(await snapshot(f.org.id)).toEqual(before);
  });

  it('renaming or deleting the protected unit "Neue Geräte"', async () => {
    const f = await fleet();
    const [neu] = await ctx.sql`select id from org_units where organization_id = ${f.org.id} and protected`;
    const before = await snapshot(f.org.id);
    for (const [verb, form] of [
      ['rename', { name: 'Anders' }],
      ['delete', {}],
    ] as const) {
      const page = await f.admin.follow(await f.admin.post(`/portal/org-units/${neu!.id}/${verb}`, form));
      expect(page.text).toContain('ist geschützt');
    }
    expect(await snapshot(f.org.id)).toEqual(before);
  });

  it('a group or org unit name that is already taken, created or renamed onto', async () => {
    const f = await fleet();
    await newGroup(f.org.id, 'GIS-Arbeitsplätze');
    const other = await newGroup(f.org.id, 'CAD');
    const sibling = await insertOrgUnit(ctx.sql, f.org.id, 'Verwaltung');
    const before = await snapshot(f.org.id);
    for (const [path, form] of [
      ['/portal/groups', { name: 'gis-arbeitsplätze' }],
      [`/portal/groups/${other}/rename`, { name: 'GIS-ARBEITSPLÄTZE' }],
      ['/portal/org-units', { name: 'schule', parent_id: '' }],
      [`/portal/org-units/${sibling}/rename`, { name: 'Schule' }],
    ] as const) {
      const res = await f.admin.post(path, form);
      expect(res.status, path).toBe(303);
      const page = await f.admin.follow(res);
      expect(page.status).toBe(200);
      expect(page.text).toContain('class="flash error"');
      expect(page.text).toContain('Dieser Name ist hier schon vergeben');
    }
    expect(await snapshot(f.org.id)).toEqual(before);
  });

  it("adding an unknown serial or another organization's device to a group", async () => {
    const f = await fleet();
    const other = await fleet();
    const g = await newGroup(f.org.id);
    const before = await snapshot(f.org.id);
    for (const device of ['GIBT-ES-NICHT', other.device.serial, other.device.id]) {
      const page = await f.admin.follow(await f.admin.post(`/portal/groups/${g}/members`, { device }));
      expect(page.text).toContain('in Ihrer Organisation');
    }
    expect(await snapshot(f.org.id)).toEqual(before);
  });

  it('an empty name and a webhook URL the policy refuses', async () => {
    const f = await fleet();
    const before = await snapshot(f.org.id);
    const page = await f.admin.follow(await f.admin.post('/portal/groups', { name: '' }));
    expect(page.text).toContain('Ungültige Eingabe');
    const res = await f.admin.post('/portal/webhooks', {
      url: 'http://hooks.example.com/x',
      'event:device.activated': 'on',
    });
    expect(res.status).toBe(400);
    expect(res.text).toContain('class="flash error"');
    expect(await snapshot(f.org.id)).toEqual(before);
  });
});

describe('a new key or signing secret is shown once', () => {
  it('API key: on the answer to the POST only (no-store), never in a cookie, a URL or a later page; it works', async () => {
    const f = await fleet();
    const res = await f.admin.post('/portal/api-keys', {
      name: 'Inventar-Skript',
      role: 'viewer',
      expires_on: '2099-12-31',
    });
    expect(res.status).toBe(201);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('location')).toBeNull();
    const key = /id="key" readonly="" value="(fpk_[^"]+)"|id="key" readonly value="(fpk_[^"]+)"/.exec(res.text);
    const shown = (key?.[1] ?? key?.[2])!;
    expect(shown).toMatch(/^fpk_/);
    expect(res.headers.getSetCookie().join('\n')).not.toContain(shown);
    const [row] = await ctx.sql`select id, role, expires_at from api_keys where name = 'Inventar-Skript'`;
    expect(row).toMatchObject({ role: 'viewer', expires_at: new Date('2099-12-31T23:59:59Z') });
    expect(await lastAudit(f.org.id)).toMatchObject({
      action: 'api_key.create',
      target_id: row!.id,
      actor: { type: 'api_key', api_key_id: f.adminKey.id },
    });
    expect(JSON.stringify(await lastAudit(f.org.id))).not.toContain(shown);
    for (const path of ['/portal/api-keys', '/portal/audit', '/portal/devices']) {
      expect((await f.admin.get(path)).text).not.toContain(shown);
    }
    expect((await ctx.request('GET', `/api/v1/organizations/${f.org.id}`, { token: shown })).status).toBe(200);
  });

  it('webhook: the secret on the answer to the POST only; the events chosen are stored', async () => {
    const f = await fleet();
    const res = await f.admin.post('/portal/webhooks', {
      url: 'https://hooks.example.com/fleet',
      'event:device.activated': 'on',
      'event:iso_build.failed': 'on',
    });
    expect(res.status).toBe(201);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const secret = /(whsec_[A-Za-z0-9_-]+)/.exec(res.text)![1]!;
    expect(res.headers.getSetCookie().join('\n')).not.toContain(secret);
    const [row] = await ctx.sql`select id, events from webhooks where organization_id = ${f.org.id}`;
    expect(row!.events).toEqual(['device.activated', 'iso_build.failed']);
    expect(await lastAudit(f.org.id)).toMatchObject({ action: 'webhook.create', target_id: row!.id });
    expect(JSON.stringify(await lastAudit(f.org.id))).not.toContain(secret);
    for (const path of ['/portal/webhooks', '/portal/audit', `/portal/webhooks/${row!.id}/delete`]) {
      expect((await f.admin.get(path)).text).not.toContain(secret);
    }
  });

  it('a viewer creating a key or a webhook: 403 and nothing created', async () => {
    const f = await fleet();
    const before = await snapshot(f.org.id);
    expect((await f.viewer.post('/portal/api-keys', { name: 'x', role: 'admin' })).status).toBe(403);
    expect(
      (await f.viewer.post('/portal/webhooks', { url: 'https://h.example.com/', 'event:device.activated': 'on' }))
        .status,
    ).toBe(403);
    expect(await snapshot(f.org.id)).toEqual(before);
  });
});

describe('what a viewer sees', () => {
  it('org units and groups without write controls; API keys and webhooks refused', async () => {
    const f = await fleet();
    await newGroup(f.org.id);
    for (const path of ['/portal/org-units', '/portal/groups']) {
      const page = await f.viewer.get(path);
      expect(page.status).toBe(200);
      expect(page.text).not.toMatch(/<form method="post" action="\/portal\/(org-units|groups)/);
      expect(page.text).not.toContain('Bearbeiten');
    }
    const admin = await f.admin.get('/portal/org-units');
    expect(admin.text).toContain('action="/portal/org-units"');
    for (const path of ['/portal/api-keys', '/portal/webhooks']) {
      expect((await f.viewer.get(path)).status).toBe(403);
    }
  });
});

describe('the operator', () => {
  it("is held to the organization it chose: another organization's group is 404; its own writes are audited as operator", async () => {
    const f = await fleet();
    const other = await fleet();
    const foreign = await newGroup(other.org.id, 'Fremd');
    const op = await Browser.signedIn(ADMIN_TOKEN);
    expect((await op.post('/portal/organization', { organization_id: f.org.id }, '/portal/organization')).status).toBe(
      303,
    );
    const before = await snapshot(other.org.id);
    expect((await op.post(`/portal/groups/${foreign}/delete`)).status).toBe(404);
    expect(await snapshot(other.org.id)).toEqual(before);
    const own = await newGroup(f.org.id, 'Eigen');
    expect((await op.post(`/portal/groups/${own.toUpperCase()}/rename`, { name: 'Eigene' })).status).toBe(303);
    expect(await lastAudit(f.org.id)).toMatchObject({
      action: 'group.update',
      target_id: own,
      actor: { type: 'operator' },
    });
  });
});
