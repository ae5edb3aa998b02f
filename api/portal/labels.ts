/** Labels the portal's pages share, so a state reads the same on every page. */

/** A Merkmal's state: `present`, `absent`, or none (no override at that step). */
export const stateLabel = (s: string | null) =>
  s === 'present' ? 'vorhanden' : s === 'absent' ? 'nicht vorhanden' : '–';
