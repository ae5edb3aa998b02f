import { Buffer } from 'node:buffer';
import { describe, expect, it } from 'vitest';
import { useTestApp } from './support/app.ts';

const ctx = useTestApp();

describe('catalog data', () => {
  it('lists both backends, debian preferred', async () => {
    const res = await ctx.request('GET', '/api/v1/backends');
    expect(res.status).toBe(200);
    expect(res.body.next_cursor).toBeNull();
    expect(res.body.items).toEqual([
      { key: 'debian', name: 'Debian', distribution: 'Debian 12', preferred: true },
      { key: 'ubuntu', name: 'Ubuntu', distribution: 'Ubuntu 24.04 LTS', preferred: false },
    ]);
  });

  it('lists the standard workspace with its Merkmale', async () => {
    const res = await ctx.request('GET', '/api/v1/workspaces');
    expect(res.body.next_cursor).toBeNull();
    expect(res.body.items).toEqual([
      {
        key: 'standard',
        name: 'Standard-Arbeitsplatz',
        workspace_merkmale: ['basis', 'desktop', 'firefox', 'provisioning-agent'],
      },
    ]);
  });

  it('lists the Merkmale with the same role on both backends', async () => {
    const res = await ctx.request('GET', '/api/v1/merkmale');
    expect(res.body.next_cursor).toBeNull();
    const byKey = Object.fromEntries(res.body.items.map((m: any) => [m.key, m]));
    expect(Object.keys(byKey).sort()).toEqual([
      'basis',
      'desktop',
      'firefox',
      'gastsitzung',
      'libreoffice',
      'onlyoffice',
      'provisioning-agent',
      'qgis',
    ]);
    expect(byKey.gastsitzung).toEqual({
      key: 'gastsitzung',
      name: 'Gastsitzung',
      kategorie: 'individuelle-systemkonfiguration',
      im_auftragskatalog: true,
      blueprints: [
        { backend: 'debian', ansible_role: 'guest_session' },
        { backend: 'ubuntu', ansible_role: 'guest_session' },
      ],
    });
    expect(byKey.basis.im_auftragskatalog).toBe(false);
    for (const key of ['firefox', 'libreoffice', 'onlyoffice', 'qgis']) expect(byKey[key].kategorie).toBe('app-store');
  });

  it('pages the small lists by limit and cursor, in the order of the whole list', async () => {
    const walk = async (path: string, limit: number) => {
      const items: unknown[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const res: { status: number; body: { items: unknown[]; next_cursor: string | null } } = await ctx.request(
          'GET',
          `${path}?limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`,
        );
        expect(res.status, path).toBe(200);
        expect(res.body.items.length).toBeLessThanOrEqual(limit);
        items.push(...res.body.items);
        cursor = res.body.next_cursor;
        pages += 1;
      } while (cursor !== null && pages < 20);
      return { items, pages };
    };
    for (const path of ['/api/v1/backends', '/api/v1/workspaces', '/api/v1/merkmale']) {
      const whole = await ctx.request('GET', path);
      const paged = await walk(path, 1);
      expect(paged.items, path).toEqual(whole.body.items);
      expect(paged.pages, path).toBe(whole.body.items.length);
    }
    const merkmale = await ctx.request('GET', '/api/v1/merkmale?limit=3');
    expect(merkmale.body.items.map((m: { key: string }) => m.key)).toEqual(['firefox', 'libreoffice', 'onlyoffice']);
    expect(merkmale.body.next_cursor).not.toBeNull();
  });

  it('refuses a limit out of range, a forged cursor and an unknown parameter with 400', async () => {
    const first = await ctx.request('GET', '/api/v1/backends?limit=1');
    for (const query of [
      'limit=0',
      'limit=501',
      'limit=abc',
      'cursor=nope',
      `cursor=${first.body.next_cursor}x`,
      `cursor=${Buffer.from(JSON.stringify(['0', 'debian', 'x'])).toString('base64url')}`,
      'order=key',
    ]) {
      const res = await ctx.request('GET', `/api/v1/backends?${query}`);
      expect(res.status, query).toBe(400);
      expect(res.body.error, query).toBe('invalid_request');
    }
  });

  it('shows every template with partitioning as an object', async () => {
    const res = await ctx.request('GET', '/api/v1/templates');
    expect(res.status).toBe(200);
    const byName = Object.fromEntries(res.body.items.map((t: any) => [t.name, t]));
    expect(Object.keys(byName).sort()).toEqual([
      'Debian Standard',
      'Debian Verschlüsselt',
      'Ubuntu Standard',
      'Ubuntu Verschlüsselt',
    ]);
    expect(byName['Debian Standard']).toMatchObject({
      backend: 'debian',
      workspace: 'standard',
      is_default: true,
      partitioning: { scheme: 'single', root_filesystem: 'ext4', encryption: null },
    });
    expect(byName['Ubuntu Standard']).toMatchObject({
      backend: 'ubuntu',
      is_default: true,
      partitioning: { scheme: 'single', root_filesystem: 'ext4', encryption: null },
    });
    expect(byName['Debian Verschlüsselt']).toMatchObject({
      backend: 'debian',
      is_default: false,
      partitioning: { scheme: 'luks-lvm', root_filesystem: 'ext4', encryption: { type: 'luks2', unlock: 'tpm2' } },
    });
    expect(byName['Ubuntu Verschlüsselt']).toMatchObject({
      backend: 'ubuntu',
      is_default: false,
      partitioning: { scheme: 'luks-lvm', root_filesystem: 'ext4', encryption: { type: 'luks2', unlock: 'tpm2' } },
    });
    const one = await ctx.request('GET', `/api/v1/templates/${byName['Debian Standard'].id}`);
    expect(one.body).toEqual(byName['Debian Standard']);
  });

  it('answers 404 for an unknown template', async () => {
    expect((await ctx.request('GET', `/api/v1/templates/${crypto.randomUUID()}`)).status).toBe(404);
    expect((await ctx.request('GET', '/api/v1/templates/nope')).status).toBe(404);
  });

  it('keeps partitioning an object in the database', async () => {
    await expect(
      ctx.sql`update templates set partitioning = '"default"' where name = 'Debian Standard'`,
    ).rejects.toThrow(/templates_partitioning_object/);
  });
});
