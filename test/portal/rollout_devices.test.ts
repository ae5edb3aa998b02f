/**
 * A rollout's devices in the portal (CONTRACT §26): each ring's device count and its
 * converged, pending and failed figures link to the list of those devices (the service
 * function the API calls, paged); the rollout page says in words what the current ring
 * waits for (no live devices, the soak until a time, reports x of y), in German and
 * English. A viewer reads the list; another organization's rollout is not found.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { formatTime } from '../../api/portal/i18n/index.ts';
import { withLanguage } from '../../api/portal/i18n/language.ts';
import { createApiKey } from '../support/access.ts';
import { type EnrolledAgent, enrollAgent } from '../support/agent.ts';
import { useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { PortalClient } from '../support/portal_client.ts';
import { reportOutcome, soak } from '../rollouts/judge_support.ts';

const ctx = useTestApp();
const MERKMAL = 'libreoffice'; // absent by default: selecting it changes every device

let organizationId: string;
let agents: EnrolledAgent[];
let rolloutId: string;
let german: PortalClient;
let english: PortalClient;

async function signedIn(key: string, address: string, language?: string) {
  const client = new PortalClient(ctx.app, address, language);
  expect((await client.signIn(key)).status).toBe(303);
  return client;
}

/** A rollout in one ring of three live devices: one converged, one failed, one pending; a soak of an hour. */
beforeAll(async () => {
  const org = (await createOrganization(ctx)) as { id: string; default_oe_id: string };
  organizationId = org.id;
  agents = [];
  for (let i = 0; i < 3; i++) {
    agents.push(await enrollAgent(ctx, { organizationId, serial: `PRD-${i}-${crypto.randomUUID().slice(0, 4)}` }));
  }
  const res = await ctx.request('POST', `/api/v1/organizations/${organizationId}/rollouts`, {
    body: {
      scope: 'org_unit',
      scope_id: org.default_oe_id,
      merkmal: MERKMAL,
      action: 'select',
      rings: [100],
      soak_seconds: 3600,
      max_failure_ratio: 0.5,
    },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  rolloutId = res.body.id;
  await reportOutcome(ctx, agents[0]!.secret, MERKMAL, 'applied');
  await reportOutcome(ctx, agents[1]!.secret, MERKMAL, 'apply_failed');
  const admin = (await createApiKey(ctx, organizationId, 'admin')).key;
  german = await signedIn(admin, '10.50.0.1');
  english = await signedIn(admin, '10.50.0.2', 'en-GB,en;q=0.9');
}, 60_000);

const serialOf = async (deviceId: string) =>
  (await ctx.sql<{ serial: string }[]>`select serial from devices where id = ${deviceId}`)[0]!.serial;

describe("a ring's figures", () => {
  it('link to the list of those devices, which shows each with its convergence and last report', async () => {
    const page = await german.get(`/portal/rollouts/${rolloutId}`);
    expect(page.status).toBe(200);
    const base = `/portal/rollouts/${rolloutId}/devices?ring=0`;
    expect(page.text).toContain(`href="${base}"`);
    for (const kind of ['converged', 'pending', 'failed']) {
      expect(page.text).toContain(
        `href="${base}&amp;convergence=${kind}"><span class="badge ${kind}" data-count="${kind}">1 `,
      );
    }

    const failed = await german.get(`${base}&convergence=failed`);
    expect(failed.status).toBe(200);
    expect(failed.text).toContain('Geräte des Rollouts: Ring 1, fehlgeschlagen');
    expect(failed.text).toContain(
      `<a href="/portal/devices/${agents[1]!.device_id}">${await serialOf(agents[1]!.device_id)}</a>`,
    );
    expect(failed.text).toContain('data-convergence="failed"');
    expect(failed.text).toContain('apply_failed by the test');
    for (const other of [agents[0]!, agents[2]!]) expect(failed.text).not.toContain(other.device_id);

    const all = await german.get(base);
    for (const agent of agents) expect(all.text).toContain(`data-device="${agent.device_id}"`);
    expect(all.text).toContain('noch kein Bericht');
    expect(all.text).toContain(`href="/portal/rollouts/${rolloutId}"`);

    const englishList = await english.get(`${base}&convergence=converged`);
    expect(englishList.text).toContain('Rollout devices: Ring 1, converged');
    expect(englishList.text).toContain(`data-device="${agents[0]!.device_id}"`);
  });

  it('the list pages: a next page after 25 devices, and back to the first', async () => {
    const org = (await createOrganization(ctx)) as { id: string; default_oe_id: string };
    await ctx.sql`
      insert into devices (organization_id, serial, oe_id)
      select ${org.id}, 'PG-' || lpad(i::text, 2, '0'), ${org.default_oe_id} from generate_series(1, 27) as i`;
    const res = await ctx.request('POST', `/api/v1/organizations/${org.id}/rollouts`, {
      body: { scope: 'org_unit', scope_id: org.default_oe_id, merkmal: MERKMAL, action: 'select', rings: [100] },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const viewer = await signedIn((await createApiKey(ctx, org.id, 'viewer')).key, '10.50.0.3');
    const first = await viewer.get(`/portal/rollouts/${res.body.id}/devices?ring=0`);
    expect(first.status).toBe(200);
    expect([...first.text.matchAll(/data-device="/g)]).toHaveLength(25);
    const next = /href="([^"]*cursor=[^"]*)">Nächste Seite/.exec(first.text)?.[1]?.replace(/&amp;/g, '&');
    expect(next).toBeDefined();
    const second = await viewer.get(next!);
    expect([...second.text.matchAll(/data-device="/g)]).toHaveLength(2);
    expect(second.text).toContain('PG-27');
    expect(second.text).not.toContain('PG-01<');
    expect(second.text).toContain(`href="/portal/rollouts/${res.body.id}/devices?ring=0">← Erste Seite`);

    // Another organization's rollout is not found, in the list as on the rollout's page.
    expect((await viewer.get(`/portal/rollouts/${rolloutId}/devices`)).status).toBe(404);
  });
});

describe('what the current ring waits for, in words', () => {
  it('the soak until its end, then the reports x of y, then live devices, in German and English', async () => {
    const [opened] = await ctx.sql<{ opened_at: Date }[]>`
      select opened_at from rollout_rings where rollout_id = ${rolloutId} and ring = 0`;
    const until = new Date(opened!.opened_at.getTime() + 3600_000);
    const path = `/portal/rollouts/${rolloutId}`;
    const at = (language: 'de' | 'en') => withLanguage({ language, path }, () => formatTime(until));
    expect((await german.get(path)).text).toContain(`Ring 1 wartet die Wartezeit ab, bis ${at('de')}.`);
    expect((await english.get(path)).text).toContain(`Ring 1 is waiting for its soak time to end, at ${at('en')}.`);

    await soak(ctx.sql, rolloutId);
    expect((await german.get(path)).text).toContain(
      'Ring 1 wartet auf Berichte: 2 von 3 nötigen Geräten haben berichtet.',
    );
    expect((await english.get(path)).text).toContain(
      'Ring 1 is waiting for reports: 2 of the 3 devices needed have reported.',
    );

    const ids = agents.map((a) => a.device_id);
    await ctx.sql`update devices set agent_secret_issued_at = now() - interval '1 day' where id = any(${ids}::uuid[])`;
    await ctx.sql`update device_heartbeats set at = null where device_id = any(${ids}::uuid[])`;
    const page = await german.get(path);
    expect(page.text).toContain('data-reason="no_live_devices"');
    expect(page.text).toContain('Ring 1 wartet auf erreichbare Geräte');
    expect((await english.get(path)).text).toContain('Ring 1 is waiting for live devices');
    // The list marks them stale.
    expect((await english.get(`${path}/devices`)).text).toContain('<span class="badge status-stale">stale</span>');
  });
});
