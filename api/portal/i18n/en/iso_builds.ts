/** English: the ISO builds page and its table. */
import type { isoBuilds as german } from '../de/iso_builds.ts';

export const isoBuilds: typeof german = {
  title: 'ISO builds',
  newTitle: 'Build a new ISO',
  for: 'For',
  sessionOption: (id: string, template: string, used: string, max: string) =>
    `Enrollment session ${id} (${template}, ${used}/${max})`,
  templateOption: (name: string) => `Template ${name} (the organization’s activation code)`,
  wlan: 'Wi-Fi (optional)',
  ssid: 'Network name (SSID)',
  psk: 'Wi-Fi password',
  submit: 'Build ISO',
  started: 'ISO build started.',
  builds: 'Builds',
  refreshing: 'This page refreshes every 2 seconds until all builds are done.',
  noneAdmin: 'No ISO builds yet: build the first installer ISO above.',
  noneViewer: 'No ISO builds yet.',
  created: 'Created',
  source: 'Source',
  progress: 'Progress',
  status: 'Status',
  size: 'Size',
  sha256: 'SHA-256',
  expires: 'Expires',
  download: 'Download',
  downloadLink: 'Download ISO',
  downloadDev: 'Download test ISO (does not boot)',
  viewerNoDownload: 'admins only',
  session: 'Enrollment session',
  code: 'The organization’s activation code',
  template: (name: string) => `Template ${name}`,
  defaultTemplate: 'Default template',
  development:
    'Development image: built from the development base image, NOT bootable. ISO_BASE_IMAGE is missing on the build host.',
  replaces:
    'A new completed build replaces the previous completed one (file and entry); a completed build can be downloaded for 7 days.',
  percent: (p: string) => `${p}%`,
  progressLabel: (p: string) => `Progress ${p}%`,
  statuses: {
    pending: 'waiting',
    running: 'running',
    completed: 'done',
    failed: 'failed',
  },
};
