/** English: enrollment sessions (create, devices used of the quota, expiry, revoke). */
import type { enrollment as german } from '../de/enrollment.ts';

export const enrollment: typeof german = {
  title: 'Enrollment sessions',
  intro: {
    before:
      'An enrollment session lets a limited number of devices activate with a template until it expires. Then build an installation ISO for the session under ',
    isoBuilds: 'ISO builds',
    after: '.',
  },
  new: 'New enrollment session',
  template: 'Template',
  maxDevices: 'Maximum devices',
  days: 'Valid for (days)',
  create: 'Create session',
  sessions: 'Sessions',
  none: 'No enrollment sessions yet: create the first one above.',
  session: 'Session (activation code)',
  devices: 'Devices',
  expires: 'Expires',
  status: 'Status',
  action: 'Action',
  used: (used: string, max: string) => `${used} of ${max}`,
  states: {
    revoked: 'revoked',
    expired: 'expired',
    exhausted: 'used up',
    active: 'active',
  },
  revoke: 'Revoke',
  created: 'Enrollment session created.',
  revokedFlash: 'Enrollment session revoked.',
};
