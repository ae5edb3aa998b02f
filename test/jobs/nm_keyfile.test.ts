/** The NetworkManager keyfile written into the image (pure). */
import { describe, expect, it } from 'vitest';
import { escapeKeyfileValue, keyfileSsid, wlanKeyfile } from '../../jobs/iso/nm_keyfile.ts';

describe('NetworkManager keyfile', () => {
  it('writes a WPA-PSK wifi connection', () => {
    const text = wlanKeyfile({ ssid: 'Rathaus-WLAN', psk: 'passphrase1' }, '6f1c2b7e-8d4a-4c55-9b1e-2a7d6c0f9e41');
    expect(text).toContain('[connection]\nid=fleet-wlan\nuuid=6f1c2b7e-8d4a-4c55-9b1e-2a7d6c0f9e41\ntype=wifi\n');
    expect(text).toContain('[wifi]\nmode=infrastructure\nssid=Rathaus-WLAN\n');
    expect(text).toContain('[wifi-security]\nkey-mgmt=wpa-psk\npsk=passphrase1\n');
    expect(text).toContain('[ipv4]\nmethod=auto\n');
  });

  it.each([
    ['plain', 'plain'],
    ['with space', 'with\\sspace'],
    [' leading and trailing ', '\\sleading\\sand\\strailing\\s'],
    ['back\\slash', 'back\\\\slash'],
    ['semi;colon#hash=eq', 'semi;colon#hash=eq'],
  ])('escapes the psk %j as %j', (psk, expected) => {
    expect(escapeKeyfileValue(psk)).toBe(expected);
  });

  it.each([
    ['Rathaus WLAN', 'Rathaus WLAN'],
    ['Café', '67;97;102;195;169;'],
    ['12345', '49;50;51;52;53;'],
    [' padded', '32;112;97;100;100;101;100;'],
    ['a\\b', '97;92;98;'],
    ['a;b', '97;59;98;'],
  ])('writes the ssid %j as %j', (ssid, expected) => {
    expect(keyfileSsid(ssid)).toBe(expected);
  });
});
