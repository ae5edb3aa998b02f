/**
 * The inventory hash of the device agent (fleet_agent_helpers.py `jcs`, `inventory_hash`):
 * SHA-256 of the RFC 8785 canonical JSON (JCS) of the inventory without `hash`. Checked
 * against fixed vectors from RFC 8785 and against an independent implementation here: JCS is
 * test/support/inventory_hash.ts (ECMAScript's JSON.stringify, keys sorted by UTF-16 code units).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { canonicalJson, inventoryHash } from '../support/inventory_hash.ts';
import { missingTools } from '../support/tools.ts';

const HELPERS = fileURLToPath(new URL('../../jobs/iso/installer/agent/fleet_agent_helpers.py', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'fleet-inventory-hash-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

let counter = 0;
async function python(step: string, content: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const path = join(dir, `v${++counter}.json`);
  await writeFile(path, content);
  const out = spawnSync('python3', [HELPERS, step, path], { encoding: 'utf8', timeout: 30_000 });
  return { code: out.status, stdout: out.stdout, stderr: out.stderr };
}

/** Key order and escapes where code point order, UTF-16 order and naive escaping differ. */
const VECTORS: unknown[] = [
  // RFC 8785 §3.2.3: sorted by UTF-16 code units, so the emoji (D83D DE00) before U+FB33.
  {
    '\u20ac': 'Euro Sign',
    '\r': 'Carriage Return',
    '\ufb33': 'Hebrew Letter Dalet With Dagesh',
    '1': 'One',
    '\ud83d\ude00': 'Emoji: Grinning Face',
    '\u0080': 'Control',
    '\u00f6': 'Latin Small Letter O With Diaeresis',
  },
  { b: [true, false, null, 0, -1, 9007199254740991], a: { z: '', y: {} }, A: [] },
  ['\u0000\u0001\u001f "\\/ \b\f\n\r\t \u007f \u2028\u2029 é ß 中文 \ud83d\ude00'],
  { 'paquet-é': 'ü', 'paquet-e': 'u', Paquet: 'x', 'paquet-\ud83d\ude00': 1, 'paquet-\uffff': 2 },
];

describe.skipIf(missingTools('python3'))('the inventory hash (RFC 8785)', { timeout: 60_000 }, () => {
  it('fixed vectors of RFC 8785: key order by UTF-16 code units, the escapes it names and no others', async () => {
    const sorted = await python('canonical-json', JSON.stringify(VECTORS[0]));
    expect(sorted.code, sorted.stderr).toBe(0);
    expect(sorted.stdout).toBe(
      '{"\\r":"Carriage Return","1":"One","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis",' +
        '"\u20ac":"Euro Sign","\ud83d\ude00":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
    );
    const escapes = await python('canonical-json', JSON.stringify(VECTORS[2]));
    expect(escapes.stdout).toBe(
      '["\\u0000\\u0001\\u001f \\"\\\\/ \\b\\f\\n\\r\\t \u007f \u2028\u2029 é ß 中文 \ud83d\ude00"]',
    );
  });

  it('equals the ECMAScript implementation on every vector, byte for byte', async () => {
    for (const vector of VECTORS) {
      const out = await python('canonical-json', JSON.stringify(vector, null, 2));
      expect(out.code, out.stderr).toBe(0);
      expect(out.stdout, JSON.stringify(vector)).toBe(canonicalJson(vector));
    }
  });

  it('the hash of an inventory: lowercase hex SHA-256 of the canonical form without "hash", as computed here', async () => {
    const body = {
      os: { id: 'debian', version_id: '12', codename: 'bookworm' },
      kernel: '6.1.0-18-amd64',
      packages: [
        { name: 'libc6', version: '2.36-9+deb12u4', arch: 'amd64', source: 'glibc', source_version: '2.36-9+deb12u4' },
        { name: 'paquet-é', version: '1:2.0~rc1-1', arch: 'all', source: 'paquet-é', source_version: '1:2.0~rc1-1' },
      ],
      pending: [{ name: 'libc6', installed: '2.36-9+deb12u4', candidate: '2.36-9+deb12u7', security: true }],
      reboot_required: false,
      hash: 'ignored',
    };
    const out = await python('canonical-hash', JSON.stringify(body));
    expect(out.code, out.stderr).toBe(0);
    const hash = out.stdout.trim();
    expect(hash).toMatch(/^[0-9a-f]{64}$/);
    expect(hash).toBe(inventoryHash(body));
    // The same body in another key order and with another "hash": the same hash.
    const { hash: _h, ...rest } = body;
    const reordered = Object.fromEntries(Object.entries({ ...rest, hash: 'x' }).reverse());
    expect((await python('canonical-hash', JSON.stringify(reordered))).stdout.trim()).toBe(hash);
    // One character more in a version: another hash.
    const changed = { ...body, kernel: '6.1.0-18-amd64+' };
    expect((await python('canonical-hash', JSON.stringify(changed))).stdout.trim()).not.toBe(hash);
  });

  it('refuses what the inventory never holds: a float (exit 1 naming the step)', async () => {
    const out = await python('canonical-json', '{"a": 1.5}');
    expect(out).toEqual({ code: 1, stdout: '', stderr: 'canonical-json: no canonical JSON for float\n' });
  });
});
