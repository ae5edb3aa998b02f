/** German: org units (tree, page) and groups (list, page, members). */
export const organization = {
  /** The domain's refusals in the portal's words, by the API's error code. */
  refusals: {
    protected_org_unit:
      'Die Organisationseinheit „Neue Geräte“ ist geschützt: Sie kann nicht umbenannt, verschoben oder gelöscht werden.',
    org_unit_not_empty:
      'Die Organisationseinheit ist nicht leer: Verschieben oder löschen Sie zuerst ihre Unter-Einheiten und Geräte. Nichts wurde geändert.',
    org_unit_cycle:
      'Eine Organisationseinheit kann nicht unter sich selbst oder eine ihrer Unter-Einheiten verschoben werden. Nichts wurde geändert.',
    name_taken:
      'Dieser Name ist hier schon vergeben (Groß- und Kleinschreibung zählen nicht): Wählen Sie einen anderen. Nichts wurde geändert.',
    organization_mismatch: 'Die übergeordnete Einheit gehört zu einer anderen Organisation.',
    device_archived: 'Ein archiviertes Gerät kann keiner Gruppe beitreten.',
  },
  /** Shared by both pages' forms and tables. */
  name: 'Name',
  newName: 'Neuer Name',
  create: 'Anlegen',
  edit: 'Bearbeiten …',
  action: 'Aktion',
  overrides: 'Vorgaben',
  rename: 'Umbenennen',
  delete: 'Löschen',
  deleteForGood: 'Endgültig löschen',
  units: {
    title: 'Organisationseinheiten',
    new: 'Neue Organisationseinheit',
    parent: 'Übergeordnete Einheit',
    topLevel: '– oberste Ebene –',
    unit: 'Organisationseinheit',
    devices: 'Geräte',
    /** After the name of the protected unit every organization has. */
    standard: ' (Standard)',
    pageTitle: (name: string) => `Organisationseinheit ${name}`,
    back: 'Zurück zu allen Organisationseinheiten',
    move: 'Verschieben',
    newParent: 'Neue übergeordnete Einheit',
    deleteHint: 'Nur eine Einheit ohne Unter-Einheiten und ohne Geräte kann gelöscht werden; ihre Vorgaben gehen mit.',
    created: 'Organisationseinheit angelegt.',
    renamed: 'Organisationseinheit umbenannt.',
    moved: 'Organisationseinheit verschoben.',
    deleted: 'Organisationseinheit gelöscht.',
  },
  groups: {
    title: 'Gruppen',
    new: 'Neue Gruppe',
    none: 'Noch keine Gruppen',
    noneAdmin: ': legen Sie oben die erste an.',
    noneViewer: ' (ein Admin der Organisation legt sie an).',
    group: 'Gruppe',
    members: 'Mitglieder',
    pageTitle: (name: string) => `Gruppe ${name}`,
    back: 'Zurück zu allen Gruppen',
    addDevice: 'Gerät hinzufügen (Seriennummer oder Geräte-ID)',
    add: 'Hinzufügen',
    noMembers: 'Noch keine Mitglieder: fügen Sie oben ein Gerät hinzu.',
    serial: 'Seriennummer',
    hostname: 'Hostname',
    remove: 'Entfernen',
    deleteHint: 'Die Mitgliedschaften und Vorgaben der Gruppe gehen mit.',
    noDevice: (given: string) => `Kein Gerät „${given}“ in Ihrer Organisation.`,
    created: 'Gruppe angelegt.',
    renamed: 'Gruppe umbenannt.',
    deleted: 'Gruppe gelöscht.',
    added: 'Gerät zur Gruppe hinzugefügt.',
    removed: 'Gerät aus der Gruppe entfernt.',
  },
};
