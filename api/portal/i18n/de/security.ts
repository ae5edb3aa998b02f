/** German: the Security page, a device's vulnerabilities, the overview's security figures. */
export const security = {
  nav: 'Sicherheit',
  title: 'Sicherheit',
  intro:
    'Sicherheitslücken (CVEs) auf den Geräten der Organisation, nach der letzten Software-Inventur jedes Geräts und den Sicherheitsdaten von Debian und Ubuntu: die dringendsten zuerst, dann die mit den meisten Geräten.',
  filters: {
    label: 'CVEs filtern',
    search: 'CVE (Anfang)',
    urgency: 'Dringlichkeit',
    status: 'Behebung',
    any: 'alle',
    includeUnimportant: 'auch unwichtige zeigen',
    apply: 'Filtern',
    reset: 'Filter zurücksetzen',
  },
  urgencies: {
    critical: 'kritisch',
    high: 'hoch',
    medium: 'mittel',
    low: 'niedrig',
    unknown: 'unbekannt',
    unimportant: 'unwichtig',
  },
  statuses: { fixed_available: 'Update verfügbar', no_fix: 'noch keine Behebung' },
  columns: {
    cve: 'CVE',
    urgency: 'Dringlichkeit',
    sources: 'Quellpakete',
    affected: 'Betroffene Geräte',
    fixAvailable: 'davon mit Update',
    firstSeen: 'Zuerst gesehen',
  },
  /** A count's link: which devices it lists. */
  affectedLabel: (cve: string, n: string) => `${cve}: ${n} betroffene Geräte zeigen`,
  fixLabel: (cve: string, n: string) => `${cve}: ${n} Geräte mit verfügbarem Update zeigen`,
  shown: (n: string) => `${n} CVEs auf dieser Seite`,
  noneMatch: 'Keine CVE passt zu diesen Filtern.',
  empty: {
    noFeed:
      'Noch keine Sicherheitsdaten: Der Dienst hat die Sicherheitsdaten von Debian und Ubuntu noch nicht gelesen. Der Betreiber des Dienstes richtet sie mit den Einstellungen VULN_FEED_DEBIAN_URL und VULN_FEED_UBUNTU_URL ein (eine https://-Adresse oder ein file://-Pfad).',
    noInventory:
      'Noch kein Gerät hat seine Software-Inventur gesendet. Geräte senden sie beim nächsten Check-in, sobald ihr Agent aktuell ist; bis dahin kann nichts abgeglichen werden.',
    clean: 'Auf den Geräten der Organisation ist keine Sicherheitslücke bekannt.',
  },
  toDevices: 'Zu den Geräten',
  /** The device list filtered to a CVE. */
  deviceFilter: {
    before: 'Nur Geräte, die betroffen sind von',
    fixAvailable: '(mit verfügbarem Update)',
    noFix: '(noch ohne Behebung)',
    without: 'CVE-Filter entfernen',
    back: 'zurück zur Sicherheit',
  },
  device: {
    heading: 'Sicherheitslücken',
    columns: {
      cve: 'CVE',
      urgency: 'Dringlichkeit',
      status: 'Behebung',
      source: 'Quellpaket',
      installed: 'Installiert',
      fixed: 'Behoben in',
      binaries: 'Pakete',
    },
    noFix: '–',
    noInventory:
      'Dieses Gerät hat noch keine Software-Inventur gesendet: Es sendet sie beim nächsten Check-in, sobald sein Agent aktuell ist.',
    none: 'Keine bekannte Sicherheitslücke auf diesem Gerät (unwichtige nicht gezählt).',
    more: (shown: string) => `Die ${shown} dringendsten gezeigt.`,
    all: 'alle CVEs der Organisation',
  },
  overview: {
    heading: 'Sicherheit',
    securityPending: 'Geräte mit ausstehenden Sicherheitsupdates',
    rebootRequired: 'Geräte mit nötigem Neustart',
    vulnerableHigh: 'Geräte mit hoher oder kritischer Sicherheitslücke',
    toSecurity: 'Alle Sicherheitslücken',
    figureLabel: (figure: string, label: string) => `${figure} ${label}`,
  },
};
