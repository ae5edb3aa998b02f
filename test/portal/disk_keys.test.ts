/** A device's disk keys in the portal: admins see and reveal them with a reason; a viewer sees none. */
import { describe, expect, it } from 'vitest';
import { createApiKey } from '../support/access.ts';
import { enrollAgent } from '../support/agent.ts';
import { useTestApp } from '../support/app.ts';
import { PortalClient } from '../support/portal_client.ts';

const ctx = useTestApp();
const KEY = 'cbdefghi-jklnrtuv-cbdefghi-jklnrtuv-cbdefghi-jklnrtuv-cbdefghi-jklnrtuv';

async function signedIn(key: string, language?: string) {
  const client = new PortalClient(ctx.app, `10.43.8.${Math.floor(Math.random() * 250) + 1}`, language);
  expect((await client.signIn(key)).status).toBe(303);
  return client;
}

async function deviceWithKey() {
  const agent = await enrollAgent(ctx);
  const escrowed = await ctx.request('POST', '/api/v1/agent/disk-keys', {
    token: agent.secret,
    body: { device_path: '/dev/sda3', luks_uuid: crypto.randomUUID(), keyslot: 1, recovery_key: KEY },
  });
  expect(escrowed.status).toBe(201);
  return { agent, keyId: escrowed.body.id as string };
}

describe('disk keys in the portal', () => {
  it.each([
    ['de', 'Wiederherstellungsschlüssel der Festplatte', 'Schlüssel anzeigen'],
    ['en', 'Disk recovery keys', 'Reveal key'],
  ])('an admin sees the keys (%s) and reveals one with a reason, audited', async (language, heading, button) => {
    const { agent, keyId } = await deviceWithKey();
    const admin = await createApiKey(ctx, agent.organization_id, 'admin');
    const client = await signedIn(admin.key, language);
    const page = await client.request('GET', `/portal/devices/${agent.device_id}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain(heading);
    expect(page.text).toContain(button);
    expect(page.text).toContain(`data-disk-key="${keyId}"`);
    expect(page.text).not.toContain(KEY);
    const csrf = PortalClient.csrf(page.text);
    const short = await client.request('POST', `/portal/disk-keys/${keyId}/reveal`, { _csrf: csrf, reason: 'x' });
    expect(short.status).toBe(400);
    expect(await ctx.sql`select 1 from audit_events where target_id = ${keyId}`).toHaveLength(0);
    const shown = await client.request('POST', `/portal/disk-keys/${keyId}/reveal`, {
      _csrf: csrf,
      reason: 'Ticket 99: locked out',
    });
    expect(shown.status).toBe(200);
    expect(shown.text).toContain(KEY);
    const [audit] = await ctx.sql`select action, details from audit_events where target_id = ${keyId}`;
    expect(audit).toMatchObject({ action: 'disk_key.reveal', details: { reason: 'Ticket 99: locked out' } });
  });

  it('a viewer sees no keys and cannot reveal one', async () => {
    const { agent, keyId } = await deviceWithKey();
    const viewer = await createApiKey(ctx, agent.organization_id, 'viewer');
    const client = await signedIn(viewer.key);
    const page = await client.request('GET', `/portal/devices/${agent.device_id}`);
    expect(page.status).toBe(200);
    expect(page.text).not.toContain('data-disk-key');
    const csrf = PortalClient.csrf(page.text);
    const res = await client.request('POST', `/portal/disk-keys/${keyId}/reveal`, {
      _csrf: csrf,
      reason: 'curious me',
    });
    expect(res.status).toBe(403);
    expect(res.text).not.toContain(KEY);
    const [row] = await ctx.sql`select revealed_at from disk_keys where id = ${keyId}`;
    expect(row!.revealed_at).toBeNull();
  });

  it('the overview counts disk encryption, each figure a link to the devices it counts', async () => {
    const { agent } = await deviceWithKey();
    const plain = await enrollAgent(ctx, { organizationId: agent.organization_id });
    const viewer = await createApiKey(ctx, agent.organization_id, 'viewer');
    const client = await signedIn(viewer.key, 'en');
    const page = await client.request('GET', '/portal');
    expect(page.status).toBe(200);
    expect(page.text).toContain('Disk encryption');
    const figure = (key: string) =>
      new RegExp(
        `data-figure="disk-${key}"><span class="figure">(?:<a href="([^"]+)"[^>]*>(\\d+)</a>|<span>(\\d+)</span>)`,
      )
        .exec(page.text)!
        .slice(1)
        .filter((x) => x !== undefined);
    expect(figure('encrypted')).toEqual(['/portal/devices?disk_encryption=encrypted', '1']);
    expect(figure('escrowed')).toEqual(['/portal/devices?disk_encryption=escrowed', '1']);
    expect(figure('unencrypted')).toEqual(['/portal/devices?disk_encryption=unencrypted', '1']);
    // None missing: a plain figure, no link to an empty list.
    expect(figure('missing')).toEqual(['0']);
    // The links lead to those devices, the filter shown chosen in the list's form.
    const escrowed = await client.request('GET', '/portal/devices?disk_encryption=escrowed');
    expect(escrowed.status).toBe(200);
    expect(escrowed.text).toContain(`/portal/devices/${agent.device_id}`);
    expect(escrowed.text).not.toContain(`/portal/devices/${plain.device_id}`);
    expect(escrowed.text).toMatch(/<option value="escrowed" selected="">with an escrowed recovery key<\/option>/);
    const unencrypted = await client.request('GET', '/portal/devices?disk_encryption=unencrypted');
    expect(unencrypted.text).toContain(`/portal/devices/${plain.device_id}`);
    expect(unencrypted.text).not.toContain(`/portal/devices/${agent.device_id}`);
    // Not a state: no filter, as the list treats any value it does not know.
    const unknown = await client.request('GET', '/portal/devices?disk_encryption=rotated');
    expect(unknown.status).toBe(200);
    expect(unknown.text).toContain(`/portal/devices/${plain.device_id}`);
    expect(unknown.text).toContain(`/portal/devices/${agent.device_id}`);
  });
});
