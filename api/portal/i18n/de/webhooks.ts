/** German: the webhooks, their deliveries and each delivery's attempts. */
import type { DeliveryRow } from '../../../webhooks/repo.ts';

export const webhooks = {
  title: 'Webhooks',
  newTitle: 'Neuer Webhook',
  url: 'URL (https)',
  events: 'Ereignisse',
  create: 'Webhook anlegen',
  none: 'Noch keine Webhooks: legen Sie oben den ersten an.',
  status: 'Status',
  deliveries: (n: number) => `Letzte Zustellungen (höchstens ${n}, neueste zuerst)`,
  noDeliveries: 'Noch keine Zustellung.',
  /** The webhook's `pending_deliveries`: its backlog. */
  pendingDeliveries: 'Ausstehende Zustellungen (weder zugestellt noch aufgegeben)',
  time: 'Angelegt',
  event: 'Ereignis',
  deliveryStatus: 'Zustellung',
  attempts: 'Versuche',
  lastError: 'Letzter Fehler',
  next: 'Nächster Versuch / zugestellt',
  showAttempts: 'Versuche ansehen',
  test: 'Test-Ereignis senden',
  testHint: 'Sendet nur diesem Webhook ein signiertes Ereignis webhook.test; die Zustellung erscheint hier.',
  testSent: 'Test-Ereignis eingereiht: die Zustellung steht unten beim Webhook (Seite neu laden für das Ergebnis).',
  testRefused: 'Dieser Webhook ist deaktiviert und sendet nichts mehr: löschen Sie ihn und legen Sie ihn neu an.',
  delete: 'Löschen …',
  deleteTitle: 'Webhook löschen',
  deleteQuestion: (url: string) =>
    `Den Webhook für ${url} mit seinen Zustellungen löschen? Es wird nichts mehr an ihn gesendet.`,
  deleteButton: 'Löschen',
  cancel: 'Abbrechen',
  deleted: 'Webhook gelöscht.',
  createdTitle: 'Webhook angelegt',
  /** The page after creating: the URL and the header's name stand between these parts. */
  created: {
    before: 'Der Webhook für',
    after: 'wurde angelegt. Kopieren Sie das Signatur-Geheimnis jetzt:',
    once: 'es wird nur dieses eine Mal angezeigt',
    header: '. Jede Zustellung trägt den Header',
    signature: ', ein HMAC-SHA256 mit diesem Geheimnis.',
  },
  secret: 'Signatur-Geheimnis',
  back: 'Zurück zu den Webhooks',
  /** The webhook's state in the API's terms: `disabled_at`, and what its deliveries say. */
  disabled: (at: string) =>
    `deaktiviert seit ${at}: Zustellungen schlugen 3 Tage lang fehl, es wird nichts mehr gesendet`,
  idle: 'aktiv, noch keine Zustellung',
  delivered: (at: string) => `aktiv, zuletzt zugestellt ${at}`,
  retrying: (attempts: number) =>
    `aktiv, Zustellung schlägt fehl: ${attempts} ${attempts === 1 ? 'Versuch' : 'Versuche'}, wird wiederholt`,
  failing: 'aktiv, letzte Zustellung endgültig fehlgeschlagen',
  pending: 'aktiv, Zustellung wartet',
  /** A delivery's `status` as the API names it. */
  deliveryLabel: {
    pending: 'wartet',
    delivered: 'zugestellt',
    failed: 'fehlgeschlagen',
  } satisfies Record<DeliveryRow['status'], string>,
  /** One delivery's page: its attempts, first first. */
  delivery: {
    title: (event: string) => `Zustellung ${event}`,
    webhook: 'Webhook',
    created: 'Angelegt',
    status: 'Status',
    nextAttempt: 'Nächster Versuch',
    deliveredAt: 'Zugestellt',
    attemptsTitle: 'Versuche (erster zuerst)',
    none: 'Noch kein Versuch: die Zustellung wartet auf ihren ersten.',
    attempt: 'Versuch',
    startedAt: 'Zeit',
    outcome: 'HTTP-Status oder Fehler',
    duration: 'Dauer',
    milliseconds: (ms: string) => `${ms} ms`,
    noAnswer: 'keine Antwort',
  },
};
