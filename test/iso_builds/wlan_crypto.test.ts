/** Sealing WLAN credentials for the job payload (WebCrypto AES-256-GCM). */
import { describe, expect, it } from 'vitest';
import { openWlan, SealedWlan, sealWlan } from '../../api/iso_builds/wlan_crypto.ts';

const key = new Uint8Array(32).fill(3);
const buildId = crypto.randomUUID();
const wlan = { ssid: 'Rathaus ☕', psk: 'a very secret passphrase' };

describe('sealWlan / openWlan', () => {
  it('round-trips, and the sealed form holds neither value', async () => {
    const sealed = await sealWlan(key, buildId, wlan);
    expect(SealedWlan.parse(sealed)).toEqual(sealed);
    expect(JSON.stringify(sealed)).not.toContain('secret');
    expect(JSON.stringify(sealed)).not.toContain('Rathaus');
    expect(await openWlan(key, buildId, sealed)).toEqual(wlan);
  });

  it('uses a fresh IV every time', async () => {
    const a = await sealWlan(key, buildId, wlan);
    const b = await sealWlan(key, buildId, wlan);
    expect(a.iv).not.toBe(b.iv);
    expect(a.data).not.toBe(b.data);
  });

  it('does not open with another key, for another build, or when tampered with', async () => {
    const sealed = await sealWlan(key, buildId, wlan);
    await expect(openWlan(new Uint8Array(32).fill(4), buildId, sealed)).rejects.toThrow();
    await expect(openWlan(key, crypto.randomUUID(), sealed)).rejects.toThrow();
    const flipped = Buffer.from(sealed.data, 'base64url');
    flipped[0]! ^= 1;
    await expect(openWlan(key, buildId, { ...sealed, data: flipped.toString('base64url') })).rejects.toThrow();
  });

  it('refuses a key that is not 32 bytes, naming the variable', async () => {
    await expect(sealWlan(new Uint8Array(0), buildId, wlan)).rejects.toThrow(/ISO_ENCRYPTION_KEY/);
  });
});
