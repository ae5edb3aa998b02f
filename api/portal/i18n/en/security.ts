/** English: the Security page, a device's vulnerabilities, the overview's security figures. */
import type { security as de } from '../de/security.ts';

export const security: typeof de = {
  nav: 'Security',
  title: 'Security',
  intro:
    "Vulnerabilities (CVEs) on the organization's devices, by each device's last software inventory and the Debian and Ubuntu security data: the most urgent first, then those on the most devices.",
  filters: {
    label: 'Filter CVEs',
    search: 'CVE (prefix)',
    urgency: 'Urgency',
    status: 'Fix',
    any: 'any',
    includeUnimportant: 'show unimportant ones too',
    apply: 'Filter',
    reset: 'Reset filters',
  },
  urgencies: {
    critical: 'critical',
    high: 'high',
    medium: 'medium',
    low: 'low',
    unknown: 'unknown',
    unimportant: 'unimportant',
  },
  statuses: { fixed_available: 'update available', no_fix: 'no fix yet' },
  columns: {
    cve: 'CVE',
    urgency: 'Urgency',
    sources: 'Source packages',
    affected: 'Affected devices',
    fixAvailable: 'with an update',
    firstSeen: 'First seen',
  },
  affectedLabel: (cve: string, n: string) => `${cve}: show the ${n} affected devices`,
  fixLabel: (cve: string, n: string) => `${cve}: show the ${n} devices with an update available`,
  shown: (n: string) => `${n} CVEs on this page`,
  noneMatch: 'No CVE matches these filters.',
  empty: {
    noFeed:
      'No security data yet: the service has not read the Debian and Ubuntu security data. The operator of the service sets them up with the settings VULN_FEED_DEBIAN_URL and VULN_FEED_UBUNTU_URL (an https:// address or a file:// path).',
    noInventory:
      'No device has sent its software inventory yet. Devices send it at their next check-in once their agent is current; until then there is nothing to match.',
    clean: "No vulnerability is known on the organization's devices.",
  },
  toDevices: 'To the devices',
  deviceFilter: {
    before: 'Only devices affected by',
    fixAvailable: '(with an update available)',
    noFix: '(no fix yet)',
    without: 'Remove the CVE filter',
    back: 'back to Security',
  },
  device: {
    heading: 'Vulnerabilities',
    columns: {
      cve: 'CVE',
      urgency: 'Urgency',
      status: 'Fix',
      source: 'Source package',
      installed: 'Installed',
      fixed: 'Fixed in',
      binaries: 'Packages',
    },
    noFix: '–',
    noInventory:
      'This device has not sent its software inventory yet: it sends it at its next check-in once its agent is current.',
    none: 'No known vulnerability on this device (unimportant ones not counted).',
    more: (shown: string) => `The ${shown} most urgent shown.`,
    all: "all of the organization's CVEs",
  },
  overview: {
    heading: 'Security',
    securityPending: 'devices with pending security updates',
    rebootRequired: 'devices needing a reboot',
    vulnerableHigh: 'devices with a high or critical vulnerability',
    toSecurity: 'All vulnerabilities',
    figureLabel: (figure: string, label: string) => `${figure} ${label}`,
  },
};
