/**
 * The portal pages an admin reads every day, over HTTP in-process: the device page's
 * hardware table, agent version and events with cause, actor and message.
 */
import { describe, expect, it } from 'vitest';
import { hardwareRows } from '../../api/portal/device_details.tsx';
import { createApiKey } from '../support/access.ts';
import { checkin, enrollAgent, report } from '../support/agent.ts';
import { useTestApp } from '../support/app.ts';
import { createOrganization } from '../support/builders.ts';
import { insertOrgUnit } from '../support/devices.ts';
import { PortalClient } from '../support/portal_client.ts';

const ctx = useTestApp();

async function signedIn(key: string) {
  const b = new PortalClient(ctx.app, `10.4.0.${Math.floor(Math.random() * 250) + 1}`);
  expect((await b.signIn(key)).status).toBe(303);
  return b;
}

/** The page's text without tags, spaces collapsed. */
const plain = (html: string) =>
  html
    .replace(/<[^>]+>/g, ' ')
    .replace(/&quot;/g, '"')
    .replace(/\s+/g, ' ');

/** The cell of the row with this attribute (tags removed). */
function rowText(html: string, attribute: string): string {
  const m = new RegExp(`<tr ${attribute}[^>]*>([\\s\\S]*?)</tr>`).exec(html);
  expect(m, attribute).not.toBeNull();
  return plain(m![1]!).trim();
}

/** What the device agent sends (fleet_agent_helpers.py `hardware()`). */
const agentHardware = {
  dmi: {
    sys_vendor: 'LENOVO',
    product_name: '20N2S0A400',
    product_version: 'ThinkPad T490',
    product_serial: 'PF1ABCDE',
  },
  cpu: { cores: 8, model: 'Intel(R) Core(TM) i5-8365U CPU @ 1.60GHz' },
  memory_mb: 15_872,
  disks: [
    { name: 'nvme0n1', size_gb: 512, model: 'SAMSUNG MZVLB512' },
    { name: 'sda', size_gb: null },
  ],
  os: 'Debian GNU/Linux 12 (bookworm)',
  kernel: '6.1.0-26-amd64',
  hostname: 'arbeitsplatz-017',
};

describe('the device page', () => {
  it('shows the hardware as a table, the agent version, and events with cause, actor and message', async () => {
    const org = await createOrganization(ctx);
    const unit = await insertOrgUnit(ctx.sql, org.id, 'Physik');
    const agent = await enrollAgent(ctx, { organizationId: org.id, serial: `HW-${crypto.randomUUID().slice(0, 6)}` });
    expect((await checkin(ctx, agent.secret, { hardware: agentHardware, agent_version: '1.4.2' })).status).toBe(200);
    const adminKey = await createApiKey(ctx, org.id, 'admin', { name: 'Frau Admin' });
    // A selection at the org unit by the admin (cause oe, the unit's name), then the agent's failure.
    const move = await ctx.request('PUT', `/api/v1/devices/${agent.device_id}/org-unit`, {
      body: { oe_id: unit },
      token: adminKey.key,
    });
    expect(move.status, JSON.stringify(move.body)).toBe(200);
    const select = await ctx.request('POST', `/api/v1/org-units/${unit}/catalog/qgis/select`, {
      body: {},
      token: adminKey.key,
    });
    expect(select.status, JSON.stringify(select.body)).toBeLessThan(300);
    await report(ctx, agent.secret, [
      {
        merkmal: 'qgis',
        event: 'apply_failed',
        detail: { role: 'qgis', changed: false, message: 'qgis: Paket fehlt' },
      },
    ]);

    const b = await signedIn((await createApiKey(ctx, org.id, 'viewer')).key);
    const page = await b.get(`/portal/devices/${agent.device_id}`);
    expect(page.status).toBe(200);
    const html = page.text;
    expect(rowText(html, 'data-hardware="model"')).toContain('LENOVO 20N2S0A400 ThinkPad T490');
    expect(rowText(html, 'data-hardware="cpu"')).toContain('Intel(R) Core(TM) i5-8365U CPU @ 1.60GHz (8 Kerne)');
    expect(rowText(html, 'data-hardware="memory"')).toContain('15,5 GiB');
    expect(rowText(html, 'data-hardware="disks"')).toContain('nvme0n1 · 512 GB · SAMSUNG MZVLB512');
    expect(rowText(html, 'data-hardware="disks"')).toContain('sda');
    expect(rowText(html, 'data-hardware="os"')).toContain('Debian GNU/Linux 12 (bookworm)');
    expect(rowText(html, 'data-hardware="kernel"')).toContain('6.1.0-26-amd64');
    expect(rowText(html, 'data-hardware="agent_version"')).toContain('1.4.2');
    // The raw JSON is there, behind a disclosure, no longer the main view.
    expect(html).toMatch(/<details><summary>Rohdaten \(JSON\)<\/summary><pre>/);

    const failed = rowText(html, 'data-event-type="apply_failed"');
    expect(failed).toContain('Bericht des Agenten');
    expect(failed).toContain('Agent des Geräts');
    expect(failed).toContain('qgis: Paket fehlt');
    const selected = rowText(html, 'data-event-type="selected"');
    expect(selected).toContain('Vorgabe der Organisationseinheit „Physik“');
    expect(selected).toContain('Frau Admin');
  });

  it('reads hardware of any shape: missing keys are left out, unknown ones listed by name, odd values as JSON', () => {
    expect(hardwareRows(null)).toEqual([]);
    expect(hardwareRows([1, 2])).toEqual([]);
    expect(hardwareRows({})).toEqual([]);
    const rows = hardwareRows({ cpu: 'i7', memory_mb: 'viel', disks: 'eine', gpu: { model: 'X' }, os: 12 });
    const byKey = Object.fromEntries(rows.map((r) => [r.key, r.value]));
    expect(byKey).toEqual({ cpu: 'i7', memory: 'viel', disks: ['eine'], gpu: '{"model":"X"}', os: '12' });
    expect(rows.find((r) => r.key === 'gpu')!.label).toBe('gpu');
  });
});
