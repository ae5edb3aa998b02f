/**
 * The port through which the features below the catalog (devices, groups, org units) have
 * a write that can change devices' effective catalog state recorded: a move, a membership,
 * a deletion. The catalog implements it (`recordEffectiveChange` in api/catalog/) and the
 * app and the portal hand it in, so those features never import the catalog that imports
 * them (api/catalog/README.md, "Every change writes an event").
 */
import type { Db } from '../db/client.ts';
import type { Actor } from './declaration.ts';

/** The devices a write can reach: one device, a group's members, an org unit's subtree. */
export type Reach = { device: string } | { group: string } | { orgUnit: string };

export interface EffectiveStateChange {
  organizationId: string;
  reach: Reach;
  cause: 'move' | 'membership' | 'delete';
  /** The org unit moved to or moved, the group joined or left, the unit or group deleted. */
  sourceId: string;
  actor: Actor;
}

/**
 * Runs `write` inside the caller's transaction `tx` and writes a `selected` / `deselected`
 * event for each reached device and Merkmal whose effective state or `optionen` it changed.
 */
export type RecordEffectiveState = <T>(tx: Db, change: EffectiveStateChange, write: () => Promise<T>) => Promise<T>;
