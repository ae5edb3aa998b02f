/**
 * The customer's WLAN as a netplan file, for installed systems whose network stack is
 * netplan alone (an Ubuntu server install: no NetworkManager, so the keyfile of
 * nm_keyfile.ts would never be read). Pure: no I/O.
 *
 * systemd-networkd (netplan's renderer on a server) cannot match a WLAN by pattern, so the
 * file names the interface by a placeholder that install.sh replaces with the installing
 * machine's first wireless interface (the installed system names it alike).
 */
import type { WlanCredentials } from '../../api/iso_builds/wlan_crypto.ts';

const WLAN_INTERFACE_PLACEHOLDER = '@FLEET_WLAN_INTERFACE@';

/** A YAML double-quoted scalar: JSON's string escapes are a subset of YAML's. */
const yamlString = (value: string) => JSON.stringify(value);

export function wlanNetplan(wlan: WlanCredentials): string {
  return [
    '# Fleet: the WLAN of the installation image (mode 0600: it holds the passphrase).',
    'network:',
    '  version: 2',
    '  wifis:',
    `    ${WLAN_INTERFACE_PLACEHOLDER}:`,
    '      dhcp4: true',
    '      dhcp6: true',
    '      access-points:',
    `        ${yamlString(wlan.ssid)}:`,
    `          password: ${yamlString(wlan.psk)}`,
    '',
  ].join('\n');
}
