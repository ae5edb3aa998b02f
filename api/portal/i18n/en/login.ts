/** English: sign-in, sign-out and the operator's choice of organization. */
import type { login as german } from '../de/login.ts';

export const login: typeof german = {
  title: 'Sign in',
  intro: {
    before: "Sign in with your organization's API key (",
    after:
      '; your administrator creates it under “API keys”). Operators sign in with the operator token and then choose an organization.',
  },
  keyLabel: 'API key',
  submit: 'Sign in',
  expiredTitle: 'Request refused',
  expired: 'The form has expired.',
  again: 'Sign in again',
  tooMany: (seconds: string) => `Too many failed sign-ins. Please try again in ${seconds} seconds.`,
  wrongKey: 'The key is wrong, revoked or expired.',
  signedInAs: (name: string) => `Signed in as ${name}.`,
  chooseTitle: 'Choose an organization',
  noOrganizations: 'No organizations yet: create one through the API (POST /api/v1/organizations).',
  organization: 'Organization',
  choose: 'Choose',
  unknownOrganization: 'Unknown organization.',
};
