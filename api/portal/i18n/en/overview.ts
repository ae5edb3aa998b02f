/** English: the fleet overview at /portal. */
import type { overview as german } from '../de/overview.ts';

export const overview: typeof german = {
  title: 'Overview',
  devicesHeading: 'Devices',
  byStatus: 'Devices by status',
  total: 'devices (archived ones excluded)',
  catalogHeading: 'Catalog',
  catalogIntro:
    'Across the active and stale devices: how many should have a catalog item (present) or not, and how far that has been carried out – since the last change of their state.',
  catalogEmpty: 'The catalog is empty.',
  merkmal: 'Catalog item',
  present: 'present',
  absent: 'absent',
  figureLabel: (figure: string, label: string) => `${figure} ${label}`,
  merkmalFigureLabel: (name: string, figure: string, label: string) => `${name}: ${figure} ${label}`,
  diskEncryptionHeading: 'Disk encryption',
  isoBuilds: {
    heading: 'ISO builds in progress',
    created: 'Created',
    status: 'Status',
    progress: 'Progress',
    statuses: { pending: 'queued', running: 'running' },
    progressLabel: (percent: string) => `Progress ${percent}`,
    none: 'No ISO build in progress. Build an installation ISO under',
    all: 'ISO builds',
    more: (shown: string, total: string) => `${shown} of ${total} shown:`,
    allBuilds: 'all ISO builds',
  },
};
