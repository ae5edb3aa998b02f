import { describe, expect, it } from 'vitest';
import { canonicalJson, compareCodePoints } from '../../api/http/canonical_json.ts';
import { inventoryHash, packageSetHash, releaseOf } from '../../api/inventory/content.ts';

describe('canonicalJson (RFC 8785)', () => {
  it('writes the example of RFC 8785 §3.2.2', () => {
    const input = JSON.parse(
      '{"numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],' +
        ' "string": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/", "literals": [null, true, false]}',
    );
    expect(canonicalJson(input)).toBe(
      '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],' +
        '"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
    );
  });

  it('sorts keys by UTF-16 code units (RFC 8785 §3.2.3)', () => {
    const input = JSON.parse(
      '{"\\u20ac":"Euro Sign","\\r":"Carriage Return","\\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One",' +
        '"\\ud83d\\ude00":"Emoji: Grinning Face","\\u0080":"Control","\\u00f6":"Latin Small Letter O With Diaeresis"}',
    );
    // (Object.values would put the integer-like key "1" first: compare the text.)
    expect(canonicalJson(input)).toBe(
      '{"\\r":"Carriage Return","1":"One","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis",' +
        '"\u20ac":"Euro Sign","\ud83d\ude00":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
    );
  });

  it.each([
    [0, '0'],
    [-0, '0'],
    [5e-324, '5e-324'],
    [1.7976931348623157e308, '1.7976931348623157e+308'],
    [9007199254740992, '9007199254740992'],
    [1e21, '1e+21'],
    [1e20, '100000000000000000000'],
    [0.000001, '0.000001'],
    [1e-7, '1e-7'],
    [295147905179352830000, '295147905179352830000'],
    [-1.5, '-1.5'],
  ])('writes the number %d as %s (RFC 8785 Appendix B)', (n, text) => {
    expect(canonicalJson(n)).toBe(text);
  });

  it('writes non-ASCII text as itself, controls escaped, no whitespace', () => {
    expect(canonicalJson({ b: ['ä', 'ö\u0001', { 日本: '\t' }], a: 'x y' })).toBe(
      '{"a":"x y","b":["ä","ö\\u0001",{"日本":"\\t"}]}',
    );
  });

  it('refuses what is not JSON', () => {
    expect(() => canonicalJson(Number.NaN)).toThrow(TypeError);
    expect(() => canonicalJson('\ud800')).toThrow(TypeError);
    expect(() => canonicalJson(() => 1)).toThrow(TypeError);
  });

  it('compares code points, unlike the UTF-16 sort, beyond U+FFFF', () => {
    const emoji = '\ud83d\ude00';
    expect(['\ufb33', emoji].sort()).toEqual([emoji, '\ufb33']);
    expect(['\ufb33', emoji].sort(compareCodePoints)).toEqual(['\ufb33', emoji]);
    expect(['b', 'a', 'ab', ''].sort(compareCodePoints)).toEqual(['', 'a', 'ab', 'b']);
  });
});

/** An inventory whose hash was computed apart (Python: json.dumps(sort_keys, no spaces, ensure_ascii=False)). */
const pythonVector = {
  os: { id: 'debian', version_id: '12', codename: 'bookworm' },
  kernel: '6.1.0-28-amd64',
  packages: [
    { name: 'zlib1g', version: '1:1.2.13.dfsg-1', arch: 'amd64', source: 'zlib', source_version: '1:1.2.13.dfsg-1' },
    { name: 'libc6', version: '2.36-9+deb12u9', arch: 'i386', source: 'glibc', source_version: '2.36-9+deb12u9' },
    { name: 'libc6', version: '2.36-9+deb12u9', arch: 'amd64', source: 'glibc', source_version: '2.36-9+deb12u9' },
    { name: 'fonts-ümlaut', version: '1.0', arch: 'all', source: 'fonts-ümlaut', source_version: '1.0' },
  ],
  pending: [
    { name: 'libssl3', installed: '3.0.15-1~deb12u1', candidate: '3.0.15-1~deb12u2', security: true },
    { name: 'base-files', installed: '12.4+deb12u8', candidate: '12.4+deb12u9', security: false },
  ],
  reboot_required: false,
  luks: [{ device_path: '/dev/nvme0n1p3', luks_uuid: '6d0c1c0e-3c1a-4c5e-9d2f-0a1b2c3d4e5f', keyslots: [0, 1] }],
};
const PYTHON_HASH = 'abffb6d90bc4eda6ebeb951cd467ac486913bc127c00411c6f478dd6e16bcc7a';

describe('inventoryHash', () => {
  it('is the hash Python computes for the same inventory, arrays sorted, hash left out', () => {
    expect(inventoryHash(pythonVector)).toBe(PYTHON_HASH);
    expect(inventoryHash({ ...pythonVector, hash: 'anything' })).toBe(PYTHON_HASH);
  });

  it('does not depend on the order the arrays or keys came in', () => {
    const shuffled = {
      reboot_required: false,
      luks: pythonVector.luks,
      pending: [...pythonVector.pending].reverse(),
      packages: [...pythonVector.packages].reverse(),
      kernel: pythonVector.kernel,
      os: { codename: 'bookworm', version_id: '12', id: 'debian' },
    };
    expect(inventoryHash(shuffled)).toBe(PYTHON_HASH);
  });

  it('changes with any field', () => {
    expect(inventoryHash({ ...pythonVector, kernel: '6.1.0-29-amd64' })).not.toBe(PYTHON_HASH);
    expect(inventoryHash({ ...pythonVector, reboot_required: true })).not.toBe(PYTHON_HASH);
    const { luks: _luks, ...withoutLuks } = pythonVector;
    expect(inventoryHash(withoutLuks)).not.toBe(PYTHON_HASH);
  });

  it('gives a package set the same hash for the same packages in any order, whatever else differs', () => {
    const a = packageSetHash(pythonVector.packages);
    expect(packageSetHash([...pythonVector.packages].reverse())).toEqual(a);
    expect(packageSetHash(pythonVector.packages.slice(1))).not.toEqual(a);
  });
});

describe('releaseOf', () => {
  it.each([
    [{ id: 'debian', version_id: '12', codename: 'bookworm' }, 'bookworm'],
    [{ id: 'ubuntu', version_id: '24.04', codename: 'noble' }, '24.04'],
    [{ id: 'linuxmint', version_id: '22', codename: 'wilma' }, 'wilma'],
    [{ id: 'fedora', version_id: '41', codename: '' }, '41'],
  ])('of %j is %s', (os, release) => {
    expect(releaseOf(os)).toBe(release);
  });
});
