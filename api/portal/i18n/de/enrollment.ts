/** German: enrollment sessions (create, devices used of the quota, expiry, revoke). */
export const enrollment = {
  title: 'Enrollment-Sessions',
  intro: {
    before:
      'Eine Enrollment-Session erlaubt einer begrenzten Zahl von Geräten bis zu einem Ablaufdatum die Aktivierung mit einem Template. Erzeugen Sie danach unter ',
    isoBuilds: 'ISO-Builds',
    after: ' ein Installations-ISO für die Session.',
  },
  new: 'Neue Enrollment-Session',
  template: 'Template',
  maxDevices: 'Höchstzahl Geräte',
  days: 'Gültig für (Tage)',
  create: 'Session erstellen',
  sessions: 'Sessions',
  none: 'Noch keine Enrollment-Sessions: erstellen Sie oben die erste.',
  session: 'Session (Aktivierungscode)',
  devices: 'Geräte',
  expires: 'Läuft ab',
  status: 'Status',
  action: 'Aktion',
  /** Devices activated of the session's quota. */
  used: (used: string, max: string) => `${used} von ${max}`,
  states: {
    revoked: 'widerrufen',
    expired: 'abgelaufen',
    exhausted: 'ausgeschöpft',
    active: 'aktiv',
  },
  revoke: 'Widerrufen',
  created: 'Enrollment-Session erstellt.',
  revokedFlash: 'Enrollment-Session widerrufen.',
};
