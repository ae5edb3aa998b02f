/** German: the fleet overview at /portal. */
export const overview = {
  title: 'Übersicht',
  devicesHeading: 'Geräte',
  byStatus: 'Geräte nach Status',
  total: 'Geräte (ohne archivierte)',
  catalogHeading: 'Auftragskatalog',
  catalogIntro:
    'Über die aktiven und veralteten Geräte: wie viele ein Merkmal haben sollen (vorhanden) oder nicht, und wie weit das umgesetzt ist – seit der letzten Änderung ihres Zustands.',
  catalogEmpty: 'Der Auftragskatalog ist leer.',
  merkmal: 'Merkmal',
  present: 'vorhanden',
  absent: 'nicht vorhanden',
  /** A figure's link: `figure` devices with this status or convergence (of this Merkmal). */
  figureLabel: (figure: string, label: string) => `${figure} ${label}`,
  merkmalFigureLabel: (name: string, figure: string, label: string) => `${name}: ${figure} ${label}`,
  diskEncryptionHeading: 'Festplattenverschlüsselung',
  isoBuilds: {
    heading: 'ISO-Builds in Arbeit',
    created: 'Angelegt',
    status: 'Status',
    progress: 'Fortschritt',
    statuses: { pending: 'wartet', running: 'läuft' },
    progressLabel: (percent: string) => `Fortschritt ${percent}`,
    /** None in progress: where to start one. */
    none: 'Kein ISO-Build in Arbeit. Ein Installations-ISO erzeugen Sie unter',
    all: 'ISO-Builds',
    /** Fewer shown than are in progress. */
    more: (shown: string, total: string) => `${shown} von ${total} gezeigt:`,
    allBuilds: 'alle ISO-Builds',
  },
};
