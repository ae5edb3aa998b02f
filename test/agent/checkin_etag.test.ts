/**
 * Check-in at scale (CONTRACT §14, §26): the ETag of the desired state, 304 for an unchanged
 * one (the check-in still counts), every kind of change of the answer moving the tag, and
 * load shedding. Which devices' tags a change moves, across a fleet: checkin_etag_fleet.test.ts.
 */
import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { resolveDevice, TEMPLATES } from '../support/activation.ts';
import { request, testApp, testConfig, useTestApp } from '../support/app.ts';
import {
  bootstrapAgent,
  type EnrolledAgent,
  enrollAgent,
  expectShed,
  lastCheckinOf,
  unknownSecret,
  waitForLockWaiter,
} from '../support/agent.ts';

const ctx = useTestApp();

function checkin(secret: string, headers: Record<string, string> = {}, body?: unknown) {
  return ctx.request('POST', '/api/v1/agent/checkin', { token: secret, headers, body });
}

async function etagOf(secret: string): Promise<string> {
  const res = await checkin(secret);
  expect(res.status).toBe(200);
  const etag = res.headers.get('etag');
  expect(etag).toMatch(/^"[0-9a-f]+"$/);
  return etag!;
}

async function lastCheckin(deviceId: string): Promise<number> {
  return (await lastCheckinOf(ctx, deviceId))!.getTime();
}

const ok = <T extends { status: number; body: any }>(res: T, status = 200): T => {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  return res;
};

describe('the ETag of the desired state', () => {
  it('stays while nothing changes; If-None-Match then gets 304 without a body, and the check-in still counts', async () => {
    const agent = await enrollAgent(ctx);
    const etag = await etagOf(agent.secret);
    expect(await etagOf(agent.secret)).toBe(etag);
    const before = await lastCheckin(agent.device_id);
    const res = await checkin(agent.secret, { 'if-none-match': etag }, { hardware: { cpu: 'i9' } });
    expect(res.status).toBe(304);
    expect(res.body).toBe('');
    expect(res.headers.get('etag')).toBe(etag);
    expect(await lastCheckin(agent.device_id)).toBeGreaterThan(before);
    const [hw] = await ctx.sql`select hardware from device_hardware where device_id = ${agent.device_id}`;
    expect(hw!.hardware).toEqual({ cpu: 'i9' });
  });

  it.each([
    ['the tag itself', (e: string) => e],
    ['a list holding it', (e: string) => `"nope", ${e}`],
    ['its weak form', (e: string) => `W/${e}`],
    ['*', () => '*'],
  ])('answers 304 to If-None-Match with %s, and 200 to another tag', async (_case, header) => {
    const agent = await enrollAgent(ctx);
    const etag = await etagOf(agent.secret);
    expect((await checkin(agent.secret, { 'if-none-match': header(etag) })).status).toBe(304);
    const other = await checkin(agent.secret, { 'if-none-match': '"0"' });
    expect(other.status).toBe(200);
    expect(other.body.auftraege.length).toBeGreaterThan(0);
  });

  it('does not let If-None-Match past the secret: an unknown secret is 401, a deprovisioned device 403', async () => {
    expect((await checkin(unknownSecret(), { 'if-none-match': '*' })).status).toBe(401);
    const agent = await enrollAgent(ctx);
    ok(await ctx.request('POST', `/api/v1/devices/${agent.device_id}/deprovision`));
    expect((await checkin(agent.secret, { 'if-none-match': '*' })).status).toBe(403);
  });

  describe('moves with every change of the answer', () => {
    async function expectChange(agent: EnrolledAgent, change: () => Promise<unknown>) {
      const before = await etagOf(agent.secret);
      await change();
      const res = await checkin(agent.secret, { 'if-none-match': before });
      expect(res.status).toBe(200);
      expect(res.headers.get('etag')).not.toBe(before);
      return res;
    }

    it('a selection on the device', async () => {
      const agent = await enrollAgent(ctx);
      const res = await expectChange(agent, async () =>
        ok(await ctx.request('POST', `/api/v1/devices/${agent.device_id}/catalog/qgis/select`)),
      );
      expect(res.body.auftraege).toContainEqual({
        merkmal: 'qgis',
        ansible_role: 'qgis',
        state: 'present',
        optionen: {},
      });
      // And new optionen on the same selection.
      await expectChange(agent, async () =>
        ok(
          await ctx.request('POST', `/api/v1/devices/${agent.device_id}/catalog/qgis/select`, {
            body: { optionen: { v: 2 } },
          }),
        ),
      );
    });

    it('a selection on its org unit and on an ancestor', async () => {
      const agent = await enrollAgent(ctx);
      const top = ok(
        await ctx.request('POST', `/api/v1/organizations/${agent.organization_id}/org-units`, {
          body: { name: 'Top' },
        }),
        201,
      );
      const child = ok(
        await ctx.request('POST', `/api/v1/organizations/${agent.organization_id}/org-units`, {
          body: { name: 'Kind', parent_id: top.body.id },
        }),
        201,
      );
      // A move changes the answer only when the new chain decides something otherwise (§26).
      ok(await ctx.request('POST', `/api/v1/org-units/${top.body.id}/catalog/firefox/deselect`));
      await expectChange(agent, async () =>
        ok(await ctx.request('PUT', `/api/v1/devices/${agent.device_id}/org-unit`, { body: { oe_id: child.body.id } })),
      );
      await expectChange(agent, async () =>
        ok(await ctx.request('POST', `/api/v1/org-units/${top.body.id}/catalog/libreoffice/select`)),
      );
      await expectChange(agent, async () =>
        ok(await ctx.request('DELETE', `/api/v1/org-units/${top.body.id}/catalog/libreoffice`), 204),
      );
    });

    it('a group membership and a selection on the group', async () => {
      const agent = await enrollAgent(ctx);
      const group = ok(
        await ctx.request('POST', `/api/v1/organizations/${agent.organization_id}/groups`, { body: { name: 'G' } }),
        201,
      );
      ok(await ctx.request('POST', `/api/v1/groups/${group.body.id}/catalog/onlyoffice/select`));
      await expectChange(agent, async () =>
        ok(await ctx.request('PUT', `/api/v1/groups/${group.body.id}/devices/${agent.device_id}`), 204),
      );
      await expectChange(agent, async () =>
        ok(await ctx.request('POST', `/api/v1/groups/${group.body.id}/catalog/onlyoffice/deselect`)),
      );
      // Leaving a group whose `absent` agrees with the workspace default would change nothing (§26).
      await expectChange(agent, async () =>
        ok(await ctx.request('POST', `/api/v1/groups/${group.body.id}/catalog/onlyoffice/select`)),
      );
      await expectChange(agent, async () =>
        ok(await ctx.request('DELETE', `/api/v1/groups/${group.body.id}/devices/${agent.device_id}`), 204),
      );
    });

    it('a template change (reprovision, resolve to Ubuntu, bootstrap) only when its answer differs', async () => {
      const agent = await enrollAgent(ctx);
      const before = await etagOf(agent.secret);
      const answer = (await checkin(agent.secret)).body;
      ok(await ctx.request('POST', `/api/v1/devices/${agent.device_id}/reprovision`));
      const blueprint = await resolveDevice(ctx, {
        code: agent.code,
        device_id: agent.device_id,
        template_id: TEMPLATES.ubuntuStandard,
      });
      const secret = await bootstrapAgent(ctx, blueprint.agent);
      // The seed gives both backends the same roles: Ubuntu's answer is Debian's (§26), and
      // the tag stays. Where the roles differ the tag moves (the migration's case below).
      expect((await checkin(secret)).body).toEqual(answer);
      const res = await checkin(secret, { 'if-none-match': before });
      expect(res.status).toBe(304);
      expect(res.headers.get('etag')).toBe(before);
    });

    it('a configuration change (poll interval, role repository)', async () => {
      const agent = await enrollAgent(ctx);
      const before = await etagOf(agent.secret);
      for (const overrides of [
        { agentPollIntervalSeconds: 600 },
        { roleRepositoryUrl: 'https://roles.example.invalid/other.git' },
      ]) {
        const app = testApp(ctx.sql, testConfig(overrides));
        const res = await request(app, 'POST', '/api/v1/agent/checkin', {
          token: agent.secret,
          headers: { 'if-none-match': before },
        });
        expect(res.status).toBe(200);
        expect(res.headers.get('etag')).not.toBe(before);
      }
    });

    it("a migration that changes a Merkmal's role, for the backend it names", async () => {
      const debian = await enrollAgent(ctx);
      const ubuntu = await enrollAgent(ctx, { templateId: TEMPLATES.ubuntuStandard });
      const before = { debian: await etagOf(debian.secret), ubuntu: await etagOf(ubuntu.secret) };
      // Seed data is cached per database client: a fresh client stands for a service started after the migration.
      const client = postgres(ctx.db.url, { max: 2, onnotice: () => {} });
      await ctx.sql`update blueprints set ansible_role = 'qgis_ubuntu' where merkmal = 'qgis' and backend = 'ubuntu'`;
      await ctx.sql`insert into schema_migrations (version) values ('99990101000000')`;
      try {
        const app = testApp(client, ctx.config);
        const call = (secret: string, etag: string) =>
          request(app, 'POST', '/api/v1/agent/checkin', { token: secret, headers: { 'if-none-match': etag } });
        const onUbuntu = await call(ubuntu.secret, before.ubuntu);
        expect(onUbuntu.status).toBe(200);
        expect(onUbuntu.headers.get('etag')).not.toBe(before.ubuntu);
        expect(onUbuntu.body.auftraege).toContainEqual({
          merkmal: 'qgis',
          ansible_role: 'qgis_ubuntu',
          state: 'absent',
          optionen: {},
        });
        // Debian's answer is as it was: its tag too (§26), though the seed version moved.
        const onDebian = await call(debian.secret, before.debian);
        expect(onDebian.status).toBe(304);
        const full = await request(app, 'POST', '/api/v1/agent/checkin', { token: debian.secret });
        expect(full.headers.get('etag')).toBe(before.debian);
        expect(full.body.auftraege.find((a: { merkmal: string }) => a.merkmal === 'qgis').ansible_role).toBe('qgis');
      } finally {
        await ctx.sql`update blueprints set ansible_role = 'qgis' where merkmal = 'qgis' and backend = 'ubuntu'`;
        await ctx.sql`delete from schema_migrations where version = '99990101000000'`;
        await client.end();
      }
    });

    it('but not with a change in another organization', async () => {
      const agent = await enrollAgent(ctx);
      const other = await enrollAgent(ctx);
      const before = await etagOf(agent.secret);
      ok(
        await ctx.request('POST', `/api/v1/organizations/${other.organization_id}/org-units`, { body: { name: 'X' } }),
        201,
      );
      ok(await ctx.request('POST', `/api/v1/devices/${other.device_id}/catalog/qgis/select`));
      expect((await checkin(agent.secret, { 'if-none-match': before })).status).toBe(304);
    });
  });
});

describe('load shedding', () => {
  it('refuses check-ins past the in-flight bound with 503 and a jittered Retry-After, while health and admin calls are served', async () => {
    const config = testConfig({ checkin: { maxInFlight: 1, retryAfterSeconds: 30 } });
    const app = testApp(ctx.sql, config);
    const agent = await enrollAgent(ctx);
    // Hold the hardware's table so the first check-in, which sends hardware, waits inside
    // its statement.
    const blocker = postgres(ctx.db.url, { max: 1, onnotice: () => {} });
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const locked = new Promise<void>((ready) => {
      void blocker.begin(async (tx) => {
        await tx`lock table device_hardware in exclusive mode`;
        ready();
        await released;
      });
    });
    try {
      await locked;
      const first = request(app, 'POST', '/api/v1/agent/checkin', {
        token: agent.secret,
        body: { hardware: { cpu: 'i5' } },
      });
      await waitForLockWaiter(ctx.sql, 'device_hardware');
      const refused = await request(app, 'POST', '/api/v1/agent/checkin', { token: agent.secret });
      expectShed(refused);
      expect((await request(app, 'GET', '/api/v1/health', { token: null })).status).toBe(200);
      expect((await request(app, 'GET', '/api/v1/organizations')).status).toBe(200);
      release();
      expect((await first).status).toBe(200);
      expect((await request(app, 'POST', '/api/v1/agent/checkin', { token: agent.secret })).status).toBe(200);
    } finally {
      release();
      await blocker.end();
    }
  });
});
