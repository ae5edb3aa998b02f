/** English: a device's hardware table and its catalog item events (cause, actor, the agent's message). */
import type { deviceDetails as reference } from '../de/device_details.ts';

// Typed by the German section itself (not `Catalog['deviceDetails']`), so this file does not import the catalog that imports it.
export const deviceDetails: typeof reference = {
  hardware: {
    vendorModel: 'Vendor and model',
    dmiSerial: 'Serial number (firmware)',
    board: 'Mainboard',
    bios: 'BIOS version',
    cpu: 'Processor',
    cores: (n: number) => `${n} ${n === 1 ? 'core' : 'cores'}`,
    memory: 'Memory',
    disks: 'Disks',
    os: 'Operating system',
    kernel: 'Kernel',
    hostname: 'Hostname (reported by the device)',
    agentVersion: 'Agent version (last check-in)',
    reportedAt: 'Reported at',
    raw: 'Raw data (JSON)',
    none: 'No hardware reported yet: the agent reports it at bootstrap and check-in.',
    unknown: 'unknown',
  },
  events: {
    time: 'Time',
    merkmal: 'Catalog item',
    event: 'Event',
    cause: 'Cause',
    actor: 'By',
    message: "Agent's message",
    none: 'No events yet.',
    types: { selected: 'selected', deselected: 'deselected' },
    causes: {
      device: 'Override at the device',
      oe: "Org unit's override",
      gruppe: "A group's override",
      move: 'Device or unit moved',
      delete: 'Unit or group deleted',
      membership: 'Group membership changed',
      rollout: 'Staged rollout',
    },
    reportCause: "Agent's report",
    source: (name: string) => `“${name}”`,
    unset: '(override unset)',
    agent: "Device's agent",
    operator: 'Operator',
    system: 'System',
  },
};
