/** German: a device's hardware table and its Merkmal events (cause, actor, the agent's message). */

export const deviceDetails = {
  hardware: {
    vendorModel: 'Hersteller und Modell',
    dmiSerial: 'Seriennummer (Firmware)',
    board: 'Mainboard',
    bios: 'BIOS-Version',
    cpu: 'Prozessor',
    cores: (n: number) => `${n} ${n === 1 ? 'Kern' : 'Kerne'}`,
    memory: 'Arbeitsspeicher',
    disks: 'Datenträger',
    os: 'Betriebssystem',
    kernel: 'Kernel',
    hostname: 'Hostname (vom Gerät gemeldet)',
    agentVersion: 'Agent-Version (letzter Check-in)',
    reportedAt: 'Gemeldet am',
    raw: 'Rohdaten (JSON)',
    none: 'Noch keine Hardware gemeldet: der Agent meldet sie beim Bootstrap und Check-in.',
    unknown: 'unbekannt',
  },
  events: {
    time: 'Zeit',
    merkmal: 'Merkmal',
    event: 'Ereignis',
    cause: 'Ursache',
    actor: 'Wer',
    message: 'Meldung des Agenten',
    none: 'Noch keine Ereignisse.',
    /** A selection event's type; a report's reads as the agent's report (common.report). */
    types: { selected: 'ausgewählt', deselected: 'abgewählt' } as Record<string, string>,
    /** Why a selection event was written (`payload.cause`); a report's cause is the agent. */
    causes: {
      device: 'Vorgabe am Gerät',
      oe: 'Vorgabe der Organisationseinheit',
      gruppe: 'Vorgabe einer Gruppe',
      move: 'Gerät oder Einheit verschoben',
      delete: 'Einheit oder Gruppe gelöscht',
      membership: 'Gruppenmitgliedschaft geändert',
      rollout: 'Gestaffelter Rollout',
    } as Record<string, string>,
    reportCause: 'Bericht des Agenten',
    /** The unit or group a cause names. */
    source: (name: string) => `„${name}“`,
    unset: '(Vorgabe zurückgesetzt)',
    agent: 'Agent des Geräts',
    operator: 'Betreiber',
    system: 'System',
  },
};
