/**
 * The NetworkManager keyfile (`.nmconnection`) of the customer's WLAN, as written into the
 * image. Pure: no I/O, so its escaping rules have unit tests of their own.
 */
import type { WlanCredentials } from '../../api/iso_builds/wlan_crypto.ts';

/**
 * GKeyFile string escaping: backslash, control characters, and spaces (a leading or
 * trailing space would otherwise be trimmed by the parser).
 */
export function escapeKeyfileValue(value: string): string {
  return value.replace(
    /[\\\n\r\t ]/g,
    (ch) => ({ '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t', ' ': '\\s' })[ch]!,
  );
}

/**
 * The SSID as NetworkManager reads it back unchanged: plain text when that is unambiguous,
 * else the byte list form (`ssid=72;111;`) that keyfile also accepts. Plain text is
 * ambiguous when it is only digits (it could be read as a byte list), holds `;` or `\`
 * (keyfile's list separator and escape), non-ASCII, or spaces at either end.
 */
export function keyfileSsid(ssid: string): string {
  const plain = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/.test(ssid) && !/^\d+$/.test(ssid) && !/[;\\]/.test(ssid);
  if (plain) return ssid;
  return [...new TextEncoder().encode(ssid)].map((b) => `${b};`).join('');
}

export function wlanKeyfile(wlan: WlanCredentials, connectionUuid: string): string {
  return [
    '[connection]',
    'id=fleet-wlan',
    `uuid=${connectionUuid}`,
    'type=wifi',
    'autoconnect=true',
    '',
    '[wifi]',
    'mode=infrastructure',
    `ssid=${keyfileSsid(wlan.ssid)}`,
    '',
    '[wifi-security]',
    'key-mgmt=wpa-psk',
    `psk=${escapeKeyfileValue(wlan.psk)}`,
    '',
    '[ipv4]',
    'method=auto',
    '',
    '[ipv6]',
    'addr-gen-mode=default',
    'method=auto',
    '',
  ].join('\n');
}
