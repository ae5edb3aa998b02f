/** German: the organization's API keys (list, create, the new key shown once, revoke). */
export const credentials = {
  title: 'API-Schlüssel',
  new: 'Neuer API-Schlüssel',
  name: 'Name',
  role: 'Rolle',
  roles: { admin: 'Admin', viewer: 'Leser' },
  /** The role options of the form, with what each may do. */
  roleOptions: { viewer: 'Leser (nur lesen)', admin: 'Admin (alles in dieser Organisation)' },
  expiresOn: 'Läuft ab am (optional, Ende des Tages UTC)',
  create: 'Schlüssel erstellen',
  prefix: 'Präfix',
  lastUsed: 'Zuletzt benutzt',
  expires: 'Läuft ab',
  revoked: 'Widerrufen',
  revokeLink: 'Widerrufen …',
  createdTitle: 'API-Schlüssel erstellt',
  created: {
    before: (name: string, role: string) =>
      `Der Schlüssel „${name}“ (${role}) wurde erstellt. Kopieren Sie ihn jetzt: `,
    once: 'er wird nur dieses eine Mal angezeigt',
    after: ' und ist nur als Hash gespeichert.',
  },
  key: 'Schlüssel',
  back: 'Zurück zu den API-Schlüsseln',
  revokeTitle: 'API-Schlüssel widerrufen',
  revokeQuestion: {
    before: (name: string) => `Den Schlüssel „${name}“ (`,
    after: ') widerrufen? Er funktioniert danach sofort nicht mehr, und Portal-Sitzungen mit ihm enden.',
  },
  revoke: 'Widerrufen',
  cancel: 'Abbrechen',
  revokedFlash: 'API-Schlüssel widerrufen.',
};
