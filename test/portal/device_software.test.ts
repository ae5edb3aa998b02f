/** The device page's software section: empty state, inventory, pending updates, packages searched and paged, in German and English. */
import { describe, expect, it } from 'vitest';
import { createApiKey } from '../support/access.ts';
import { enrollAgent } from '../support/agent.ts';
import { useTestApp } from '../support/app.ts';
import { inventory, packages, pkg, putInventory } from '../support/inventory.ts';
import { PortalClient } from '../support/portal_client.ts';

const ctx = useTestApp();

async function signedIn(key: string, language?: string) {
  const client = new PortalClient(ctx.app, `10.44.9.${Math.floor(Math.random() * 250) + 1}`, language);
  expect((await client.signIn(key)).status).toBe(303);
  return client;
}

const plain = (html: string) =>
  html
    .replace(/<[^>]+>/g, ' ')
    .replace(/&#39;/g, "'")
    .replace(/\s+/g, ' ');

describe('the device page: software', () => {
  it('says what to do before the first inventory, then shows it, in German and English', async () => {
    const agent = await enrollAgent(ctx);
    const viewer = await createApiKey(ctx, agent.organization_id, 'viewer');
    const de = await signedIn(viewer.key, 'de');
    const en = await signedIn(viewer.key, 'en');
    const page = `/portal/devices/${agent.device_id}`;

    expect(plain((await de.get(page)).text)).toContain('Der Agent sendet es bei seinem nächsten Check-in.');
    expect(plain((await en.get(page)).text)).toContain(
      'No software inventory yet: the agent sends it at its next check-in.',
    );

    const list = [...packages(60, 'lib'), pkg('firefox-esr', '128.5.0esr-1'), pkg('bash')];
    const pending = [
      { name: 'libssl3', installed: '3.0.15-1~deb12u1', candidate: '3.0.15-1~deb12u2', security: true },
      { name: 'base-files', installed: '12.4+deb12u8', candidate: '12.4+deb12u9', security: false },
    ];
    expect(
      (await putInventory(ctx, agent.secret, inventory({ packages: list, pending, reboot_required: true }))).status,
    ).toBe(204);

    const german = await de.get(page);
    expect(german.status).toBe(200);
    const deText = plain(german.text);
    expect(deText).toContain('Ja, ein Neustart ist nötig');
    expect(deText).toContain('2 ausstehend, davon 1 Sicherheitsupdates');
    expect(german.text).toContain('data-package="libssl3" data-security="true"');
    expect(german.text).toContain('data-package="base-files" data-security="false"');

    const english = await en.get(page);
    const enText = plain(english.text);
    expect(enText).toContain('Yes, a reboot is needed');
    expect(enText).toContain('2 pending, 1 of them security updates');
    expect(enText).toContain('Installed packages 62');
    // 50 packages a page, by name: bash first, then a link to the rest.
    expect(english.text.match(/<tr data-package="[^"]+">/g)).toHaveLength(50);
    const more = /href="([^"]*pkg_cursor=[^"#]+)[^"]*"/.exec(english.text)![1]!.replaceAll('&amp;', '&');
    const next = await en.get(more);
    expect(next.text.match(/<tr data-package="[^"]+">/g)).toHaveLength(12);
    expect(next.text).not.toContain('pkg_cursor=');

    const searched = await en.get(`${page}?pkg_q=firefox`);
    expect(searched.text.match(/<tr data-package="[^"]+">/g)).toEqual(['<tr data-package="firefox-esr">']);
    const nothing = plain((await en.get(`${page}?pkg_q=zzz`)).text);
    expect(nothing).toContain('No package starts with this name.');
  });
});
