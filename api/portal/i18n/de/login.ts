/** German: sign-in, sign-out and the operator's choice of organization. */
export const login = {
  title: 'Anmelden',
  intro: {
    before: 'Melden Sie sich mit dem API-Schlüssel Ihrer Organisation an (',
    after:
      '; Ihr Administrator erstellt ihn unter „API-Schlüssel“). Betreiber melden sich mit dem Betreiber-Token an und wählen danach eine Organisation.',
  },
  keyLabel: 'API-Schlüssel',
  submit: 'Anmelden',
  expiredTitle: 'Anfrage abgelehnt',
  expired: 'Das Formular ist abgelaufen.',
  again: 'Erneut anmelden',
  tooMany: (seconds: string) => `Zu viele fehlgeschlagene Anmeldungen. Bitte in ${seconds} Sekunden erneut versuchen.`,
  wrongKey: 'Der Schlüssel ist falsch, widerrufen oder abgelaufen.',
  signedInAs: (name: string) => `Angemeldet als ${name}.`,
  chooseTitle: 'Organisation wählen',
  noOrganizations: 'Noch keine Organisationen: legen Sie eine über die API an (POST /api/v1/organizations).',
  organization: 'Organisation',
  choose: 'Wählen',
  unknownOrganization: 'Unbekannte Organisation.',
};
