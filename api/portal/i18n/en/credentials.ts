/** English: the organization's API keys (list, create, the new key shown once, revoke). */
import type { credentials as german } from '../de/credentials.ts';

export const credentials: typeof german = {
  title: 'API keys',
  new: 'New API key',
  name: 'Name',
  role: 'Role',
  roles: { admin: 'admin', viewer: 'viewer' },
  roleOptions: { viewer: 'Viewer (read only)', admin: 'Admin (everything in this organization)' },
  expiresOn: 'Expires on (optional, end of the day UTC)',
  create: 'Create key',
  prefix: 'Prefix',
  lastUsed: 'Last used',
  expires: 'Expires',
  revoked: 'Revoked',
  revokeLink: 'Revoke …',
  createdTitle: 'API key created',
  created: {
    before: (name: string, role: string) => `The key “${name}” (${role}) was created. Copy it now: `,
    once: 'it is shown this one time only',
    after: ' and stored only as a hash.',
  },
  key: 'Key',
  back: 'Back to the API keys',
  revokeTitle: 'Revoke API key',
  revokeQuestion: {
    before: (name: string) => `Revoke the key “${name}” (`,
    after: ')? It stops working at once, and portal sessions signed in with it end.',
  },
  revoke: 'Revoke',
  cancel: 'Cancel',
  revokedFlash: 'API key revoked.',
};
