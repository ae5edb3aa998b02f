/** German: the ISO builds page and its table. */
import type { IsoBuildRow } from '../../../iso_builds/repo.ts';

export const isoBuilds = {
  title: 'ISO-Builds',
  newTitle: 'Neues ISO erzeugen',
  for: 'Für',
  sessionOption: (id: string, template: string, used: string, max: string) =>
    `Enrollment-Session ${id} (${template}, ${used}/${max})`,
  templateOption: (name: string) => `Template ${name} (Aktivierungscode der Organisation)`,
  wlan: 'WLAN (optional)',
  ssid: 'Netzwerkname (SSID)',
  psk: 'WLAN-Passwort',
  submit: 'ISO erzeugen',
  started: 'ISO-Build gestartet.',
  builds: 'Builds',
  refreshing: 'Diese Seite aktualisiert sich alle 2 Sekunden, bis alle Builds fertig sind.',
  noneAdmin: 'Noch keine ISO-Builds: erzeugen Sie oben das erste Installations-ISO.',
  noneViewer: 'Noch keine ISO-Builds.',
  /** The table. */
  created: 'Angelegt',
  source: 'Quelle',
  progress: 'Fortschritt',
  status: 'Status',
  size: 'Größe',
  sha256: 'SHA-256',
  expires: 'Läuft ab',
  download: 'Download',
  downloadLink: 'ISO herunterladen',
  downloadDev: 'Test-ISO herunterladen (bootet nicht)',
  viewerNoDownload: 'nur für Admins',
  session: 'Enrollment-Session',
  code: 'Aktivierungscode der Organisation',
  template: (name: string) => `Template ${name}`,
  defaultTemplate: 'Standard-Template',
  development:
    'Entwicklungs-Image: gebaut aus dem Entwicklungs-Basis-Image, NICHT bootfähig. Auf dem Build-Host fehlt ISO_BASE_IMAGE.',
  replaces:
    'Ein neuer fertiger Build ersetzt den vorigen fertigen (Datei und Eintrag); ein fertiger Build bleibt 7 Tage abrufbar.',
  percent: (p: string) => `${p} %`,
  progressLabel: (p: string) => `Fortschritt ${p} %`,
  statuses: {
    pending: 'wartet',
    running: 'läuft',
    completed: 'fertig',
    failed: 'fehlgeschlagen',
  } satisfies Record<IsoBuildRow['status'], string>,
};
